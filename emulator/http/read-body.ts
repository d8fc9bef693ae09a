// Request bodies are JSON (spec: Conventions 1). A multipart or other non-JSON body on a v1 route
// is refused (spec: Jobs, "A multipart body is not accepted on the v1 route"). The one multipart
// route (legacy job create, spec: Versioning 2) reads its body with readForm instead.
import type { IncomingMessage } from 'node:http'
import { badRequest, HttpError } from '../core/http-error.js'
import { boundaryOf, parseMultipart, type FormPart } from './multipart.js'

const MAX_BYTES = 5 * 1024 * 1024

async function readRaw(req: IncomingMessage): Promise<Buffer> {
  const chunks: Buffer[] = []
  let size = 0
  for await (const chunk of req) {
    const buf = chunk as Buffer
    size += buf.length
    if (size > MAX_BYTES) throw new HttpError(413, 'Request body too large')
    chunks.push(buf)
  }
  return Buffer.concat(chunks, size)
}

export async function readBody(req: IncomingMessage): Promise<unknown> {
  const raw = await readRaw(req)
  if (raw.length === 0) return undefined
  const type = req.headers['content-type'] ?? ''
  if (!/^application\/([a-z.+-]*\+)?json\b/i.test(type)) throw badRequest('Request body must be JSON (Content-Type: application/json)')
  try {
    return JSON.parse(raw.toString('utf8')) as unknown
  } catch {
    throw badRequest('Malformed JSON body')
  }
}

/** A multipart/form-data body as its parts; any other body (JSON included) is a 400 naming the form. */
export async function readForm(req: IncomingMessage, expected: string): Promise<FormPart[]> {
  const raw = await readRaw(req)
  const type = req.headers['content-type'] ?? ''
  if (!/^multipart\/form-data\b/i.test(type)) {
    throw badRequest(
      `This route takes multipart/form-data (${expected}), not ${type === '' ? 'a body without Content-Type' : type.split(';')[0]}`,
    )
  }
  if (raw.length === 0) throw badRequest(`Empty multipart body: expected ${expected}`)
  return parseMultipart(raw, boundaryOf(type))
}
