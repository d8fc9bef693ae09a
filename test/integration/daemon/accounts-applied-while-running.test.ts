// A new accounts list applied to a running daemon (Daemon.applyAccounts, what the config watcher and
// SIGHUP call): the added account starts and syncs, the removed one stops with its mirror left on
// disk, a changed one restarts alone; the others keep their runtime, their runs and their owner.
import { existsSync } from 'node:fs'
import { expect, test } from 'vitest'
import { startDaemon } from '../../../src/daemon/daemon.js'
import type { AccountRuntime } from '../../../src/daemon/account-runtime.js'
import { AccountSet } from '../../../src/daemon/account-set.js'
import { startCheckpointService } from '../../../src/store/sqlite/background-checkpoints.js'
import { accountsEnv, capturedLogger, compareAccount } from '../../support/accounts-env.js'
import { until } from '../../support/daemon-env.js'
import { emulatorEnv } from '../../support/emulator-env.js'

const counts = { clients: 5, jobs: 4, visitsPerJob: 1, invoices: 2, customRecords: 0 }

const runs = (r: AccountRuntime) =>
  r.app.mirror.sqlite.prepare(`SELECT id, outcome, owner_id AS owner FROM sync_runs ORDER BY id`).all() as {
    id: number
    outcome: string
    owner: string
  }[]

test('applyAccounts adds one account and removes another while the others keep running, uninterrupted', async () => {
  const emu = await emulatorEnv({ accounts: 3, counts })
  const [a, b, c] = emu.accounts as [(typeof emu.accounts)[0], (typeof emu.accounts)[0], (typeof emu.accounts)[0]]
  const env = accountsEnv(emu)
  // A short bound: a freshly backfilled account rests a bound before its next sweeps.
  const top = { sync: { maxSweepIntervalSeconds: 5 } }
  const first = env.load([a, b], top)
  const { logger } = capturedLogger('warn')
  const daemon = await startDaemon(first.config, { logger, accounts: first.accounts, listed: true })
  try {
    await Promise.all([...daemon.accounts.values()].map((r) => r.firstSweep))
    const kept = daemon.accounts.get(a.id)!
    const removed = daemon.accounts.get(b.id)!
    const before = runs(kept)
    expect(before.length).toBeGreaterThan(0)

    // Two applies at once run one after the other: the second finds nothing left to do.
    const next = env.load([a, c], top).accounts
    const [diff, again] = await Promise.all([daemon.applyAccounts(next), daemon.applyAccounts(next)])
    expect(diff).toEqual({ added: [c.id], removed: [b.id], changed: [] })
    expect(again).toEqual({ added: [], removed: [], changed: [] })
    expect([...daemon.accounts.keys()].sort()).toEqual([a.id, c.id])

    // The removed account stopped cleanly; its mirror stays on disk.
    expect(removed.app.mirror.sqlite.open).toBe(false)
    expect(removed.stuck()).toBe(false)
    expect(existsSync(removed.app.mirror.path)).toBe(true)
    // The added one syncs its account.
    await daemon.accounts.get(c.id)!.firstSweep
    expect((await compareAccount(daemon.accounts.get(c.id)!, c)).mismatches).toEqual([])

    // The kept account was not touched: the same runtime, its sweeps still going under the same owner, no run interrupted.
    expect(daemon.accounts.get(a.id)).toBe(kept)
    expect(kept.sweeps?.failure).toBeUndefined()
    await until('a new sweep of the kept account', () => runs(kept).length > before.length + 2)
    const after = runs(kept)
    expect(after.slice(0, before.length).map((r) => r.id)).toEqual(before.map((r) => r.id))
    expect(new Set(after.map((r) => r.owner))).toEqual(new Set(before.map((r) => r.owner)))
    expect(after.filter((r) => r.outcome === 'interrupted')).toEqual([])

    // A changed account restarts alone.
    const addedRuntime = daemon.accounts.get(c.id)!
    expect(await daemon.applyAccounts(env.load([{ handle: a, rateLimit: 5000 }, c], top).accounts)).toEqual({
      added: [],
      removed: [],
      changed: [a.id],
    })
    expect(daemon.accounts.get(a.id)).not.toBe(kept)
    expect(daemon.accounts.get(a.id)!.app.config.rateLimit).toBe(5000)
    expect(kept.app.mirror.sqlite.open).toBe(false)
    expect(daemon.accounts.get(c.id)).toBe(addedRuntime)
    expect(runs(addedRuntime).filter((r) => r.outcome === 'interrupted')).toEqual([])
  } finally {
    await daemon.stop()
  }
}, 120_000)

