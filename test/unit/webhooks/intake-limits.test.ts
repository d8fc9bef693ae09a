// The intake's bounds as data: the shared body budget (with its headroom for small bodies), the
// listener's deadlines, and the config schema's defaults kept equal to the code's.
import { describe, expect, test } from 'vitest'
import { ConfigSchema } from '../../../src/config/schema.js'
import { accountBodyBudget, BodyBudget, SMALL_BODY_BYTES } from '../../../src/webhooks/body-budget.js'
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

describe("an account's share of the process's body budget", () => {
  const last = (bodyBytes: number) => ({ bodyBytes, completes: true })
  const held = (bodyBytes: number) => ({ bodyBytes, completes: false })

  test('alone, an account may use the whole budget; beside others, half of it, and a flood on one leaves the other half to the rest', () => {
    const process = new BodyBudget(1000)
    let accounts = 1
    const north = accountBodyBudget(process, () => accounts)
    const south = accountBodyBudget(process, () => accounts)
    expect(north.limit).toBe(1000)
    expect(north.take(700, held(1000))).toBe(true)
    north.give(700)
    accounts = 2
    // Incomplete bodies fill three quarters of north's half; complete small ones the rest of it.
    expect(north.take(375, held(1000))).toBe(true)
    expect(north.take(1, held(1000))).toBe(false)
    expect(north.take(125, last(125))).toBe(true)
    expect(north.take(1, last(1))).toBe(false)
    expect(process.used).toBe(500)
    // South still has the other half; the process's own ceilings hold over both (three quarters
    // for incomplete bodies, the whole for the rest).
    expect(south.take(250, held(1000))).toBe(true)
    expect(south.take(1, held(1000))).toBe(false)
    expect(south.take(250, last(250))).toBe(true)
    expect(process.used).toBe(1000)
    expect(south.take(1, last(1))).toBe(false)
    // What is given back returns to both.
    north.give(500)
    expect([north.used, process.used]).toEqual([0, 500])
    expect(north.take(100, last(100))).toBe(true)
  })

  test("a refusal by the process's ceiling takes nothing from the account's", () => {
    const process = new BodyBudget(1000)
    const others = new BodyBudget(1000, process)
    const north = accountBodyBudget(process, () => 1)
    expect(others.take(1000, last(1000))).toBe(true)
    expect(north.take(10, last(10))).toBe(false)
    expect([north.used, process.used]).toEqual([0, 1000])
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
