// /readyz over many accounts (docs/accounts.md, Readiness): it answers from each account's last
// probe, never waits for a mirror's slot nor opens a parked mirror, and a fault found by the
// background refresh (a full mirror) shows in the next answer.
import { expect, test } from 'vitest'
import { PROBE_FRESH_MS } from '../../../src/daemon/account-readiness.js'
import { AccountSet } from '../../../src/daemon/account-set.js'
import { startCheckpointService } from '../../../src/store/sqlite/background-checkpoints.js'
import { accountsEnv, capturedLogger } from '../../support/accounts-env.js'
import { until } from '../../support/daemon-env.js'
import { emulatorEnv } from '../../support/emulator-env.js'

const counts = { clients: 4, jobs: 3, visitsPerJob: 1, invoices: 2, customRecords: 0 }

test('readiness of five accounts under a cap of one open mirror answers while the slot is held, opens no parked mirror, and shows a full mirror', async () => {
  const emu = await emulatorEnv({ accounts: 5, counts })
  const env = accountsEnv(emu)
  const { accounts } = env.load(emu.accounts)
  const { logger } = capturedLogger('error')
  const checkpoints = startCheckpointService({ logger })
  const set = new AccountSet({ logger, checkpoints, maxOpenMirrors: 1 })
  let release: () => void = () => undefined
  const gate = new Promise<void>((r) => (release = r))
  let held: Promise<void> | undefined
  try {
    await set.open(accounts)
    set.start()
    const runtimes = [...set.runtimes.values()]
    await Promise.all(runtimes.map((r) => r.firstSweep))
    const [first, ...others] = runtimes as [(typeof runtimes)[number], ...typeof runtimes]
    // The one slot held by a work of the first account, which fills its mirror meanwhile.
    let granted = false
    held = set.slots.hold(first.id, async () => {
      granted = true
      const sqlite = first.app.mirror.sqlite
      sqlite.pragma(`max_page_count = ${sqlite.pragma('page_count', { simple: true }) as number}`)
      await gate
      sqlite.pragma('max_page_count = 4294967294')
    })
    await until('the slot held', () => granted, 60_000)
    await until('the other mirrors parked', () => others.every((r) => !r.activity().open), 60_000)

    // Every account answers, though the only slot is taken and four mirrors are parked.
    const answer = await Promise.race([set.readiness(PROBE_FRESH_MS), new Promise<'waited'>((r) => setTimeout(() => r('waited'), 5_000))])
    expect(answer).not.toBe('waited')
    if (answer === 'waited') return
    for (const r of others) expect(answer[r.id]).toMatchObject({ state: 'running', ready: true })
    expect(others.every((r) => !r.activity().open)).toBe(true)

    // The background refresh probes the open mirror (its slot is the held one): full, hence not ready.
    await until('the full mirror not ready', async () => (await set.readiness(0))[first.id]?.ready === false, 30_000)
    expect((await set.readiness(0))[first.id]?.reason).toContain('the mirror is full')
    expect(others.every((r) => !r.activity().open)).toBe(true)
    release()
    await held
    await until('ready again', async () => (await set.readiness(0))[first.id]?.ready === true, 30_000)
  } finally {
    release()
    await held
    await set.stop()
    await checkpoints.stop()
    await emu.close()
  }
}, 120_000)
