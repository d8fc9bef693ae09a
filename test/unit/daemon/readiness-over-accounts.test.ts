// /readyz over a daemon's accounts (readyOverAccounts, src/daemon/account-readiness.ts): with a list, ready
// while any account is; today's single account answers as before; a failed account retries later each time.
import { expect, test } from 'vitest'
import { readyOverAccounts, type AccountReadiness } from '../../../src/daemon/account-readiness.js'
import { retryDelayMs, RETRY_MAX_MS } from '../../../src/daemon/account-set.js'

const running: AccountReadiness = { state: 'running', ready: true, migrations: 15, running: [], next: {}, off: [] }
const failed: AccountReadiness = { state: 'failed', ready: false, reason: 'cannot open or start: disk full; next try at ...' }
const unwritable: AccountReadiness = { state: 'running', ready: false, reason: 'the mirror is not writable' }

test('with a list: one failed account leaves the process ready, its state in the body', () => {
  expect(readyOverAccounts({ north: running, south: failed }, false)).toEqual({
    ready: true,
    notReady: ['south'],
    accounts: { north: running, south: failed },
  })
  expect(readyOverAccounts({}, false)).toEqual({ ready: true, notReady: [], accounts: {} })
})

test('with a list: no account ready is not ready, with the first reasons', () => {
  const answer = readyOverAccounts({ a: failed, b: unwritable, c: failed, d: failed }, false)
  expect(answer.ready).toBe(false)
  expect(answer.reason).toBe(`no account is ready (a: ${failed.reason}; b: the mirror is not writable; c: ${failed.reason}; and 1 more)`)
})

test("today's single account: its own answer at the top level, as before, and its entry under accounts", () => {
  const { state: _s, ...top } = unwritable
  expect(readyOverAccounts({ default: unwritable }, true)).toEqual({ ...top, accounts: { default: unwritable } })
  const { state: _r, ...ok } = running
  expect(readyOverAccounts({ default: running }, true)).toEqual({ ...ok, accounts: { default: running } })
})

test('a failed account is tried again after 5 s, then twice as long each time, at most 5 min apart', () => {
  expect([1, 2, 3, 4, 5, 6, 7, 8, 20].map(retryDelayMs)).toEqual([
    5_000,
    10_000,
    20_000,
    40_000,
    80_000,
    160_000,
    300_000,
    300_000,
    RETRY_MAX_MS,
  ])
})
