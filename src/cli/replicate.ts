// `fsm-sync replicate [--json] [--reseed]`: brings the Postgres destination up to the mirror's newest
// change and exits; loads it from a snapshot first when it is new, behind what retention pruned, or
// asked to (--reseed).
import type { Command } from './command.js'
import { openMirror } from '../store/sqlite/mirror-database.js'
import { createPostgresDestination } from '../destination/index.js'
import { systemClock } from '../model/clock.js'
import { CommandError, jsonOption, printResult } from './output.js'
import { requireSynced } from './require-synced.js'

export const replicateCommand: Command = {
  builder: (y) =>
    jsonOption(y).option('reseed', { type: 'boolean', default: false, describe: 'load every table again from a snapshot of the mirror' }),
  run: async (args, ctx) => {
    const config = ctx.config()
    if (config.destination.postgres.url === undefined) {
      throw new CommandError(
        'no destination is configured: set FSM_POSTGRES_URL (or destination.postgres.url in the config file) to a postgres:// URL',
        2,
      )
    }
    // A mirror never synced (a wrong FSM_DB or volume) would load an empty replica: refused, as reconcile does.
    await requireSynced(config.db)
    const mirror = await openMirror(config.db, { mode: config.dbMode })
    const destination = createPostgresDestination(config, mirror, ctx.logger(), systemClock, { accountId: ctx.account().id })!
    try {
      const summary = await destination.catchUp({ reseed: args.reseed === true })
      const status = destination.status()
      const out = { schema: destination.schema, ...summary, lagChanges: status.lagChanges }
      printResult(
        args,
        ctx.io,
        out,
        () =>
          [
            summary.loaded === null ? undefined : `loaded from a snapshot (${summary.loaded}): ${summary.loadedRows} rows`,
            `applied ${summary.changesApplied} changes; ${summary.rowsWritten} rows written to schema ${destination.schema} in all`,
            `cursor: change ${summary.cursor}; ${status.lagChanges} behind; ${summary.durationMs} ms`,
          ]
            .filter((l) => l !== undefined)
            .join('\n') + '\n',
      )
      return 0
    } finally {
      await destination.close()
      await mirror.close()
    }
  },
}
