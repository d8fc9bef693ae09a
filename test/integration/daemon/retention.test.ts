// Retention through `fsm-sync run`: an older mirror (no incremental auto-vacuum) is switched once at
// start, and the scheduled retention job removes old bookkeeping rows, logs what it removed, counts
// it in /metrics and gives the freed pages back.
import Database from 'better-sqlite3'
import { expect, test } from 'vitest'
import { openMirror } from '../../../src/store/sqlite/mirror-database.js'
import { emulatorEnv } from '../../support/emulator-env.js'
import { tempDir } from '../../support/temp-mirror.js'
import { daemonEnv, freePort, get, query, startRun, until } from '../../support/daemon-env.js'

const OLD = '2020-01-01T00:00:00.000Z'

async function olderMirrorWithHistory(file: string): Promise<void> {
  // A mirror made before incremental auto-vacuum: a table existed before openMirror could set it.
  const older = new Database(file)
  older.pragma('journal_mode = WAL')
  older.exec('CREATE TABLE made_by_an_older_version (x)')
  older.close()
  const mirror = await openMirror(file)
  const body = JSON.stringify({ id: 'x', notes: 'n'.repeat(2000) })
  const insert = mirror.sqlite.prepare(
    `INSERT INTO webhook_inbox (delivery_id, seq, event, received_at, raw, verified_with, processed_at, error) VALUES (?, ?, 'client.updated', ?, ?, 'current', ?, ?)`,
  )
  mirror.sqlite.transaction(() => {
    for (let i = 1; i <= 3000; i++) insert.run(`old-${i}`, i, OLD, body, OLD, null)
    insert.run('old-failed', 3001, OLD, body, null, 'unknown event "x"')
    insert.run('recent', 3002, new Date().toISOString(), body, new Date().toISOString(), null)
    const run = mirror.sqlite.prepare(
      `INSERT INTO sync_runs (kind, stream, started_at, ended_at, outcome) VALUES ('sweep', 'clients', ?, ?, 'success')`,
    )
    for (let i = 0; i < 10; i++) run.run(OLD, OLD)
  })()
  await mirror.close()
}

test('the daemon switches an older mirror to incremental vacuum once, then its retention schedule removes old rows and shrinks the file', async () => {
  const emu = await emulatorEnv({ counts: { clients: 1, jobs: 1, visitsPerJob: 1, invoices: 1, customRecords: 0 } })
  const dir = tempDir()
  const port = await freePort()
  const env = daemonEnv(
    emu,
    dir,
    port,
    {
      schedules: {
        sweep: 'off',
        reconcile: 'off',
        reference: 'off',
        calendarA: 'off',
        calendarB: 'off',
        accounting: 'off',
        deliveries: 'off',
        retention: '* * * * * *',
      },
      retention: { batchRows: 500 },
    },
    { FSM_LOG_LEVEL: 'info' },
  )
  const db = env.FSM_DB!
  await olderMirrorWithHistory(db)
  const run = startRun(env)
  const metric = await until('a retention pass counted in /metrics', async () => {
    const r = await get(`http://127.0.0.1:${port}/metrics`)
    const m = /^fsm_retention_deleted_rows_total\{table="webhook_inbox_bodies",account="default"\} (\d+)$/m.exec(r.text)
    return m !== null && Number(m[1]) >= 3000 ? r.text : undefined
  })
  expect(metric).toMatch(/^fsm_retention_deleted_rows_total\{table="sync_runs",account="default"\} 10$/m)
  run.child.kill('SIGTERM')
  expect(await run.exited, run.output()).toEqual({ code: 0, signal: null })

  const lines = run
    .output()
    .split('\n')
    .filter((l) => l.startsWith('{'))
    .map((l) => JSON.parse(l) as Record<string, unknown>)
  const switched = lines.filter((l) => String(l.msg).includes('switched to incremental auto-vacuum'))
  expect(switched).toHaveLength(1)
  expect(switched[0]).toMatchObject({ durationMs: expect.any(Number) as number, bytesBefore: expect.any(Number) as number })
  const pass = lines.find(
    (l) => l.msg === 'retention pass done' && ((l.removed as Record<string, number> | undefined)?.webhook_inbox_bodies ?? 0) > 0,
  )
  expect(pass).toMatchObject({ removed: { webhook_inbox_bodies: 3000, webhook_inbox: 3000, sync_runs: 10 } })
  expect(pass!.freedPages as number).toBeGreaterThan(1000)

  // Old applied deliveries are gone, body then id (both horizons passed); the failed and the
  // recent delivery stay whole.
  expect(query(db, `SELECT delivery_id, body_dropped_at FROM webhook_inbox ORDER BY seq`)).toEqual([
    { delivery_id: 'old-failed', body_dropped_at: null },
    { delivery_id: 'recent', body_dropped_at: null },
  ])
  expect(query(db, `PRAGMA auto_vacuum`)).toEqual([{ auto_vacuum: 2 }])

  // The next start finds the mirror switched already: no second VACUUM.
  const again = startRun(env)
  await until('the second start', async () => (await get(`http://127.0.0.1:${port}/readyz`)).status === 200)
  again.child.kill('SIGTERM')
  expect(await again.exited, again.output()).toEqual({ code: 0, signal: null })
  expect(again.output()).not.toContain('switched to incremental auto-vacuum')
}, 60_000)
