// The cron trap: a command pointed at a mirror nothing was ever synced into (a container on the
// wrong volume) exits 1 with the fix, instead of creating an empty mirror and succeeding quietly.
// "Never synced": no mirror file, or a file in which no sweep or reference read ever succeeded and no
// webhook delivery was applied.
import { existsSync } from 'node:fs'
import path from 'node:path'
import { beforeAll, describe, expect, test } from 'vitest'
import { openMirror } from '../../../src/store/sqlite/mirror-database.js'
import { SyncStateStore } from '../../../src/store/repositories/sync-state.js'
import { emulatorEnv, type EmulatorEnv } from '../../support/emulator-env.js'
import { cleanEnv, runCli } from '../../support/run-cli.js'
import { tempDir } from '../../support/temp-mirror.js'

let emu: EmulatorEnv
/** A migrated mirror whose only runs are a failed sweep and a successful reconciliation of nothing. */
let neverSynced: string
const runCount = async (db: string) => {
  const m = await openMirror(db, { readonly: true })
  try {
    return m.sqlite.prepare('SELECT count(*) FROM sync_runs').pluck().get() as number
  } finally {
    await m.close()
  }
}

beforeAll(async () => {
  emu = await emulatorEnv({ counts: { clients: 1, jobs: 1, visitsPerJob: 1, invoices: 1, customRecords: 0 } })
  neverSynced = path.join(tempDir(), 'mirror.db')
  const m = await openMirror(neverSynced)
  const state = new SyncStateStore(m.sqlite)
  const now = new Date().toISOString()
  const failed = state.startRun('sweep', 'clients', now)
  state.finishRun(failed, { outcome: 'error', rows: 0, requests: 1, error: 'FSM_API_KEY was rejected (401 UNAUTHORIZED)' }, now)
  state.recordError('clients', failed, 'FSM_API_KEY was rejected (401 UNAUTHORIZED)', now)
  const reconciled = state.startRun('reconcile', 'clients', now)
  state.finishRun(reconciled, { outcome: 'success', rows: 0, requests: 1 }, now)
  await m.close()
}, 30_000)

