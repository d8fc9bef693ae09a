// `fsm-sync query "SQL" [--format table|json|csv]`: one read-only statement against the mirror.
import type { Command } from './command.js'
import { explainMirrorError, openMirror } from '../store/mirror-database.js'
import { formatQueryResult, runReadOnlyQuery } from '../store/read-only-query.js'

export const queryCommand: Command = {
  command: 'query <sql>',
  describe: 'Run one read-only SQL statement against the mirror',
  builder: (y) =>
    y
      .positional('sql', { type: 'string', describe: 'the statement, e.g. "SELECT count(*) FROM jobs"' })
      .option('format', { choices: ['table', 'json', 'csv'] as const, default: 'table' as const }),
  run: async (args, ctx) => {
    const db = ctx.config().db
    const mirror = await openMirror(db, { readonly: true })
    try {
      let result
      try {
        result = runReadOnlyQuery(mirror.sqlite, String(args.sql))
      } catch (err) {
        // A corrupt or truncated mirror: one line naming the file, the cause and the fix.
        throw explainMirrorError(db, err)
      }
      ctx.io.stdout.write(formatQueryResult(result, args.format as 'table' | 'json' | 'csv'))
      return 0
    } finally {
      await mirror.close()
    }
  },
}
