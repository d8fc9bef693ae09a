// The hard cap on open mirrors (src/daemon/mirror-slots.ts, docs/accounts.md "Memory and file
// descriptors"): twelve accounts under a cap of four all sync exact, before and after changes
// upstream, and answer readiness probes all at once, with never more than four mirrors open
// (counted by the slots and in /proc/self/fd).
import { expect, test } from 'vitest'
import { AccountSet } from '../../../src/daemon/account-set.js'
import { DESCRIPTORS_PER_OPEN_MIRROR } from '../../../src/daemon/descriptor-budget.js'
import { startCheckpointService } from '../../../src/store/sqlite/background-checkpoints.js'
import { accountsEnv, capturedLogger, compareAccount } from '../../support/accounts-env.js'
import { until } from '../../support/daemon-env.js'
import { emulatorEnv } from '../../support/emulator-env.js'
import { filesOpen } from '../../support/open-files.js'

const counts = { clients: 6, jobs: 5, visitsPerJob: 1, invoices: 3, customRecords: 0 }
const CAP = 4

/** This process's descriptors open on the mirrors' files under `dir` (not the folders, opened a moment for a sync). */
const filesOpenUnder = (dir: string): number => filesOpen((target) => target.startsWith(dir) && target.includes('/mirror.db'))

test('twelve accounts under a cap of four open mirrors sync exact, never more than four open, none waiting for ever', async () => {
  const emu = await emulatorEnv({ accounts: 12, counts })
  const env = accountsEnv(emu)
  // A short bound, so the changes below are swept within seconds.
  const { accounts } = env.load(emu.accounts, { sync: { maxSweepIntervalSeconds: 5 } })
  const { logger } = capturedLogger('warn')
  const checkpoints = startCheckpointService({ logger })
  const set = new AccountSet({ logger, checkpoints, maxOpenMirrors: CAP })
  let mostTaken = 0
  let mostFiles = 0
  let mostWaiting = 0
  // Accounts whose mirror the slots saw open or closed other than it was (they keep their own counts).
  const drifted = new Set<string>()
  let sampling = true
  const sample = () => {
    mostTaken = Math.max(mostTaken, set.slots.taken)
    mostWaiting = Math.max(mostWaiting, set.slots.waiting)
    mostFiles = Math.max(mostFiles, filesOpenUnder(env.dataDir))
    for (const id of set.slots.drift()) drifted.add(id)
    if (sampling) setTimeout(sample, 2)
  }
  sample()
  try {
    await set.open(accounts)
    set.start()
    const runtimes = [...set.runtimes.values()]
    expect(runtimes).toHaveLength(12)
    await Promise.all(runtimes.map((r) => r.firstSweep))
    // A change on every account, found by the sweeps that take their turns for a slot.
    for (const a of emu.accounts) await a.control('POST', '/mutate', { resource: 'clients', op: 'update', count: 1, emit: false })
    const changed = new Map<string, string>()
    for (const a of emu.accounts) {
      const rows = await a.control<{ id: string; updatedAt: string }[]>('GET', '/state/clients')
      changed.set(
        a.id,
        rows
          .map((r) => r.updatedAt)
          .sort()
          .at(-1)!,
      )
    }
    // Read through the slots, as a run would: the comparison itself keeps within the cap.
    const newest = (id: string) =>
      set.slots.hold(id, () =>
        Promise.resolve(set.runtimes.get(id)!.app.mirror.sqlite.prepare('SELECT max(updated_at) FROM clients').pluck().get() as string),
      )
    await until(
      'every change in its mirror',
      async () => (await Promise.all(emu.accounts.map(async (a) => (await newest(a.id)) >= changed.get(a.id)!))).every(Boolean),
      60_000,
    )
    // Readiness probes of every account at once (none answered yet): each opens in its slot.
    expect((await Promise.all(runtimes.map((r) => r.ready()))).map((a) => a.ready)).toEqual(runtimes.map(() => true))
    sampling = false
    for (const a of emu.accounts) {
      const comparison = await set.slots.hold(a.id, () => compareAccount(set.runtimes.get(a.id)!, a))
      expect(comparison.mismatches, a.id).toEqual([])
    }
    // Never more than the cap open, by the slots and by the files; the slots were full and works waited.
    expect(mostTaken).toBeLessThanOrEqual(CAP)
    expect(set.slots.highWater).toBeLessThanOrEqual(CAP)
    // Five a mirror, and a moment one more while a readiness probe syncs its -wal.
    expect(mostFiles).toBeLessThanOrEqual(CAP * (DESCRIPTORS_PER_OPEN_MIRROR + 1))
    expect([...drifted]).toEqual([])
    expect(mostWaiting).toBeGreaterThan(0)
    expect(set.slots.evicted).toBeGreaterThan(0)
    expect(runtimes.every((r) => r.sweeps?.failure === undefined)).toBe(true)
  } finally {
    sampling = false
    await set.stop()
    await checkpoints.stop()
    await emu.close()
  }
}, 120_000)
