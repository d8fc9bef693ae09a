// multipart/form-data, as the legacy job create takes it (spec: Versioning 2, "the legacy job create
// takes multipart form data (`jobData` plus notes)"). A small, bounded parser over the whole body
// (already capped by read-body.ts): no streaming, no dependency. Any malformation is a 400.
import { badRequest } from '../core/http-error.js'

export interface FormPart {
  name: string
  filename: string | null
  contentType: string | null
  data: Buffer
}

const MAX_PARTS = 32
const MAX_HEADER_BYTES = 8 * 1024
const CRLF = Buffer.from('\r\n')
const HEADER_END = Buffer.from('\r\n\r\n')
// RFC 2046 bcharsnospace / bchars: 1-70 characters, not ending in a space.
const BOUNDARY = /^[0-9A-Za-z'()+_,./:=? -]{0,69}[0-9A-Za-z'()+_,./:=?-]$/

/** `; key=value` / `; key="value"` parameters of a header value (keys lower-cased). */
function params(value: string): Map<string, string> {
  const out = new Map<string, string>()
  for (const m of value.matchAll(/;\s*([A-Za-z0-9_*-]+)\s*=\s*(?:"((?:[^"\\]|\\.)*)"|([^;]*))/g)) {
    const raw = m[2] === undefined ? (m[3] ?? '').trim() : m[2].replace(/\\(.)/g, '$1')
    out.set(m[1]!.toLowerCase(), raw)
  }
  return out
}

/** The boundary of a `multipart/form-data` Content-Type; 400 when absent or not a valid boundary. */
export function boundaryOf(contentType: string): string {
  const b = params(contentType).get('boundary')
  if (b === undefined || b === '') throw badRequest('multipart/form-data needs a boundary parameter in Content-Type')
  if (!BOUNDARY.test(b))
    throw badRequest(`Invalid multipart boundary '${b.slice(0, 80)}': 1-70 characters from the RFC 2046 set, not ending in a space`)
  return b
}

function partHeaders(text: string): Omit<FormPart, 'data'> {
  let disposition: string | undefined
  let contentType: string | null = null
  for (const line of text.split('\r\n')) {
    if (line === '') continue
    const colon = line.indexOf(':')
    if (colon <= 0) throw badRequest(`Malformed multipart body: bad part header line '${line.slice(0, 80)}'`)
    const name = line.slice(0, colon).trim().toLowerCase()
    const value = line.slice(colon + 1).trim()
    if (name === 'content-disposition') disposition = value
    else if (name === 'content-type') contentType = value
  }
  if (disposition === undefined || !/^form-data\s*(;|$)/i.test(disposition))
    throw badRequest('Malformed multipart body: every part needs Content-Disposition: form-data')
  const p = params(disposition)
  const name = p.get('name')
  if (name === undefined || name === '') throw badRequest('Malformed multipart body: a part has no name in its Content-Disposition')
  return { name, filename: p.get('filename') ?? null, contentType }
}

/** The parts of a multipart body, in order. Preamble and epilogue are ignored (RFC 2046). */
export function parseMultipart(body: Buffer, boundary: string): FormPart[] {
  const delimiter = Buffer.from(`--${boundary}`)
  const next = Buffer.from(`\r\n--${boundary}`)
  let pos = body.indexOf(delimiter)
  if (pos === -1)
    throw badRequest(`Malformed multipart body: the boundary '${boundary}' declared in Content-Type does not occur in the body`)
  const parts: FormPart[] = []
  for (;;) {
    pos += delimiter.length
    if (body[pos] === 0x2d && body[pos + 1] === 0x2d) return parts // the close delimiter `--boundary--`
    while (body[pos] === 0x20 || body[pos] === 0x09) pos++ // transport padding
    if (!body.subarray(pos, pos + 2).equals(CRLF)) throw badRequest('Malformed multipart body: a boundary line must end with CRLF')
    pos += 2
    let headerText = ''
    let start: number
    if (body.subarray(pos, pos + 2).equals(CRLF)) start = pos + 2
    else {
      const end = body.indexOf(HEADER_END, pos)
      if (end === -1 || end - pos > MAX_HEADER_BYTES)
        throw badRequest('Malformed multipart body: a part header block does not end (CRLF CRLF)')
      headerText = body.subarray(pos, end).toString('utf8')
      start = end + 4
    }
    const stop = body.indexOf(next, start)
    if (stop === -1) throw badRequest(`Malformed multipart body: no closing boundary '--${boundary}--'`)
    parts.push({ ...partHeaders(headerText), data: body.subarray(start, stop) })
    if (parts.length > MAX_PARTS) throw badRequest(`Too many multipart parts (at most ${MAX_PARTS})`)
    pos = stop + 2
  }
}
