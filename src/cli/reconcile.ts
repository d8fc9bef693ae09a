// `fsm-sync reconcile [--stream S]... [--json]`: marks records deleted upstream, guarded against mass marks.
import type { Command } from './command.js'
import { jsonOption, printResult } from './output.js'
import { exitCodeOf, formatResults, runsDocument } from './run-summary.js'
import { withApp } from './with-app.js'
import { streamOption } from './stream-option.js'
import { selectStreams } from '../../connectors/selection.js'
import { runReconciliations } from '../sync/sync-engine.js'

export const reconcileCommand: Command = {
  builder: (y) =>
    jsonOption(
      streamOption(y, 'reconcile', "stream to reconcile (repeatable); when omitted, the reconcilable ones among the config's streams"),
    ),
  run: (args, ctx) =>
    withApp(
      ctx,
      async (app, signal) => {
        const named = (args.stream as string[] | undefined) ?? []
        const selection = selectStreams(named.length > 0 ? named : app.config.streams)
        const results = await runReconciliations(app.syncContext({ signal }), selection)
        const code = exitCodeOf(results, named.length > 0 ? selection.notBuilt : [])
        printResult(args, ctx.io, runsDocument(results, selection.notBuilt, code), () => formatResults(results, selection.notBuilt))
        return code
      },
      // Reconciling a mirror that was never synced finds nothing to mark: refused (require-synced.ts).
      { requireSynced: true },
    ),
}
