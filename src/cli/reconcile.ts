// `fsm-sync reconcile [--stream S]...`: marks records deleted upstream, guarded against mass marks.
import type { Command } from './command.js'
import { exitCodeOf, formatResults } from './run-summary.js'
import { withApp } from './with-app.js'
import { streamOption } from './stream-option.js'
import { selectStreams } from '../../connectors/selection.js'
import { runReconciliations } from '../sync/sync-engine.js'

export const reconcileCommand: Command = {
  command: 'reconcile',
  describe: 'Find records deleted upstream (which lists never show) and mark them deleted',
  builder: (y) => streamOption(y, 'reconcile', 'stream to reconcile (repeatable); all when omitted'),
  run: (args, ctx) =>
    withApp(ctx, async (app, signal) => {
      const named = (args.stream as string[] | undefined) ?? []
      const selection = selectStreams(named.length > 0 ? named : app.config.streams)
      const results = await runReconciliations(app.syncContext({ signal }), selection)
      ctx.io.stdout.write(formatResults(results, selection.notBuilt))
      return exitCodeOf(results, named.length > 0 ? selection.notBuilt : [])
    }),
}
