// `fsm-sync query "SQL" [--format table|json|csv]`: one read-only statement against the mirror.
import type { Command } from './command.js'
import { openMirror } from '../store/mirror-database.js'
import { formatQueryResult, runReadOnlyQuery } from '../store/read-only-query.js'

export const queryCommand: Command = {
  command: 'query <sql>',
  describe: 'Run one read-only SQL statement against the mirror',
  builder: (y) =>
    y
      .positional('sql', { type: 'string', describe: 'the statement, e.g. "SELECT count(*) FROM jobs"' })
      .option('format', { choices: ['table', 'json', 'csv'] as const, default: 'table' as const }),
  run: async (args, ctx) => {
    const mirror = await openMirror(ctx.config().db, { readonly: true })
    try {
      const result = runReadOnlyQuery(mirror.sqlite, String(args.sql))
      ctx.io.stdout.write(formatQueryResult(result, args.format as 'table' | 'json' | 'csv'))
      return 0
    } finally {
      await mirror.close()
    }
  },
}
