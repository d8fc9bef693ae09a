// `fsm-sync trigger calendar-a|calendar-b|accounting`: one trigger, recorded in sync_runs.
import { pollCalendarStatus } from '../daemon/integration-status.js'
import { formatTrigger, INTEGRATIONS, isIntegrationName, runTrigger } from '../daemon/integration-triggers.js'
import type { Command } from './command.js'
import { withRuntime } from './with-runtime.js'

export const triggerCommand: Command = {
  command: 'trigger <integration>',
  describe: "Call an integration's sync trigger and record the result",
  builder: (y) => y.positional('integration', { choices: INTEGRATIONS, describe: 'the integration to sync' }),
  run: (args, ctx) =>
    withRuntime(ctx, async (rt, signal) => {
      const name = String(args.integration)
      if (!isIntegrationName(name)) throw new Error(`unknown integration ${name}; one of ${INTEGRATIONS.join(', ')}`)
      const result = await runTrigger(rt.syncContext({ signal }), rt.client, name)
      ;(result.outcome === 'success' ? ctx.io.stdout : ctx.io.stderr).write(formatTrigger(result))
      if (name === 'calendar-a' && !result.notConnected) {
        const status = await pollCalendarStatus(rt.mirror.sqlite, rt.client, name, { signal })
        if (status !== undefined) ctx.io.stdout.write(`calendar-a status: ${status.connected === true ? 'connected' : 'not connected'}, last sync ${status.lastSyncAt ?? 'never'}\n`)
      }
      return result.outcome === 'success' ? 0 : 1
    }),
}
