// `fsm-sync trigger calendar-a|calendar-b|accounting [--json]`: one trigger, recorded in sync_runs.
import { syncCalendarFeed } from '../sync/calendar-feed.js'
import { pollCalendarStatus, type CalendarStatus } from '../sync/calendar-status.js'
import { formatTrigger, INTEGRATIONS, isIntegrationName, runTrigger, type TriggerResult } from '../sync/integration-triggers.js'
import type { RunResult } from '../sync/sync-context.js'
import { KEY_REJECTED } from '../sync/sync-engine.js'
import type { Command } from './command.js'
import { jsonDocument, jsonOption, wantsJson } from './output.js'
import { withApp } from './with-app.js'

/** What `--json` prints: the trigger's run and, for calendar-a, its status and the change feed read after it. */
interface TriggerDocument {
  ok: boolean
  trigger: Omit<TriggerResult, 'kind'> & { kind: 'trigger' }
  calendarStatus?: CalendarStatus
  changeFeed?: RunResult
}

export const triggerCommand: Command = {
  builder: (y) => jsonOption(y.positional('integration', { choices: INTEGRATIONS, describe: 'the integration to sync' })),
  run: (args, ctx) =>
    withApp(
      ctx,
      async (app, signal) => {
        const name = String(args.integration)
        if (!isIntegrationName(name)) throw new Error(`unknown integration ${name}; one of ${INTEGRATIONS.join(', ')}`)
        // Text goes out line by line as each step ends; --json prints one document at the end.
        const text = !wantsJson(args)
        const result = await runTrigger(app.syncContext({ signal }), app.client, name)
        const doc: TriggerDocument = { ok: result.outcome === 'success', trigger: { ...result, kind: 'trigger' } }
        if (text) (result.outcome === 'success' ? ctx.io.stdout : ctx.io.stderr).write(formatTrigger(result))
        // A rejected key would be rejected again by the status and the feed.
        if (name === 'calendar-a' && !result.notConnected && result.errorCode !== KEY_REJECTED) {
          const status = await pollCalendarStatus(app.mirror.sqlite, app.client, name, { signal, now: () => app.clock.now() })
          if (status !== undefined) {
            doc.calendarStatus = status
            if (text)
              ctx.io.stdout.write(
                `calendar-a status: ${status.connected === true ? 'connected' : 'not connected'}, last sync ${status.lastSyncAt ?? 'never'}\n`,
              )
          }
          // The change feed lists what the trigger pushed: read only after a trigger that ran.
          if (result.outcome === 'success') {
            const feed = await syncCalendarFeed(app.syncContext({ signal }), app.client)
            doc.changeFeed = feed
            if (text && feed.outcome === 'success')
              ctx.io.stdout.write(`calendar-a change feed: ${feed.rows} new change records stored in calendar_changes\n`)
            else if (text) ctx.io.stderr.write(`calendar-a change feed: ${feed.outcome}: ${feed.error ?? ''}\n`)
          }
        }
        if (!text) ctx.io.stdout.write(jsonDocument(doc))
        return result.outcome === 'success' ? 0 : 1
      },
      // A trigger on a mirror that was never synced is the wrong volume or the wrong file: refused.
      { requireSynced: true },
    ),
}
