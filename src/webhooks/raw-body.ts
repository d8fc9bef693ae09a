// Reads a request body as bytes with a cap (issue 6: 1 MiB default, 413 whether or not
// Content-Length was sent). Past the cap nothing more is buffered: the caller answers 413 and
// closes the connection, so an endless body costs no memory.
import type { IncomingMessage } from 'node:http'

export type RawBody = { ok: true; body: Buffer } | { ok: false; reason: 'too-large' | 'aborted' }

export function readRawBody(req: IncomingMessage, maxBytes: number): Promise<RawBody> {
  const declared = req.headers['content-length']
  if (declared !== undefined && Number(declared) > maxBytes) return Promise.resolve({ ok: false, reason: 'too-large' })
  return new Promise((resolve) => {
    const chunks: Buffer[] = []
    let size = 0
    let done = false
    const finish = (result: RawBody): void => {
      if (done) return
      done = true
      req.off('data', onData)
      req.off('end', onEnd)
      req.off('error', onAbort)
      req.off('aborted', onAbort)
      resolve(result)
    }
    const onData = (chunk: Buffer): void => {
      size += chunk.length
      if (size > maxBytes) {
        chunks.length = 0
        // Stop reading; the caller answers 413 with `Connection: close`.
        req.pause()
        finish({ ok: false, reason: 'too-large' })
        return
      }
      chunks.push(chunk)
    }
    const onEnd = (): void => finish({ ok: true, body: chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, size) })
    const onAbort = (): void => finish({ ok: false, reason: 'aborted' })
    req.on('data', onData)
    req.on('end', onEnd)
    req.on('error', onAbort)
    req.on('aborted', onAbort)
  })
}
