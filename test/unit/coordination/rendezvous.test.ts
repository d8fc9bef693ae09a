import { describe, expect, test } from 'vitest'
import { assign, ownerOf, weight } from '../../../src/coordination/rendezvous.js'

const accounts = (n: number) => Array.from({ length: n }, (_, i) => `acct-${i}`)
const replicas = (n: number) => Array.from({ length: n }, (_, i) => `fsm-sync-${i}`)

function counts(owners: Map<string, string>): Map<string, number> {
  const c = new Map<string, number>()
  for (const r of owners.values()) c.set(r, (c.get(r) ?? 0) + 1)
  return c
}

function moved(a: Map<string, string>, b: Map<string, string>): string[] {
  return [...a.keys()].filter((k) => a.get(k) !== b.get(k))
}

describe('rendezvous assignment', () => {
  test.each([
    [60, 3],
    [1_000, 7],
    [300, 3],
  ])('%i accounts over %i replicas: each within 20 %% of an equal share', (n, r) => {
    const c = counts(assign(accounts(n), replicas(r)))
    expect(c.size).toBe(r)
    for (const [, k] of c) expect(Math.abs(k - n / r)).toBeLessThanOrEqual(0.2 * (n / r))
  })

  test('the same inputs give the same answer, whatever their order', () => {
    const a = assign(accounts(200), replicas(5))
    const b = assign(accounts(200).reverse(), replicas(5).reverse())
    expect([...b.entries()].sort()).toEqual([...a.entries()].sort())
    expect(weight('acct-1', 'fsm-sync-0')).toBe(weight('acct-1', 'fsm-sync-0'))
    // Pinned: a change of hash would move every account of every deployment on upgrade.
    expect(ownerOf('acct-1', replicas(3))).toBe(assign(['acct-1'], replicas(3)).get('acct-1'))
    // The first 48 bits of sha256("b\na"), computed outside the code (sha256sum).
    expect(weight('a', 'b')).toBe(0xc4a78e5bdf31)
  })

  test('a replica joining takes about 1/N of the accounts, all of them from the others', () => {
    const before = assign(accounts(1_000), replicas(3))
    const after = assign(accounts(1_000), replicas(4))
    const m = moved(before, after)
    for (const a of m) expect(after.get(a)).toBe('fsm-sync-3')
    expect(Math.abs(m.length - 250)).toBeLessThanOrEqual(50)
  })

  test('a replica leaving gives away only its own accounts, spread over the rest', () => {
    const before = assign(accounts(1_000), replicas(4))
    const after = assign(
      accounts(1_000),
      replicas(4).filter((r) => r !== 'fsm-sync-1'),
    )
    const m = moved(before, after)
    expect(m.length).toBe([...before.values()].filter((r) => r === 'fsm-sync-1').length)
    for (const a of m) expect(before.get(a)).toBe('fsm-sync-1')
    const c = counts(new Map(m.map((a) => [a, after.get(a)!])))
    expect(c.size).toBe(3)
  })

  test('a restarted replica gets its own accounts back', () => {
    const all = replicas(3)
    const before = assign(accounts(100), all)
    const during = assign(accounts(100), all.slice(1))
    expect(moved(before, during).length).toBeGreaterThan(0)
    expect(assign(accounts(100), all)).toEqual(before)
  })

  test('no live replica: nobody owns anything', () => {
    expect(assign(accounts(3), []).size).toBe(0)
    expect(ownerOf('a', [])).toBeUndefined()
  })
})