const env = (db: string) => cleanEnv({ FSM_BASE_URL: emu.url, FSM_API_KEY: emu.apiKey, FSM_DB: db, FSM_RATE_LIMIT: '100000' })
const FIX = /point FSM_DB .*; in a container, check the volume mounted at \/\S+ \(Compose names it <project>_<volume>/

describe('commands on a mirror that was never synced exit 1 with the fix', () => {
  test.concurrent(
    'replicate, consumers and export on a mirror with only a failed sweep: exit 1 before any connection or file, the --json error document',
    async () => {
      const runsBefore = await runCount(neverSynced)
      // Nothing listens on port 1: the refusal comes before the destination is reached.
      const pg = { FSM_POSTGRES_URL: 'postgres://fsm:secret-5521@127.0.0.1:1/warehouse' }
      const out = path.join(tempDir(), 'export')
      const [replicate, list, ack, exported] = await Promise.all([
        runCli(['replicate', '--json'], { ...env(neverSynced), ...pg }),
        runCli(['export', '--format', 'csv', '--out', out, '--json'], env(neverSynced)),
        runCli(['consumers', 'list', '--json'], env(neverSynced)),
        runCli(['consumers', 'ack', 'etl', '3', '--json'], env(neverSynced)),
      ])
      for (const r of [replicate, list, ack, exported]) {
        expect(r.code, r.stderr).toBe(1)
        expect(r.stderr).toContain(`the mirror ${neverSynced} was never synced`)
        expect(JSON.parse(r.stdout)).toEqual({ error: { message: expect.stringContaining('was never synced'), exitCode: 1 } })
        expect(r.stdout + r.stderr).not.toContain('secret-5521')
      }
      expect(await runCount(neverSynced)).toBe(runsBefore)
      expect(existsSync(out)).toBe(false)
    },
  )

  test.concurrent('reconcile with no mirror file: exit 1, nothing created, the --json error document', async () => {
    const db = path.join(tempDir(), 'fsm-mirror.db')
    const r = await runCli(['reconcile', '--json'], env(db))
    expect(r.code, r.stderr).toBe(1)
    expect(r.stderr).toContain(`fsm-sync: no mirror at ${db}: nothing was ever synced there.`)
    expect(r.stderr).toMatch(FIX)
    expect(JSON.parse(r.stdout)).toEqual({ error: { message: expect.stringContaining(`no mirror at ${db}`), exitCode: 1 } })
    expect(existsSync(db)).toBe(false)
  })

  test.concurrent('trigger and query on a mirror with only a failed sweep: exit 1, nothing run, nothing asked upstream', async () => {
    const runsBefore = await runCount(neverSynced)
    const [trigger, query] = await Promise.all([
      runCli(['trigger', 'calendar-b'], env(neverSynced)),
      runCli(['query', 'SELECT count(*) FROM clients'], env(neverSynced)),
    ])
    for (const r of [trigger, query]) {
      expect(r.code, r.stderr).toBe(1)
      expect(r.stdout).toBe('')
      expect(r.stderr).toContain(`the mirror ${neverSynced} was never synced: no sweep or reference read has succeeded in it`)
      expect(r.stderr).toMatch(FIX)
      expect(r.stderr.trimEnd().split('\n')).toHaveLength(1)
    }
    expect(await runCount(neverSynced)).toBe(runsBefore)
    expect(await emu.control('GET', '/requests?path=/api/v1/integrations')).toEqual([])
  })

  test.concurrent('status: still shows why the runs failed, says the mirror was never synced, exit 1', async () => {
    const r = await runCli(['status', '--json'], env(neverSynced))
    expect(r.code).toBe(1)
    const report = JSON.parse(r.stdout)
    expect(report.synced).toBe(false)
    expect(report.streams.find((s: { stream: string }) => s.stream === 'clients').lastError).toContain('401')
    expect(r.stderr).toContain('was never synced')
  })
})

describe('what counts as synced', () => {
  test.concurrent('a mirror filled only by webhooks (an applied delivery, no sweep or reference run) is synced', async () => {
    const db = path.join(tempDir(), 'mirror.db')
    const m = await openMirror(db)
    const now = new Date().toISOString()
    m.sqlite
      .prepare(
        `INSERT INTO webhook_inbox (delivery_id, seq, event, received_at, raw, verified_with, processed_at) VALUES ('d1', 1, 'client.updated', ?, '{}', 'current', ?)`,
      )
      .run(now, now)
    await m.close()
    const r = await runCli(['query', 'SELECT count(*) AS n FROM clients', '--json'], env(db))
    expect(r.code, r.stderr).toBe(0)
    expect(JSON.parse(r.stdout)).toEqual([{ n: 0 }])
  })

  test.concurrent('consumers add before the first sync registers the reader; with no mirror file it is refused', async () => {
    const db = path.join(tempDir(), 'mirror.db')
    await (await openMirror(db)).close()
    const added = await runCli(['consumers', 'add', 'etl', '--json'], env(db))
    expect(added.code, added.stderr).toBe(0)
    expect(JSON.parse(added.stdout)).toMatchObject({ name: 'etl', seq: 0 })
    const missing = path.join(tempDir(), 'fsm-mirror.db')
    const refused = await runCli(['consumers', 'add', 'etl'], env(missing))
    expect(refused.code).toBe(1)
    expect(refused.stderr).toContain(`no mirror at ${missing}`)
    expect(existsSync(missing)).toBe(false)
  })
})

describe('a relative mirror path', () => {
  test('the default path from another folder: the absolute path it looked at and the fix for a relative path, one line, nothing about volumes', async () => {
    const elsewhere = tempDir()
    const { FSM_DB: _default, ...vars } = env('unused')
    for (const args of [['status'], ['query', 'SELECT 1'], ['reconcile']]) {
      const r = await runCli(args, vars, elsewhere)
      expect(r.code, r.stderr).toBe(1)
      expect(r.stderr.trimEnd().split('\n'), args[0]).toEqual([
        `fsm-sync: no mirror at ${path.join(elsewhere, 'data/fsm-mirror.db')}: nothing was ever synced there. ` +
          `The mirror path ./data/fsm-mirror.db is relative to the folder the command runs in (${elsewhere}): run it from the folder ` +
          'the mirror was made in, or set FSM_DB (or --db) to an absolute path. To start a mirror there, run `fsm-sync sync`.',
      ])
    }
    expect(existsSync(path.join(elsewhere, 'data'))).toBe(false)
  }, 60_000)
})
