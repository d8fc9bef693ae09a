// CSV (RFC 4180: a header line, CRLF between records, a field quoted when it holds a comma, a quote,
// CR or LF, quotes doubled) and JSON Lines (one object per line). Values come typed (values.ts):
// NULL is an empty CSV field and an empty string a quoted one (`""`), so a loader that reads empty
// fields as NULL keeps the two apart; times are canonical ISO-8601 UTC text; flags `true`/`false`;
// bytes base64; JSON columns their JSON text in CSV and the JSON value itself in JSONL.
import { closeSync, openSync, writeSync } from 'node:fs'
import type { ColumnSpec } from '../model/table-spec.js'
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

const NEEDS_QUOTES = /[",\r\n]/

export function csvField(text: string): string {
  return text === '' || NEEDS_QUOTES.test(text) ? `"${text.replace(/"/g, '""')}"` : text
}

function csvValue(v: Typed): string {
  if (v === null) return ''
  switch (v.kind) {
    case 'text':
    case 'time':
    case 'json':
      return csvField(v.value)
    case 'real':
    case 'integer':
    case 'flag':
      return String(v.value)
    case 'bytes':
      return csvField(v.value.toString('base64'))
  }
}

function jsonValue(v: Typed): string {
  if (v === null) return 'null'
  switch (v.kind) {
    case 'text':
    case 'time':
      return JSON.stringify(v.value)
    case 'real':
      // JSON has no NaN or Infinity; a STRICT REAL column holds neither, a view might.
      return Number.isFinite(v.value) ? String(v.value) : 'null'
    case 'integer':
    case 'flag':
      return String(v.value)
    case 'json':
      return v.value
    case 'bytes':
      return JSON.stringify(v.value.toString('base64'))
  }
}

export function csvWriter(path: string, columns: readonly ColumnSpec[], mode: number): RowWriter {
  const sink = new FileSink(path, mode)
  sink.write(columns.map((c) => csvField(c.name)).join(',') + '\r\n')
  return {
    row: (values) => sink.write(values.map(csvValue).join(',') + '\r\n'),
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
