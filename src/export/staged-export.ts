// The files of one export into `--out`, whatever it reads (one mirror: export-mirror.ts; several
// accounts: export-accounts.ts): the folder's lock, every file written in a work folder only the owner
// can enter and renamed into place with the mirror's mode, the files an earlier manifest listed and
// this export does not write again removed, and manifest.json written last.
import { chmodSync, lstatSync, mkdirSync, mkdtempSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs'
import path from 'node:path'
import type { SqlCell } from '../model/rows.js'
import type { ColumnSpec } from '../model/table-spec.js'
import { ExportBusyError, fileError, isSystemError, onFile, OutDirLock, removeLeftovers, WORK_PREFIX } from './out-dir.js'
import { duckdbType, ParquetWriters } from './parquet-writer.js'
import { csvWriter, jsonlWriter, type RowWriter } from './text-writers.js'
import { nullableWhenExported, typed, type Coercions, type Typed } from './values.js'
import type { ExportedTable, ExportFormat, ExportOptions } from './export-mirror.js'

export const MANIFEST_FILE = 'manifest.json'

const EXTENSIONS: Readonly<Record<ExportFormat, string>> = { parquet: 'parquet', csv: 'csv', jsonl: 'jsonl' }

/** One table's file while it is written: rows in, then `close` moves it into place and describes it. */
export interface TableFile {
  /** The row's cells, in the order of the columns the file was opened with. */
  row(cells: readonly SqlCell[]): void
  close(): Promise<ExportedTable>
}

export type OpenTable = (name: string, primaryKey: readonly string[], columns: readonly ColumnSpec[]) => Promise<TableFile>

/**
 * Runs `build` with the folder taken and a way to open table files (several may be open at once);
 * writes the manifest it returns once it returns, last.
 */
export async function stagedExport<M extends { tables: ExportedTable[] }>(
  options: ExportOptions,
  build: (open: OpenTable) => Promise<M>,
): Promise<M> {
  const mode = options.fileMode ?? 0o640
  const out = options.outDir
  // A folder it creates is closed to others (umask permitting); the files' own mode is set below.
  onFile('create the folder', out, () => mkdirSync(out, { recursive: true, mode: 0o750 }))
  const lock = OutDirLock.acquire(out, new Date(options.now).toISOString())
  let work: string | undefined
  let parquet: ParquetWriters | undefined
  try {
    removeLeftovers(out)
    // A manifest left by an earlier export into this folder would vouch for files being replaced; the
    // files it listed that this export does not write again are removed before the new manifest.
    const manifestFile = path.join(out, MANIFEST_FILE)
    const previous = previousFiles(manifestFile)
    onFile('remove the earlier', manifestFile, () => rmSync(manifestFile, { force: true }))
    // Every file (the manifest too) is written in a folder only the owner can enter (mkdtemp: 0700),
    // given its mode, then renamed into place: DuckDB creates its file with the umask's mode, and a
    // rename replaces whatever is at the target (a link too) instead of writing through it.
    const staged = onFile('create a work folder in', out, () => mkdtempSync(path.join(out, WORK_PREFIX)))
    work = staged
    parquet = options.format === 'parquet' ? await ParquetWriters.open() : undefined
    const writers = parquet
    const open: OpenTable = async (name, primaryKey, columns) => {
      const file = `${name}.${EXTENSIONS[options.format]}`
      const target = path.join(out, file)
      const partial = path.join(staged, file)
      const writer: RowWriter = await onFileAsync('write', target, async () =>
        writers !== undefined
          ? await writers.writer(partial, columns)
          : options.format === 'csv'
            ? csvWriter(partial, columns, mode)
            : jsonlWriter(partial, columns, mode),
      )
      const coerced: Coercions[] = columns.map(() => ({ count: 0 }))
      const kinds = columns.map((c) => c.kind)
      const values: Typed[] = new Array<Typed>(kinds.length)
      let rows = 0
      return {
        row: (cells) => {
          for (let i = 0; i < kinds.length; i++) values[i] = typed(kinds[i]!, cells[i] ?? null, coerced[i]!)
          try {
            writer.row(values)
          } catch (err) {
            // A write of the file's (ENOSPC); an error of the mirror's passes as it is.
            throw isSystemError(err) ? fileError(err, 'write', target) : err
          }
          rows++
        },
        close: async () => {
          await onFileAsync('write', target, () => writer.close())
          onFile('move into place', target, () => {
            chmodSync(partial, mode)
            renameSync(partial, target)
          })
          return {
            name,
            file,
            rows,
            nulledValues: coerced.reduce((n, c) => n + c.count, 0),
            nulledColumns: columns.flatMap((c, i) => {
              const { count, example } = coerced[i]!
              return count === 0 ? [] : [{ column: c.name, values: count, example: example ?? '' }]
            }),
            primaryKey,
            columns: columns.map((c) => ({ name: c.name, kind: c.kind, type: duckdbType(c.kind), nullable: nullableWhenExported(c) })),
          }
        },
      }
    }
    const manifest = await build(open)
    const files = new Set(manifest.tables.map((t) => t.file))
    for (const f of previous) if (!files.has(f)) onFile('remove', path.join(out, f), () => rmSync(path.join(out, f), { force: true }))
    const partial = path.join(staged, MANIFEST_FILE)
    onFile('write', manifestFile, () => {
      writeFileSync(partial, JSON.stringify(manifest, null, 2) + '\n', { mode, flag: 'wx' })
      chmodSync(partial, mode)
    })
    // The lock was taken over by another export (a race on a stale lock): its files may be mixed with these.
    if (!lock.held())
      throw new ExportBusyError(`another export took over ${out} while this one wrote; no manifest.json was written by this one`)
    onFile('move into place', manifestFile, () => renameSync(partial, manifestFile))
    return manifest
  } finally {
    parquet?.close()
    if (work !== undefined) rmSync(work, { recursive: true, force: true })
    lock.release()
  }
}

async function onFileAsync<T>(action: string, file: string, fn: () => Promise<T>): Promise<T> {
  try {
    return await fn()
  } catch (err) {
    throw fileError(err, action, file)
  }
}

/** The files the manifest of an earlier export lists (plain names in the folder only), or none. */
function previousFiles(manifestFile: string): string[] {
  try {
    // Only a file this command could have written: a link planted in its place is not read through.
    if (!lstatSync(manifestFile).isFile()) return []
    const m = JSON.parse(readFileSync(manifestFile, 'utf8')) as { tables?: { file?: unknown }[] }
    return (m.tables ?? [])
      .map((t) => t.file)
      .filter((f): f is string => typeof f === 'string' && f !== '' && path.basename(f) === f && !f.startsWith('.') && f !== MANIFEST_FILE)
  } catch {
    // None, or not a manifest this command wrote: nothing is known about the files beside it.
    return []
  }
}
