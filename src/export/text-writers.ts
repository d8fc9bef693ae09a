// The CSV and JSON Lines files of an export: a header line then one record per row, or one object
// per line. Values come typed (values.ts) and are written by the rule `fsm-sync query` follows too
// (encoding.ts).
import { closeSync, openSync, writeSync } from 'node:fs'
import type { ColumnSpec } from '../model/table-spec.js'
import { csvField, csvRecord, csvValue, jsonValue } from './encoding.js'
import type { Typed } from './values.js'

export interface RowWriter {
  row(values: readonly Typed[]): void
  close(): Promise<void>
}

/** Buffered synchronous appends to a new file: an export reads the mirror synchronously too. */
class FileSink {
  private readonly fd: number
  private chunks: string[] = []
  private size = 0

  constructor(path: string, mode: number) {
    this.fd = openSync(path, 'w', mode)
  }

  write(text: string): void {
    this.chunks.push(text)
    this.size += text.length
    if (this.size >= 1 << 16) this.flush()
  }

  flush(): void {
    if (this.chunks.length === 0) return
    writeSync(this.fd, this.chunks.join(''))
    this.chunks = []
    this.size = 0
  }

  close(): void {
    this.flush()
    closeSync(this.fd)
  }
}

export function csvWriter(path: string, columns: readonly ColumnSpec[], mode: number): RowWriter {
  const sink = new FileSink(path, mode)
  sink.write(csvRecord(columns.map((c) => csvField(c.name))))
  return {
    row: (values) => sink.write(csvRecord(values.map(csvValue))),
    close: () => Promise.resolve(sink.close()),
  }
}

export function jsonlWriter(path: string, columns: readonly ColumnSpec[], mode: number): RowWriter {
  const sink = new FileSink(path, mode)
  const keys = columns.map((c) => JSON.stringify(c.name) + ':')
  return {
    row: (values) => {
      let line = '{'
      for (let i = 0; i < keys.length; i++) line += (i === 0 ? '' : ',') + keys[i]! + jsonValue(values[i] ?? null)
      sink.write(line + '}\n')
    },
    close: () => Promise.resolve(sink.close()),
  }
}
