// `fsm-sync query "SQL" [--param V]... [--format table|json|csv | --json]`: one read-only statement
// against the mirror. Rows are streamed from SQLite to stdout as they are read, so any result fits in
// constant memory. `--param` binds the statement's parameters: `name=value` binds `:name` (or `@name`,
// `$name`) when the statement has that parameter; any other value binds the next `?` in order.
import type { Command } from './command.js'
import { explainMirrorError, openMirror } from '../store/sqlite/mirror-database.js'
import { namedParameters, openReadOnlyQuery, type QueryParams } from '../store/sqlite/read-only-query.js'
import { formatRows, TABLE_MAX_WIDTH, TABLE_WIDTH_SAMPLE, type QueryFormat } from './query-format.js'
import { writeChunks } from './write-chunks.js'
import { CommandError, jsonOption, PartialResultError, wantsJson } from './output.js'
import { neverSyncedError, noMirrorError, readMirrorUse } from './require-synced.js'
import { existsSync } from 'node:fs'
import { count } from '../model/backfill-estimate.js'

const NAMED = /^([A-Za-z_][A-Za-z0-9_]*)=(.*)$/s

/**
 * A value as SQLite should see it. `text:VALUE` binds VALUE as text and `int:VALUE` as an integer,
 * whatever they look like; otherwise a plain decimal number (`42`, `-7`, `3.5`) is bound as a number
 * and anything else (`007`, `1e3`, an id, a date) as text. Against a table column SQLite converts
 * either to the column's type, so `seq > ?` and `id = ?` both work; a view's column computed by an
 * expression (every `obj_*` column is a json_extract) has no type to convert to, and the number 42
 * never equals the text '42' a JSON string holds: such a value needs `text:42`.
 */
export function paramValue(text: string): string | number {
  if (text.startsWith('text:')) return text.slice('text:'.length)
  if (text.startsWith('int:')) {
    const digits = text.slice('int:'.length)
    const n = Number(digits)
    if (!/^-?[0-9]+$/.test(digits) || !Number.isSafeInteger(n))
      throw new CommandError(
        `--param ${text}: int: takes a whole number in decimal digits between -${Number.MAX_SAFE_INTEGER} and ${Number.MAX_SAFE_INTEGER}; pass text:${digits} to bind it as text`,
        2,
      )
    return n
  }
  if (/^-?(0|[1-9][0-9]{0,14})(\.[0-9]+)?$/.test(text)) return Number(text)
  return text
}

export function queryParams(sql: string, values: readonly string[]): QueryParams {
  const names = namedParameters(sql)
  const positional: unknown[] = []
  const named: Record<string, unknown> = {}
  for (const v of values) {
    const m = v.match(NAMED)
    if (m !== null && names.has(m[1]!)) named[m[1]!] = paramValue(m[2]!)
    else positional.push(paramValue(v))
  }
  return { positional, named }
}

export const queryCommand: Command = {
  builder: (y) =>
    jsonOption(
      y
        .positional('sql', { type: 'string', describe: 'the statement, e.g. "SELECT count(*) FROM jobs WHERE client_id = ?"' })
        .option('param', {
          type: 'string',
          array: true,
          describe:
            'a value for the statement (repeatable): binds the next ? in order, or with name=VALUE the parameter :name; plain decimal numbers are bound as numbers, anything else as text; text:VALUE or int:VALUE binds VALUE as that type (text:42 to match a JSON string in an obj_* view)',
        })
        .option('format', {
          choices: ['table', 'json', 'csv'] as const,
          describe: `default table; json is one array, an object per line; table sets its column widths from the header and the first ${count(TABLE_WIDTH_SAMPLE)} rows (a later, wider value runs over its column) and cuts values past ${TABLE_MAX_WIDTH} characters`,
        }),
    ).check((argv) => {
      if (argv.json && argv.format !== undefined && argv.format !== 'json')
        throw new Error(`--json prints the rows as JSON; it cannot go with --format ${argv.format}`)
      return true
    }),
  run: async (args, ctx) => {
    const db = ctx.config().db
    if (!existsSync(db)) throw noMirrorError(db)
    const format: QueryFormat = wantsJson(args) ? 'json' : ((args.format as QueryFormat | undefined) ?? 'table')
    const sql = String(args.sql)
    const mirror = await openMirror(db, { readonly: true })
    const progress = { batches: 0 }
    try {
      const history = readMirrorUse(db, mirror.sqlite)
      if (!history.synced) throw neverSyncedError(db, history)
      const result = openReadOnlyQuery(mirror.sqlite, sql, queryParams(sql, (args.param as string[] | undefined) ?? []))
      await writeChunks(ctx.io.stdout, formatRows(result, format), progress)
      return 0
    } catch (err) {
      // Whoever read the output stopped (`| head`): what they wanted was written.
      if ((err as NodeJS.ErrnoException).code === 'EPIPE') return 0
      // A corrupt or truncated mirror (found while preparing, or while streaming the rows): one line
      // naming the file, the cause and the fix. Any other error (the statement's own) passes as is.
      const explained = explainMirrorError(db, err)
      if (format !== 'json' || progress.batches === 0) throw explained
      // Rows are already out as the start of the JSON array: it is closed after them, so stdout stays
      // one document, and the exit code and stderr say that it is incomplete (docs/commands.md, Output).
      await writeChunks(ctx.io.stdout, ['\n]\n'])
      throw new PartialResultError(
        `${explained.message} (the JSON array on stdout holds only the rows written before this error)`,
        explained instanceof CommandError ? explained.exitCode : 1,
      )
    } finally {
      await mirror.close()
    }
  },
}
