// Delivery signatures (spec, Events, Delivery format 2-3): lowercase hex HMAC-SHA256 of the exact raw
// body keyed with the endpoint's secret, no timestamp, no version prefix. Verified over the bytes
// before any parsing, against every active secret (rotation), in constant time and without an early
// exit, so the time taken says nothing about which secret matched or how much of a guess was right.
import { createHmac, timingSafeEqual } from 'node:crypto'

const SIGNATURE = /^[0-9a-f]{64}$/

export interface ActiveSecret {
  secret: string
  /** Where the secret comes from, for logs and the inbox (`env#0`, `endpoint <id>`); never the secret. */
  label: string
}

export type Verification = { ok: true; label: string } | { ok: false; reason: 'missing' | 'malformed' | 'mismatch' | 'no-secret' }

export function sign(secret: string, body: Uint8Array): string {
  return createHmac('sha256', secret).update(body).digest('hex')
}

export function verifySignature(body: Uint8Array, header: string | string[] | undefined, secrets: readonly ActiveSecret[]): Verification {
  if (header === undefined || header === '') return { ok: false, reason: 'missing' }
  // A repeated header arrives as an array (or joined): never a valid signature.
  if (typeof header !== 'string' || !SIGNATURE.test(header)) return { ok: false, reason: 'malformed' }
  if (secrets.length === 0) return { ok: false, reason: 'no-secret' }
  const given = Buffer.from(header, 'hex')
  let matched: string | undefined
  for (const s of secrets) {
    const expected = createHmac('sha256', s.secret).update(body).digest()
    // Every secret is tried even after a match; the branch below only records the first label.
    const equal = timingSafeEqual(expected, given)
    if (equal && matched === undefined) matched = s.label
  }
  return matched === undefined ? { ok: false, reason: 'mismatch' } : { ok: true, label: matched }
}
