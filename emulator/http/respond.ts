// Writing answers. Every body has `success` (spec: Conventions 5); the `Date` header comes from the
// emulator's clock so a client that bookmarks "the time the walk began" sees emulated time.
import type { ServerResponse } from 'node:http'

export function sendJson(res: ServerResponse, status: number, body: unknown, nowMs: number, headers: Record<string, string> = {}): void {
  const payload = Buffer.isBuffer(body) ? body : typeof body === 'string' ? body : JSON.stringify(body)
  sendText(res, status, payload, nowMs, { 'content-type': 'application/json; charset=utf-8', ...headers })
}

// The `Date` header has one-second resolution: formatted once per second, not once per answer.
let dateSecond = Number.NaN
let dateText = ''

function httpDate(nowMs: number): string {
  const second = Math.floor(nowMs / 1000)
  if (second !== dateSecond) {
    dateText = new Date(second * 1000).toUTCString()
    dateSecond = second
  }
  return dateText
}

export function sendText(res: ServerResponse, status: number, text: string | Buffer, nowMs: number, headers: Record<string, string>): void {
  if (res.headersSent || res.destroyed) return
  res.writeHead(status, { date: httpDate(nowMs), 'content-length': String(Buffer.byteLength(text)), ...headers })
  res.end(text)
}

const OPEN = Buffer.from('{"success":true,"data":[')
const COMMA = Buffer.from(',')

/** A pre-serialised list body: rows are cached JSON bytes, concatenated rather than re-serialised. */
export function listJson(rows: readonly Buffer[], meta: unknown): Buffer {
  const parts: Buffer[] = [OPEN]
  rows.forEach((row, i) => {
    if (i > 0) parts.push(COMMA)
    parts.push(row)
  })
  parts.push(Buffer.from(`],"meta":${JSON.stringify(meta)}}`))
  return Buffer.concat(parts)
}
