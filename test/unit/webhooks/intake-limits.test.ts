// The intake's bounds as data: the shared body budget (with its headroom for small bodies), the
// listener's deadlines, and the config schema's defaults kept equal to the code's.
import { describe, expect, test } from 'vitest'
import { ConfigSchema } from '../../../src/config/schema.js'
import { BodyBudget, SMALL_BODY_BYTES } from '../../../src/webhooks/body-budget.js'
import { INTAKE_LIMIT_DEFAULTS, intakeServerOptions } from '../../../src/webhooks/intake-limits.js'

describe('body budget', () => {
  const held = (bodyBytes: number) => ({ bodyBytes, completes: false })
  const last = (bodyBytes: number) => ({ bodyBytes, completes: true })

  test('incomplete bodies and large ones fill at most three quarters of it; the chunk completing a small body may use the rest', () => {
    const budget = new BodyBudget(1000 * 1024)
    const large = SMALL_BODY_BYTES + 1
    let admitted = 0
    while (budget.take(large, last(large))) admitted++
    // 750 KiB / (64 KiB + 1) = 11 large bodies; a 12th would pass the held ceiling.
    expect(admitted).toBe(11)
    // A chunk of a body still incomplete is refused past three quarters, even a small one.
    expect(budget.take(48 * 1024, held(SMALL_BODY_BYTES))).toBe(false)
    expect(budget.take(4096, last(4096))).toBe(true)
    expect(budget.take(budget.limit - budget.used, last(SMALL_BODY_BYTES))).toBe(true)
    expect(budget.take(1, last(1))).toBe(false)
  })

  test.each([
    { name: 'a body taking nothing when refused', take: [[900, 900]], then: [200, 200], expected: false, used: 900 },
    { name: 'a body that fits exactly', take: [[600, 600]], then: [400, 400], expected: true, used: 1000 },
  ])('$name', ({ take, then, expected, used }) => {
    const budget = new BodyBudget(1000)
    for (const [bytes, body] of take) expect(budget.take(bytes!, last(body!))).toBe(true)
    expect(budget.take(then[0]!, last(then[1]!))).toBe(expected)
    expect(budget.used).toBe(used)
  })

  test('bytes given back are taken again; never below zero', () => {
    const budget = new BodyBudget(1000)
    expect(budget.take(1000, last(1000))).toBe(true)
    budget.give(1000)
    budget.give(10)
    expect(budget.used).toBe(0)
    expect(budget.take(1000, last(1000))).toBe(true)
  })
})

describe('intake listener options', () => {
  test('headers within 10 s, a whole request within the body deadline plus 5 s, idle keep-alive above 60 s load balancers', () => {
    expect(intakeServerOptions({ bodyTimeoutMs: 10_000 })).toEqual({
      headersTimeout: 10_000,
      requestTimeout: 15_000,
      keepAliveTimeout: 65_000,
      connectionsCheckingInterval: 1_000,
    })
    // node:http refuses a headers timeout longer than the request timeout.
    expect(intakeServerOptions({ bodyTimeoutMs: 1_000 })).toMatchObject({ headersTimeout: 6_000, requestTimeout: 6_000 })
  })

  test('the config schema defaults to the same limits as the code', () => {
    const { maxConnections, bodyTimeoutMs, maxBufferedBytes } = ConfigSchema.parse({}).webhooks
    expect({ maxConnections, bodyTimeoutMs, maxBufferedBytes }).toEqual(INTAKE_LIMIT_DEFAULTS)
    expect(INTAKE_LIMIT_DEFAULTS.maxConnections).toBeGreaterThan(256)
  })
})
