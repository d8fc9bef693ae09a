// /readyz over a daemon's accounts (docs/accounts.md, Readiness): each account's state and its own
// probe's answer, and whether the process as a whole is ready (it takes webhooks).
import { DEFAULT_ACCOUNT_ID } from '../config/index.js'
import type { ReadyAnswer } from './http-server.js'

/**
 * With many accounts, /readyz answers from each account's last probe when it is this young and
 * refreshes older ones in the background (PROBES_AT_ONCE at a time): a probe writes and syncs its
 * mirror, and a thousand of them per call would outlast any orchestrator's probe timeout.
 */
export const PROBE_FRESH_MS = 15_000
export const PROBES_AT_ONCE = 4

/** Where an account is: its mirror opening, running, kept apart after a failure, or stopping. */
export type AccountState = 'opening' | 'running' | 'failed' | 'stopping'

/** An account's part of /readyz: its state, and its own probe's answer while it runs. */
export interface AccountReadiness extends ReadyAnswer {
  state: AccountState
}

/**
 * /readyz over the accounts. Today's single account (`single`): its own answer, as before. With a
 * list: ready while at least one account is (the process takes its webhooks) or the list is empty;
 * each account's state and reason are under `accounts`.
 */
export function readyOverAccounts(byId: Record<string, AccountReadiness>, single: boolean): ReadyAnswer {
  const ids = Object.keys(byId)
  if (single && ids.length === 1 && byId[DEFAULT_ACCOUNT_ID] !== undefined) {
    const { state: _state, ...top } = byId[DEFAULT_ACCOUNT_ID]
    return { ...top, accounts: byId }
  }
  const notReady = ids.filter((id) => !byId[id]!.ready)
  if (ids.length === 0 || notReady.length < ids.length) return { ready: true, notReady, accounts: byId }
  const reasons = notReady.slice(0, 3).map((id) => `${id}: ${byId[id]!.reason ?? 'not ready'}`)
  const more = notReady.length > 3 ? `; and ${notReady.length - 3} more` : ''
  return { ready: false, reason: `no account is ready (${reasons.join('; ')}${more})`, notReady, accounts: byId }
}
