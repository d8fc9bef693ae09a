// `fsm-sync sync [--stream S]... [--full]`: one incremental pass, a summary per stream.
import type { Command } from './command.js'
import { exitCodeOf, formatResults } from './run-summary.js'
import { withApp } from './with-app.js'
import { streamOption } from './stream-option.js'
import { selectStreams } from '../../connectors/selection.js'
import { runSweeps } from '../sync/sync-engine.js'

export const syncCommand: Command = {
  command: 'sync',
  describe: 'One incremental pass over the named streams (all by default), then exit',
  builder: (y) =>
    streamOption(y, 'sync', 'stream to sync (repeatable); all when omitted').option('full', {
      type: 'boolean',
      default: false,
      describe: 'ignore the stored cursors and walk everything',
    }),
  run: (args, ctx) =>
    withApp(ctx, async (app, signal) => {
      const named = (args.stream as string[] | undefined) ?? []
      const selection = selectStreams(named.length > 0 ? named : app.config.streams)
      const tty = (ctx.io.stderr as { isTTY?: boolean }).isTTY === true ? ctx.io.stderr : undefined
      const results = await runSweeps(app.syncContext({ progressTty: tty, signal }), selection, { full: args.full === true })
      ctx.io.stdout.write(formatResults(results, selection.notBuilt))
      return exitCodeOf(results, named.length > 0 ? selection.notBuilt : [])
    }),
}
