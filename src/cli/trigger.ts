// `fsm-sync trigger calendar-a|calendar-b|accounting`: one trigger, recorded in sync_runs.
import { syncCalendarFeed } from '../daemon/calendar-feed.js'
import { pollCalendarStatus } from '../daemon/integration-status.js'
import { formatTrigger, INTEGRATIONS, isIntegrationName, runTrigger } from '../daemon/integration-triggers.js'
import type { Command } from './command.js'
import { withApp } from './with-app.js'

export const triggerCommand: Command = {
  command: 'trigger <integration>',
  describe: "Call an integration's sync trigger and record the result",
  builder: (y) => y.positional('integration', { choices: INTEGRATIONS, describe: 'the integration to sync' }),
  run: (args, ctx) =>
    withApp(ctx, async (app, signal) => {
      const name = String(args.integration)
      if (!isIntegrationName(name)) throw new Error(`unknown integration ${name}; one of ${INTEGRATIONS.join(', ')}`)
      const result = await runTrigger(app.syncContext({ signal }), app.client, name)
      ;(result.outcome === 'success' ? ctx.io.stdout : ctx.io.stderr).write(formatTrigger(result))
      if (name === 'calendar-a' && !result.notConnected) {
        const status = await pollCalendarStatus(app.mirror.sqlite, app.client, name, { signal, now: () => app.clock.now() })
        if (status !== undefined)
          ctx.io.stdout.write(
            `calendar-a status: ${status.connected === true ? 'connected' : 'not connected'}, last sync ${status.lastSyncAt ?? 'never'}\n`,
          )
        // The change feed lists what the trigger pushed: read only after a trigger that ran.
        if (result.outcome === 'success') {
          const feed = await syncCalendarFeed(app.syncContext({ signal }), app.client)
          if (feed.outcome === 'success')
            ctx.io.stdout.write(`calendar-a change feed: ${feed.rows} new change records stored in calendar_changes\n`)
          else ctx.io.stderr.write(`calendar-a change feed: ${feed.outcome}: ${feed.error ?? ''}\n`)
        }
      }
      return result.outcome === 'success' ? 0 : 1
    }),
}
