// Reads a request body as bytes, within three bounds:
// - a cap per body (1 MiB default, 413 whether or not Content-Length was sent): past it nothing
//   more is buffered, the caller answers 413 and closes the connection, so an endless body costs
//   no memory;
// - a budget shared by every request (BodyBudget), charged as bytes arrive: the chunk that would
//   pass it is refused (503) and the rest of its body never read. A Content-Length reserves
//   nothing (headers alone cost a client nothing to send), but it tells the chunk that completes
//   the body, and a large one picks the stricter ceiling from the first byte;
// - a deadline to receive the whole body, so a client trickling bytes cannot hold its share of the
//   budget (and its connection) for long.
// The bytes taken from the budget are given back when `heldUntil` (the response) closes: the body
// stays in memory until the delivery is stored and answered, not only while it is read.
import type { IncomingMessage } from 'node:http'
import type { BodyBudget } from './body-budget.js'

export type RawBody = { ok: true; body: Buffer } | { ok: false; reason: 'too-large' | 'aborted' | 'over-budget' | 'timeout' }

export interface RawBodyBounds {
  budget: BodyBudget
  /** The longest the whole body may take to arrive, from now. */
  deadlineMs: number
  /** Emits 'close' once the body is no longer held (the response, answered or aborted). */
  heldUntil: { once(event: 'close', listener: () => void): unknown }
}

export function readRawBody(req: IncomingMessage, maxBytes: number, bounds?: RawBodyBounds): Promise<RawBody> {
  const declaredHeader = req.headers['content-length']
  const declared = declaredHeader === undefined ? undefined : Number(declaredHeader)
  if (declared !== undefined && declared > maxBytes) return Promise.resolve({ ok: false, reason: 'too-large' })
  let taken = 0
  if (bounds !== undefined) bounds.heldUntil.once('close', () => bounds.budget.give(taken))
  return new Promise((resolve) => {
    const chunks: Buffer[] = []
    let size = 0
    let done = false
    // Real time, not the Clock: it bounds a client's socket I/O, which fake time must not cut short.
    const timer = bounds === undefined ? undefined : setTimeout(() => stop('timeout'), bounds.deadlineMs)
    const finish = (result: RawBody): void => {
      if (done) return
      done = true
      clearTimeout(timer)
      req.off('data', onData)
      req.off('end', onEnd)
      req.off('error', onAbort)
      req.off('aborted', onAbort)
      resolve(result)
    }
    // Stop reading; the caller answers with `Connection: close` and closes the connection.
    const stop = (reason: 'too-large' | 'over-budget' | 'timeout'): void => {
      chunks.length = 0
      req.pause()
      finish({ ok: false, reason })
    }
    const onData = (chunk: Buffer): void => {
      size += chunk.length
      if (size > maxBytes) return stop('too-large')
      if (bounds !== undefined) {
        const chunkInfo = { bodyBytes: Math.max(size, declared ?? 0), completes: declared !== undefined && size >= declared }
        if (!bounds.budget.take(chunk.length, chunkInfo)) return stop('over-budget')
        taken = size
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
