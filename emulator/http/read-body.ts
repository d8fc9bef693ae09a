// Request bodies are JSON (spec: Conventions 1). A multipart or other non-JSON body on a v1 route
// is refused (spec: Jobs, "A multipart body is not accepted on the v1 route").
import type { IncomingMessage } from 'node:http'
import { badRequest, HttpError } from '../core/http-error.js'

const MAX_BYTES = 5 * 1024 * 1024

export async function readBody(req: IncomingMessage): Promise<unknown> {
  const chunks: Buffer[] = []
  let size = 0
  for await (const chunk of req) {
    const buf = chunk as Buffer
    size += buf.length
    if (size > MAX_BYTES) throw new HttpError(413, 'Request body too large')
    chunks.push(buf)
  }
  if (size === 0) return undefined
  const type = req.headers['content-type'] ?? ''
  if (!/^application\/([a-z.+-]*\+)?json\b/i.test(type)) throw badRequest('Request body must be JSON (Content-Type: application/json)')
  const text = Buffer.concat(chunks).toString('utf8')
  try {
    return JSON.parse(text) as unknown
  } catch {
    throw badRequest('Malformed JSON body')
  }
}