test('opening and starting many accounts leaves the event loop turns between them (timers and HTTP keep running)', async () => {
  const emu = await emulatorEnv({ accounts: 8, counts })
  const { accounts } = accountsEnv(emu).load(emu.accounts)
  const { logger } = capturedLogger('warn')
  const checkpoints = startCheckpointService({ logger })
  const set = new AccountSet({ logger, checkpoints })
  // A turn of the event loop counted while the accounts open (what a lease heartbeat's timer needs).
  let turns = 0
  let counting = true
  const count = () => {
    turns++
    if (counting) setImmediate(count)
  }
  setImmediate(count)
  try {
    await set.open(accounts)
    const opening = turns
    expect(set.runtimes.size).toBe(8)
    // Every open is followed by a turn: the opens do not hold the loop together.
    expect(opening).toBeGreaterThanOrEqual(8 / 4)
    set.start()
    // One starts now, the others each after a turn.
    expect([...set.runtimes.values()].filter((r) => r.scheduler.active).length).toBe(1)
    await until('every account started', () => [...set.runtimes.values()].every((r) => r.scheduler.active))
    expect(turns).toBeGreaterThanOrEqual(opening + 7)
  } finally {
    counting = false
    await set.stop()
    await checkpoints.stop()
    await emu.close()
  }
})

test('a replica adopts a few accounts at once: their restores run side by side, and one removed meanwhile waits for its open', async () => {
  const emu = await emulatorEnv({ accounts: 6, counts })
  const { accounts } = accountsEnv(emu).load(emu.accounts)
  const { logger } = capturedLogger('warn')
  const checkpoints = startCheckpointService({ logger })
  const set = new AccountSet({ logger, checkpoints })
  // Each restore waits until released: how many are under way at once shows the concurrency.
  const waiting: (() => void)[] = []
  let most = 0
  let now = 0
  const lease = {
    priorStarts: [],
    onStart: () => undefined,
    permit: () => true,
    fence: () => Promise.resolve(),
    restore: async () => {
      most = Math.max(most, ++now)
      await new Promise<void>((resolve) => waiting.push(resolve))
      now--
      return false
    },
  }
  try {
    set.start()
    const adopted = accounts.map((a) => set.adopt(a, { lease }))
    await until('four restores under way', () => waiting.length === 4)
    const removed = set.remove(accounts[0]!.id)
    let removedYet = false
    void removed.then(() => (removedYet = true))
    await new Promise((r) => setTimeout(r, 50))
    // The fifth waits for a turn, and the removal for the open it stops.
    expect([waiting.length, most, removedYet]).toEqual([4, 4, false])
    // Released one by one, the later ones as their restores begin.
    let all = false
    void Promise.all(adopted).then(() => (all = true))
    while (!all) {
      waiting.shift()?.()
      await new Promise((r) => setTimeout(r, 10))
    }
    expect(await removed).toBe(true)
    expect(most).toBe(4)
    expect([...set.runtimes.keys()].sort()).toEqual(
      accounts
        .slice(1)
        .map((a) => a.id)
        .sort(),
    )
  } finally {
    await set.stop()
    await checkpoints.stop()
    await emu.close()
  }
}, 60_000)
