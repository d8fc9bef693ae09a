import { createHmac } from 'node:crypto'
import { describe, expect, test } from 'vitest'
import { sign, verifySignature } from '../../../src/webhooks/signature.js'

const A = { secret: 'whsec_a_0123456789', label: 'a' }
const B = { secret: 'whsec_b_0123456789', label: 'b' }
const body = Buffer.from('{"id":"x"}')

describe('verifySignature', () => {
  test('sign is the lowercase hex HMAC-SHA256 of the bytes (spec, Delivery format 2)', () => {
    expect(sign(A.secret, body)).toBe(createHmac('sha256', A.secret).update(body).digest('hex'))
    expect(sign(A.secret, body)).toMatch(/^[0-9a-f]{64}$/)
  })

  test('accepts a signature by any active secret and names which one', () => {
    expect(verifySignature(body, sign(A.secret, body), [A, B])).toEqual({ ok: true, label: 'a' })
    expect(verifySignature(body, sign(B.secret, body), [A, B])).toEqual({ ok: true, label: 'b' })
  })

  test.each([
    ['missing', undefined, 'missing'],
    ['empty', '', 'missing'],
    ['uppercase', sign(A.secret, body).toUpperCase(), 'malformed'],
    ['63 characters', sign(A.secret, body).slice(1), 'malformed'],
    ['65 characters', `${sign(A.secret, body)}0`, 'malformed'],
    ['prefixed', `sha256=${sign(A.secret, body)}`, 'malformed'],
    ['repeated header', [sign(A.secret, body), sign(A.secret, body)], 'malformed'],
    ['base64 of the digest', createHmac('sha256', A.secret).update(body).digest('base64'), 'malformed'],
    ['another secret', sign('whsec_other', body), 'mismatch'],
    ['another body', sign(A.secret, Buffer.from('{"id":"y"}')), 'mismatch'],
  ] as const)('refuses %s', (_name, header, reason) => {
    expect(verifySignature(body, header as string | string[] | undefined, [A, B])).toEqual({ ok: false, reason })
  })

  test('refuses everything when no secret is configured', () => {
    expect(verifySignature(body, sign(A.secret, body), [])).toEqual({ ok: false, reason: 'no-secret' })
  })

  test.each([
    ['non-ASCII text', Buffer.from('{"notes":"Zoë — 東京 🚐"}')],
    ['invalid UTF-8', Buffer.from([0x7b, 0x22, 0xff, 0xfe, 0x22, 0x7d])],
    ['pretty-printed JSON', Buffer.from('{\n  "b": 1,\n  "a": 2\n}\n')],
  ])('signs and verifies the bytes, not a decoding: %s', (_name, bytes) => {
    expect(verifySignature(bytes, sign(A.secret, bytes), [A])).toEqual({ ok: true, label: 'a' })
    const roundTrip = Buffer.from(bytes.toString('utf8'), 'utf8')
    if (!roundTrip.equals(bytes)) expect(verifySignature(roundTrip, sign(A.secret, bytes), [A]).ok).toBe(false)
  })

  test('a re-serialised body (key order, spacing) does not verify: verification must use the raw bytes', () => {
    const raw = Buffer.from('{"b":1, "a":2}')
    const reserialised = Buffer.from(JSON.stringify(JSON.parse(raw.toString())))
    expect(verifySignature(reserialised, sign(A.secret, raw), [A]).ok).toBe(false)
  })
})
