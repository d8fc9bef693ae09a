// `fsm-sync export --format parquet|csv|jsonl --out DIR [--tables a,b] [--after-seq N] [--consumer NAME]`:
// a consistent snapshot of the mirror as files a warehouse load job reads (src/export/export-mirror.ts),
// plus manifest.json. The mirror is opened read-only, so a running daemon keeps writing meanwhile; only
// `--consumer` writes, once the files are written: the consumer's acknowledged seq. `--all-accounts`:
// every account of the config file in one export, with account_id (src/export/export-accounts.ts).
import type { Args, Command, CommandContext } from './command.js'
import { mirrorCatalog } from '../catalog/catalog.js'
import {
  EXPORT_FORMATS,
  exportMirror,
  ExportPrunedError,
  ExportUsageError,
  MANIFEST_FILE,
  type ExportFormat,
  type ExportManifest,
} from '../export/export-mirror.js'
import { AccountExportError, exportAccounts, type AccountsExportManifest } from '../export/export-accounts.js'
import { ExportBusyError, ExportFileError } from '../export/out-dir.js'
import { ChangeLogConsumers, consumerNameProblem } from '../store/repositories/change-log-consumers.js'
import { explainMirrorError, openMirror } from '../store/sqlite/mirror-database.js'
import { systemClock } from '../model/clock.js'
import { CommandError, jsonOption, printResult } from './output.js'
import { requireSynced } from './require-synced.js'

export const exportCommand: Command = {
  builder: (y) =>
    jsonOption(y)
      .option('format', { choices: EXPORT_FORMATS, demandOption: true, describe: 'the file format, one file per table' })
      .option('out', {
        type: 'string',
        demandOption: true,
        describe: `the directory to write into (created if missing), with ${MANIFEST_FILE}`,
      })
      .option('tables', { type: 'string', describe: 'comma-separated tables (default: every data table; `fsm-sync schema` lists them)' })
      .option('after-seq', {
        type: 'string',
        describe: 'only the records changed after this change_log seq (the manifest of the last export holds its seq)',
      })
      .option('consumer', {
        type: 'string',
        describe:
          'a registered change_log consumer (fsm-sync consumers add NAME): --after-seq may not pass its position, and it is acknowledged at the snapshot seq once the files are written',
      })
      .option('all-accounts', {
        type: 'boolean',
        describe: 'every account of the config file in one export, each row with its account_id (full exports only)',
      })
      .check((argv) => {
        if (argv['all-accounts'] === true) {
          if (argv.account !== undefined) throw new Error('--all-accounts exports every account: give it or --account, not both')
          // Seqs are per mirror: one --after-seq cannot hold for every account, nor one consumer's position.
          for (const o of ['after-seq', 'consumer'])
            if (argv[o] !== undefined)
              throw new Error(`--all-accounts writes full exports only, not --${o}: export each account's changes with --account ID --${o}`)
        }
        const consumer = argv.consumer
        if (consumer !== undefined && consumerNameProblem(consumer) !== null)
          throw new Error(`--consumer ${consumer}: the name ${consumerNameProblem(consumer)}`)
        const after = argv['after-seq']
        if (after !== undefined && !/^\d+$/.test(after))
          throw new Error(`--after-seq ${after}: must be a change_log seq, a whole number ≥ 0`)
        if (Array.isArray(argv.tables))
          throw new Error('--tables: give it once, the tables separated by commas, e.g. --tables clients,jobs')
        if (argv.tables !== undefined && argv.tables.split(',').some((t) => t.trim() === ''))
          throw new Error(`--tables ${argv.tables}: name tables separated by commas, e.g. --tables clients,jobs`)
        return true
      }),
  run: async (args, ctx) => {
    if (args['all-accounts'] === true) return exportAll(args, ctx)
    const { db, dbMode } = ctx.config()
    const after = args['after-seq'] as string | undefined
    const out = args.out as string
    const tables = (args.tables as string | undefined)?.split(',').map((t) => t.trim())
    const consumer = args.consumer as string | undefined
    // A load job pointed at a mirror never synced (a wrong FSM_DB or volume) would replace the
    // warehouse's tables with empty files: refused, as reconcile is.
    await requireSynced(db)
    const mirror = await openMirror(db, { readonly: true })
    try {
      if (consumer !== undefined) {
        const c = new ChangeLogConsumers(mirror.sqlite).get(consumer)
        if (c === undefined)
          throw new CommandError(
            `--consumer ${consumer}: no consumer named ${consumer}; register it first (fsm-sync consumers add ${consumer})`,
            2,
          )
        // Changes after the consumer's position and up to --after-seq were never acknowledged: retention may prune them.
        if (after !== undefined && Number(after) > c.seq)
          throw new CommandError(
            `--after-seq ${after} is past consumer ${consumer}'s position (seq ${c.seq}): the changes in between were not acknowledged as loaded; export with --after-seq ${c.seq}`,
            2,
          )
      }
      // The catalog is read inside the export's snapshot (the custom objects' views are the mirror's).
      const manifest = await exportMirror(mirror.sqlite, (sqlite) => mirrorCatalog(sqlite), {
        format: args.format as ExportFormat,
        outDir: out,
        tables,
        afterSeq: after === undefined ? undefined : Number(after),
        now: systemClock.now(),
        fileMode: dbMode,
        // Progress for a debugging eye only: stdout lists every file once the export is done.
        onTable: (t) => ctx.logger().debug({ table: t.name, file: t.file, rows: t.rows }, 'table exported'),
      })
      if (consumer !== undefined) await acknowledge(db, dbMode, consumer, manifest.seq)
      warnNulled(ctx, manifest.tables)
      // --json: the manifest, as written to manifest.json.
      printResult(args, ctx.io, manifest, (m) => summary(m, out))
      return 0
    } catch (err) {
      if (err instanceof ExportUsageError) throw new CommandError(err.message, 2)
      if (err instanceof ExportPrunedError || err instanceof ExportFileError || err instanceof ExportBusyError)
        throw new CommandError(err.message, 1)
      throw explainMirrorError(db, err)
    } finally {
      await mirror.close()
    }
  },
}

