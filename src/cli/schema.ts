// `fsm-sync schema [--stream S]... [--all] [--json]`: the account's data the mirror holds, every table
// and view, from the table declarations (and the mirror's custom objects, when the mirror file exists;
// it is never created); `--all` adds the daemon's own tables, and a table named with --stream is shown
// whatever it is. `--json` prints one document shaped like an Airbyte catalog, a JSON Schema (draft
// 2020-12) per table (src/catalog/json-schema.ts).
import type { Command } from './command.js'
import { readCatalog } from '../catalog/catalog.js'
import { catalogDocument } from '../catalog/json-schema.js'
import { schemaText } from '../catalog/render.js'
import { streamNames, streamOfTable, tablesOfStream } from '../catalog/streams.js'
import type { TableSpec } from '../model/table-spec.js'
import { explainMirrorError } from '../store/sqlite/mirror-database.js'
import { CommandError, jsonOption, printResult } from './output.js'

export const schemaCommand: Command = {
  builder: (y) =>
    jsonOption(y)
      .option('stream', {
        type: 'string',
        array: true,
        describe: 'only the tables of these streams (clients, jobs, objects, objects:<slug>, ...) or tables',
      })
      .option('all', {
        type: 'boolean',
        default: false,
        describe: "also the daemon's own tables (sync_runs, change_log, request_starts, kysely_migration, ...)",
      }),
  run: async (args, ctx) => {
    const db = ctx.config().db
    let catalog: TableSpec[]
    try {
      catalog = await readCatalog(db)
    } catch (err) {
      throw explainMirrorError(db, err)
    }
    const named = (args.stream as string[] | undefined) ?? []
    // The catalog of the account's data; the daemon's bookkeeping only when asked for.
    let tables = args.all === true ? catalog : catalog.filter((t) => t.role === 'data')
    if (named.length > 0) {
      const picked = new Set<string>()
      for (const name of named) {
        const found = tablesOfStream(catalog, name)
        if (found === undefined || found.length === 0) {
          const why =
            found === undefined
              ? `no such stream or table; streams: ${streamNames().join(', ')}, objects:<slug>; or a table name (\`fsm-sync schema\` lists them)`
              : `the mirror ${db} holds no view for it (custom objects appear after their first sync)`
          throw new CommandError(`--stream ${name}: ${why}`, 2)
        }
        for (const t of found) picked.add(t.name)
      }
      tables = catalog.filter((t) => picked.has(t.name))
    }
    // --json: a JSON Schema per table, in the shape of an Airbyte catalog.
    printResult(args, ctx.io, catalogDocument(tables, streamOfTable), () => schemaText(tables))
    return 0
  },
}
