// `fsm-sync query "SQL" [--format table|json|csv]`: one read-only statement against the mirror.
// Rows are streamed from SQLite to stdout as they are read, so any result fits in constant memory.
import type { Command } from './command.js'
import { explainMirrorError, openMirror } from '../store/mirror-database.js'
import { openReadOnlyQuery } from '../store/read-only-query.js'
import { formatRows, TABLE_MAX_WIDTH, TABLE_WIDTH_SAMPLE, type QueryFormat } from '../store/query-format.js'
import { writeChunks } from './write-chunks.js'

export const queryCommand: Command = {
  command: 'query <sql>',
  describe: 'Run one read-only SQL statement against the mirror; rows stream out as they are read',
  builder: (y) =>
    y.positional('sql', { type: 'string', describe: 'the statement, e.g. "SELECT count(*) FROM jobs"' }).option('format', {
      choices: ['table', 'json', 'csv'] as const,
      default: 'table' as const,
      describe: `json is one array, an object per line; table sets its column widths from the header and the first ${TABLE_WIDTH_SAMPLE.toLocaleString('en-US')} rows (a later, wider value runs over its column) and cuts values past ${TABLE_MAX_WIDTH} characters`,
    }),
  run: async (args, ctx) => {
    const db = ctx.config().db
    const mirror = await openMirror(db, { readonly: true })
    try {
      const result = openReadOnlyQuery(mirror.sqlite, String(args.sql))
      await writeChunks(ctx.io.stdout, formatRows(result, args.format as QueryFormat))
      return 0
    } catch (err) {
      // Whoever read the output stopped (`| head`): what they wanted was written.
      if ((err as NodeJS.ErrnoException).code === 'EPIPE') return 0
      // A corrupt or truncated mirror (found while preparing, or while streaming the rows): one line
      // naming the file, the cause and the fix. Any other error (the statement's own) passes as is.
      throw explainMirrorError(db, err)
    } finally {
      await mirror.close()
    }
  },
}