/** `--all-accounts`: every account listed (or the one account, named `default`), each from its own mirror. */
async function exportAll(args: Args, ctx: CommandContext): Promise<number> {
  const loaded = ctx.accounts()
  const sources = loaded.accounts.map((a) => ({ id: a.id, db: a.config.db }))
  const out = args.out as string
  // A mirror never synced would make the load job drop that account's rows: the export is refused,
  // naming the account, before anything is written.
  for (const s of sources) {
    try {
      await requireSynced(s.db)
    } catch (err) {
      throw new CommandError(`account ${s.id}: ${(err as Error).message}`, err instanceof CommandError ? err.exitCode : 1)
    }
  }
  try {
    const manifest = await exportAccounts(sources, (sqlite) => mirrorCatalog(sqlite), {
      format: args.format as ExportFormat,
      outDir: out,
      tables: (args.tables as string | undefined)?.split(',').map((t) => t.trim()),
      now: systemClock.now(),
      fileMode: loaded.config.dbMode,
      onTable: (t) => ctx.logger().debug({ table: t.name, file: t.file, rows: t.rows }, 'table exported'),
    })
    warnNulled(ctx, manifest.tables)
    printResult(args, ctx.io, manifest, (m) => summaryAll(m, out))
    return 0
  } catch (err) {
    if (err instanceof ExportUsageError) throw new CommandError(err.message, 2)
    if (err instanceof ExportFileError || err instanceof ExportBusyError) throw new CommandError(err.message, 1)
    if (err instanceof AccountExportError)
      throw new CommandError(`account ${err.account.id}: ${explainMirrorError(err.account.db, err.cause).message}`, 1)
    throw err
  }
}

function warnNulled(ctx: CommandContext, tables: ExportManifest['tables']): void {
  for (const t of tables)
    for (const c of t.nulledColumns)
      ctx.io.stderr.write(
        `fsm-sync: ${t.name}.${c.column}: ${c.values} ${c.values === 1 ? 'value' : 'values'} did not fit the column's type and ${c.values === 1 ? 'was' : 'were'} written as NULL (e.g. ${c.example}); ${t.columns.some((k) => k.name === 'raw') ? "the row's raw column keeps them as received" : 'the mirror keeps them'}\n`,
      )
}

/** Records that the consumer has read up to the export's seq (the export's own connection is read-only). */
async function acknowledge(db: string, mode: number, consumer: string, seq: number): Promise<void> {
  const writer = await openMirror(db, { mode })
  try {
    if (!new ChangeLogConsumers(writer.sqlite).ack(consumer, seq, new Date(systemClock.now()).toISOString()))
      throw new CommandError(
        `--consumer ${consumer}: the consumer was removed during the export; the files are written, nothing was acknowledged`,
      )
  } finally {
    await writer.close()
  }
}

function summary(manifest: ExportManifest, out: string): string {
  const window = manifest.afterSeq === null ? '' : `, the changes after seq ${manifest.afterSeq}`
  return listing(manifest.tables, `${manifest.format}, at change_log seq ${manifest.seq}${window}, in ${out}`)
}

function summaryAll(manifest: AccountsExportManifest, out: string): string {
  const at = manifest.accounts.map((a) => `${a.id} at seq ${a.seq}`).join(', ')
  return listing(manifest.tables, `${manifest.format}, ${manifest.accounts.length} accounts (${at}), in ${out}`)
}

function listing(tables: ExportManifest['tables'], what: string): string {
  const rows = tables.reduce((n, t) => n + t.rows, 0)
  const width = Math.max(0, ...tables.map((t) => t.file.length))
  return (
    [
      `${tables.length} files, ${rows} rows, ${what}:`,
      ...tables.map((t) => `  ${t.file.padEnd(width)}  ${t.rows} ${t.rows === 1 ? 'row' : 'rows'}`),
      `  ${MANIFEST_FILE}`,
    ].join('\n') + '\n'
  )
}
