// The mirror of an idle account is closed (parked) and opens again on its next use
// (src/store/README.md, "Idle mirrors"): a sweep and a webhook delivery after a park sync exactly
// as before, the checkpoint thread takes the mirror back, and a park never lands in a run or a
// transaction.
import path from 'node:path'
import { Writable } from 'node:stream'
import { request } from 'undici'
import { expect, test } from 'vitest'
import { RECORD_STREAMS } from '../../../connectors/index.js'
import { loadConfig } from '../../../src/config/index.js'
import { startAccountRuntime, type AccountRuntime } from '../../../src/daemon/account-runtime.js'
import { startDaemon } from '../../../src/daemon/daemon.js'
import { IDLE_PARK_MS, PARKING_LOOK_MS } from '../../../src/daemon/mirror-parker.js'
import { createLogger } from '../../../src/log/logger.js'
import { startCheckpointService } from '../../../src/store/sqlite/background-checkpoints.js'
import { startIntakeServer } from '../../../src/webhooks/intake-server.js'
import { sign } from '../../../src/webhooks/signature.js'
import { compareMirror } from '../../support/compare-mirror.js'
import { until } from '../../support/daemon-env.js'
import { emulatorEnv } from '../../support/emulator-env.js'
import { FakeClock } from '../../support/fake-clock.js'
import { inProcessDaemonConfig } from '../../support/in-process-daemon.js'
import { tempDir } from '../../support/temp-mirror.js'
import { filesOpen } from '../../support/open-files.js'

const SECRET = 'whsec_idle_mirror_0123456789abcdef'
const counts = { clients: 3, jobs: 0, visitsPerJob: 0, invoices: 0, customRecords: 0 }
const logger = createLogger({ level: 'silent', destination: new Writable({ write: (_c, _e, cb) => cb() }) })

/** Parks the runtime's mirror once the checkpoint thread holds it (a park waits for that); false if it never could. */
async function park(runtime: AccountRuntime): Promise<boolean> {
  for (let i = 0; i < 200; i++) {
    if (await runtime.park()) return true
    if (runtime.activity().busy) return false
    await new Promise((r) => setTimeout(r, 20))
  }
  return false
}

/** This process's descriptors open on the mirror's files. */
const filesOpenOn = (file: string): number => filesOpen((target) => target.startsWith(file))

test('a parked mirror reopens and syncs on the next sweep and on a webhook; no park inside a run or a transaction', async () => {
  const emu = await emulatorEnv({ counts })
  const account = emu.accounts[0]!
  const clock = new FakeClock(Date.UTC(2025, 0, 1, 12, 3))
  const checkpoints = startCheckpointService({ logger })
  const config = inProcessDaemonConfig(emu, { streams: ['clients'], webhookSecrets: [SECRET] })
  const runtime: AccountRuntime = await startAccountRuntime(config, { logger, clock, checkpoints })
  const intake = await startIntakeServer(runtime.webhookHandler, { path: '/webhooks' })
  const sqlite = runtime.app.mirror.sqlite
  const file = runtime.app.mirror.path
  const compare = () =>
    compareMirror(
      (resource) => account.control<Record<string, unknown>[]>('GET', `/state/${resource}`),
      (sql, ...params) => sqlite.prepare(sql).all(...params) as Record<string, unknown>[],
      [],
      RECORD_STREAMS.filter((s) => s.name === 'clients'),
    )
  try {
    await runtime.scheduler.runNow('sweep')
    expect((await compare()).mismatches).toEqual([])
    expect(await runtime.ready()).toMatchObject({ ready: true })

    // Parked: no file of the mirror open in this process, the checkpoint thread let go of it.
    expect(await park(runtime)).toBe(true)
    expect(runtime.activity().open).toBe(false)
    expect(filesOpenOn(file)).toBe(0)
    expect(checkpoints.mirrors).toBe(0)
    // A readiness probe (answered by the last one) and the heartbeat do not open it.
    expect(await runtime.ready()).toMatchObject({ ready: true })
    await clock.advance(60_000)
    expect(runtime.activity().open).toBe(false)

    // A change upstream, then the next sweep: the mirror opens again and the change is in it.
    await emu.control('POST', '/mutate', { resource: 'clients', op: 'update', count: 2, emit: false })
    await runtime.scheduler.runNow('sweep')
    expect(runtime.activity().open).toBe(true)
    expect(checkpoints.mirrors).toBe(1)
    expect((await compare()).mismatches).toEqual([])
    // The run's owner beat again on the reopen: its row is there for other processes to see.
    expect(sqlite.prepare('SELECT count(*) FROM run_owners').pluck().get()).toBe(1)

    // Parked again, then a signed delivery: stored, applied, the mirror open.
    expect(await park(runtime)).toBe(true)
    const body = Buffer.from(JSON.stringify({ id: 'c-webhook', name: 'From a webhook', updatedAt: '2025-01-01T12:04:00.000Z' }))
    const res = await request(intake.url, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        'x-service-event': 'client.updated',
        'x-service-delivery': 'd-parked-1',
        'x-service-signature': sign(SECRET, body),
      },
      body,
    })
    await res.body.text()
    expect(res.statusCode).toBe(200)
    // Stored (acknowledged) in the mirror, opened again for it.
    expect(runtime.activity().open).toBe(true)
    await until('the delivery applied', () => sqlite.prepare(`SELECT count(*) FROM clients WHERE id = 'c-webhook'`).pluck().get() === 1)
    expect(runtime.activity().open).toBe(true)

    // Never inside a run: a sweep under way keeps its mirror.
    await until('the inbox applied', () => runtime.webhooks.inbox.backlog === 0)
    const sweep = runtime.scheduler.runNow('sweep')
    expect(runtime.activity().busy).toBe(true)
    expect(await runtime.park()).toBe(false)
    await sweep
    // Nor inside a transaction (a snapshot read across awaits, as the destination's load takes).
    sqlite.exec('BEGIN')
    sqlite.prepare('SELECT count(*) FROM clients').get()
    expect(await runtime.park()).toBe(false)
    expect(runtime.activity().open).toBe(true)
    sqlite.exec('COMMIT')
    expect(await park(runtime)).toBe(true)
    expect(checkpoints.mirrors).toBe(0)
    // Nor does anything keep a file of it open after a delivery (the inbox opens its -wal for each sync only).
    expect(filesOpenOn(file)).toBe(0)
  } finally {
    await intake.close()
    await runtime.stop()
  }
  expect(runtime.stuck()).toBe(false)
  expect(filesOpenOn(file)).toBe(0)
  await checkpoints.stop()
  await emu.close()
})

