// Parquet through DuckDB's own engine (@duckdb/node-api ships it; nothing is downloaded at run time,
// and no DuckDB extension reads the mirror): each table's rows are appended to a typed DuckDB table
// created from its TableSpec, then `COPY ... TO 'file' (FORMAT parquet)` writes it and the table is
// dropped. The DuckDB database is a file in a temporary directory, so a table larger than memory
// spills to disk instead of being held whole.
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { DuckDBInstance, timestampTZValue, type DuckDBAppender, type DuckDBConnection } from '@duckdb/node-api'
import { quoteIdentifier, quoteText } from '../model/sql-names.js'
import type { ColumnKind, ColumnSpec } from '../model/table-spec.js'
import type { RowWriter } from './text-writers.js'
import type { Typed } from './values.js'

/** The DuckDB (and so Parquet) type of each column kind. */
export function duckdbType(kind: ColumnKind): string {
  switch (kind) {
    case 'text':
      return 'VARCHAR'
    case 'time':
      return 'TIMESTAMPTZ'
    case 'real':
      return 'DOUBLE'
    case 'integer':
      return 'BIGINT'
    case 'flag':
      return 'BOOLEAN'
    case 'json':
      return 'JSON'
    case 'bytes':
      return 'BLOB'
  }
}

function append(appender: DuckDBAppender, v: Typed): void {
  if (v === null) return appender.appendNull()
  switch (v.kind) {
    case 'text':
    case 'json':
      return appender.appendVarchar(v.value)
    case 'time':
      return appender.appendTimestampTZ(timestampTZValue(v.micros))
    case 'real':
      return appender.appendDouble(v.value)
    case 'integer':
      return appender.appendBigInt(v.value)
    case 'flag':
      return appender.appendBoolean(v.value)
    case 'bytes':
      return appender.appendBlob(v.value)
  }
}

/** One DuckDB database for a whole export; `writer` gives one Parquet file per table. */
export class ParquetWriters {
  private constructor(
    private readonly instance: DuckDBInstance,
    private readonly connection: DuckDBConnection,
    private readonly dir: string,
  ) {}

  static async open(): Promise<ParquetWriters> {
    const dir = mkdtempSync(path.join(tmpdir(), 'fsm-sync-export-'))
    try {
      const instance = await DuckDBInstance.create(path.join(dir, 'staging.duckdb'))
      const connection = await instance.connect()
      return new ParquetWriters(instance, connection, dir)
    } catch (err) {
      rmSync(dir, { recursive: true, force: true })
      throw err
    }
  }

  private tables = 0

  /** Several writers may be open at once (an export over several accounts), each on its own table. */
  async writer(file: string, columns: readonly ColumnSpec[]): Promise<RowWriter> {
    const table = `staging_${++this.tables}`
    await this.connection.run(`DROP TABLE IF EXISTS ${table}`)
    await this.connection.run(
      `CREATE TABLE ${table} (${columns.map((c) => `${quoteIdentifier(c.name)} ${duckdbType(c.kind)}`).join(', ')})`,
    )
    const appender = await this.connection.createAppender(table)
    return {
      row: (values) => {
        for (const v of values) append(appender, v)
        appender.endRow()
      },
      close: async () => {
        appender.closeSync()
        await this.connection.run(`COPY ${table} TO ${quoteText(file)} (FORMAT parquet)`)
        await this.connection.run(`DROP TABLE ${table}`)
      },
    }
  }

  close(): void {
    try {
      this.connection.closeSync()
      this.instance.closeSync()
    } finally {
      rmSync(this.dir, { recursive: true, force: true })
    }
  }
}