test('a freshly backfilled account rests: one round a bound, quiet long enough between rounds for its mirror to park (fake time)', async () => {
  // The emulator runs on the daemon's fake clock (its budget of 60 a minute, as the daemon's default).
  const clock = new FakeClock(Date.UTC(2026, 0, 5, 8, 0, 30))
  const emu = await emulatorEnv({
    counts: { clients: 40, jobs: 40, visitsPerJob: 1, invoices: 30, customRecords: 10 },
    now: () => clock.now(),
  })
  const config = loadConfig({
    env: {
      FSM_BASE_URL: emu.url,
      FSM_API_KEY: emu.apiKey,
      FSM_DB: path.join(tempDir(), 'mirror.db'),
      FSM_HTTP_HOST: '127.0.0.1',
      FSM_HTTP_PORT: '0',
    },
  })
  expect(config.sync.maxSweepIntervalSeconds).toBe(60)
  const daemon = await startDaemon(config, { logger, clock })
  // Fake time moves to the next timer once no request is in flight.
  const drive = async (ms: number) => {
    const end = clock.now() + ms
    while (clock.now() < end) {
      for (let i = 0; !(daemon.app.governor.state().inFlight === 0 && clock.pending > 0); i++) {
        if (i > 5_000) throw new Error('the sweeps never came to wait on the clock')
        await new Promise((r) => setTimeout(r, 2))
      }
      const before = clock.now()
      await clock.advanceToNext()
      if (clock.now() === before) await clock.advance(1)
    }
  }
  try {
    let backfilledAt: number | undefined
    void daemon.firstSweep.then(() => (backfilledAt = clock.now()))
    await drive(4 * 60_000)
    expect(backfilledAt).toBeDefined()
    const starts = (
      daemon.app.mirror.sqlite.prepare(`SELECT started_at FROM sync_runs WHERE kind = 'sweep' ORDER BY id`).pluck().all() as string[]
    )
      .map((s) => Date.parse(s))
      .filter((at) => at >= backfilledAt!)
    // Six streams, each rested a bound after its backfill: about a round a minute (a discovery too
    // at five minutes), not the 30-odd sweeps of the minute after the backfill at the share's pace.
    const inFirstMinute = starts.filter((at) => at < backfilledAt! + 60_000).length
    expect(inFirstMinute, JSON.stringify(starts.map((at) => at - backfilledAt!))).toBeLessThanOrEqual(6)
    expect(starts.length).toBeLessThanOrEqual(6 * 4)
    // Between two rounds the account is quiet for most of the bound: its mirror parks (IDLE_PARK_MS).
    const gaps = [...starts.slice(1).map((at, i) => at - starts[i]!), starts[0]! - backfilledAt!]
    expect(Math.max(...gaps)).toBeGreaterThan(30_000)
    expect(gaps.filter((g) => g > IDLE_PARK_MS + PARKING_LOOK_MS).length).toBeGreaterThanOrEqual(3)
  } finally {
    await daemon.stop()
    await emu.close()
  }
}, 120_000)
