// The incremental sweep against the emulator over real HTTP into a real SQLite file.
import { describe, expect, test } from 'vitest'
import { clients, jobs, RECORD_STREAMS } from '../../../connectors/index.js'
import { emulatorEnv, type EmulatorEnv } from '../../support/emulator-env.js'
import { compareWithEmulator, syncEnv } from '../../support/sync-env.js'
import { walCommits } from '../../support/wal-commits.js'

const UPDATE: Record<string, { method: 'PUT' | 'PATCH'; body: (n: number) => Record<string, unknown> }> = {
  clients: { method: 'PUT', body: (n) => ({ notes: `note ${n}` }) },
  jobs: { method: 'PUT', body: (n) => ({ internalNotes: `job note ${n}` }) },
  visits: { method: 'PATCH', body: (n) => ({ notes: `visit note ${n}` }) },
  invoices: { method: 'PUT', body: (n) => ({ comments: `comment ${n}` }) },
}

async function update(e: EmulatorEnv, stream: string, id: string, n: number) {
  const u = UPDATE[stream]!
  const r = await e.api(u.method, `/api/v1/${stream}/${id}`, u.body(n))
  expect(r.status, JSON.stringify(r.body)).toBe(200)
}

async function liveIds(e: EmulatorEnv, resource: string): Promise<string[]> {
  return (await e.state(resource)).filter((r) => r.deleted !== true).map((r) => r.id as string)
}

describe('sync: backfill and incremental sweeps', () => {
  test('a backfill of a few thousand records per resource is exact, field by field', async () => {
    const emu = await emulatorEnv({ seed: 7, counts: { clients: 2000, jobs: 2000, visitsPerJob: 2, invoices: 2000 } })
    const env = await syncEnv(emu)
    const results = await env.sync()
    expect(results.map((r) => r.outcome)).toEqual(['success', 'success', 'success', 'success'])
    for (const stream of ['clients', 'jobs', 'invoices']) {
      expect(env.rows(`SELECT count(*) AS n FROM ${stream}`)[0]!.n).toBeGreaterThanOrEqual(2000)
    }
    expect(await compareWithEmulator(emu, env)).toEqual([])
    // Children: every invoice item and assignee of the upstream is there.
    const upstreamItems = (await emu.state('invoices'))
      .filter((i) => !i.deleted)
      .reduce((n: number, i) => n + Number(i.items?.length ?? 0), 0)
    expect(env.rows('SELECT count(*) AS n FROM invoice_items')[0]!.n).toBe(upstreamItems)
    // Rows per request: a backfill reads full pages.
    const clientsRun = results.find((r) => r.stream === 'clients')!
    expect(clientsRun.rows / clientsRun.requests).toBeGreaterThan(90)
  })

  test('an incremental run with nothing changed spends one request per stream and changes nothing', async () => {
    const emu = await emulatorEnv({ seed: 3, counts: { clients: 300, jobs: 300, invoices: 300 } })
    const env = await syncEnv(emu)
    await env.sync()
    const logBefore = env.rows('SELECT count(*) AS n FROM change_log')[0]!.n
    const again = await env.sync()
    expect(again.map((r) => [r.stream, r.requests, r.rows])).toEqual(RECORD_STREAMS.map((s) => [s.name, 1, 0]))
    expect(env.rows('SELECT count(*) AS n FROM change_log')[0]!.n).toBe(logBefore)
  })

  test("a quiet sweep commits once (its run's row, cursor and outcome) besides its request's claim in the ledger", async () => {
    const emu = await emulatorEnv({ seed: 4, counts: { clients: 120, jobs: 10, invoices: 10 } })
    const env = await syncEnv(emu)
    await env.sync({ streams: [clients] })
    await emu.control('POST', '/clock', { advanceMs: 10_000 })
    // The cursor the page moved is written with the run (its write time shows it).
    const cursorWritten = () => env.rows(`SELECT updated_at FROM sync_state WHERE stream = 'clients'`)[0]!.updated_at
    const stored = cursorWritten()
    const before = walCommits(env.db)
    const [quiet] = await env.sync({ streams: [clients] })
    expect([quiet!.outcome, quiet!.requests, quiet!.rows]).toEqual(['success', 1, 0])
    // One commit for the run (its row written with its outcome, the cursor its page moved), one for the request's claim.
    expect(walCommits(env.db) - before).toBe(2)
    expect(env.rows(`SELECT count(*) AS n FROM request_starts`)[0]!.n).toBeGreaterThan(0)
    expect(cursorWritten()).not.toBe(stored)
    const runs = env.rows(
      `SELECT outcome, rows, requests, ended_at IS NOT NULL AS ended FROM sync_runs WHERE stream = 'clients' ORDER BY id`,
    )
    expect(runs.at(-1)).toEqual({ outcome: 'success', rows: 0, requests: 1, ended: 1 })

    // A sweep that finds rows writes its run's row with its first page, in that page's transaction.
    await emu.control('POST', '/mutate', { resource: 'clients', op: 'update', count: 3 })
    await emu.control('POST', '/clock', { advanceMs: 10_000 })
    const [changed] = await env.sync({ streams: [clients] })
    expect([changed!.outcome, changed!.rows]).toEqual(['success', 3])
  })

  test('an incremental sweep whose first page cannot be committed still records its run, as an error', async () => {
    const emu = await emulatorEnv({ seed: 6, counts: { clients: 40, jobs: 10, invoices: 10 } })
    const env = await syncEnv(emu)
    await env.sync({ streams: [clients] })
    await emu.control('POST', '/mutate', { resource: 'clients', op: 'update', count: 2 })
    await emu.control('POST', '/clock', { advanceMs: 10_000 })
    // The page's transaction rolls back after it wrote the run's row (at the progress the row then gets).
    env.app.mirror.sqlite.exec(
      `CREATE TRIGGER refuse_progress BEFORE UPDATE OF details ON sync_runs WHEN NEW.outcome = 'running' BEGIN SELECT RAISE(ABORT, 'refused by the test'); END`,
    )
    const [failed] = await env.sync({ streams: [clients] })
    expect(failed!.outcome).toBe('error')
    env.app.mirror.sqlite.exec(`DROP TRIGGER refuse_progress`)
    const last = env.rows(`SELECT id, outcome, requests, error FROM sync_runs WHERE stream = 'clients' ORDER BY id DESC LIMIT 1`)[0]!
    expect(last).toMatchObject({ outcome: 'error', requests: 1 })
    expect(last.error).toMatch(/refused by the test/)
    expect(env.rows(`SELECT last_error, last_run_id FROM sync_state WHERE stream = 'clients'`)[0]).toMatchObject({ last_run_id: last.id })
  })

  test('a tie of 160 records sharing one updatedAt, larger than a page, is read whole', async () => {
    const emu = await emulatorEnv({ seed: 5, counts: { clients: 400, jobs: 10, invoices: 10 } })
    const env = await syncEnv(emu)
    await env.sync({ streams: [clients] })
    const ids = (await liveIds(emu, 'clients')).slice(0, 160)
    await emu.control('POST', '/clock', { freezeAt: '2030-01-01T00:00:00.000Z' })
    for (const [n, id] of ids.entries()) await update(emu, 'clients', id, n)
    await emu.control('POST', '/clock', { freezeAt: null })
    const tie = (await emu.state('clients')).filter((c) => c.updatedAt === '2030-01-01T00:00:00.000Z')
    expect(tie).toHaveLength(160)
    const [run] = await env.sync({ streams: [clients] })
    expect(run!.outcome).toBe('success')
    expect(run!.rows).toBe(160)
    expect(await compareWithEmulator(emu, env, [clients])).toEqual([])
  })

  test('churn during a sweep (updates behind and ahead, creates, deletes): one more sync is exact', async () => {
    const emu = await emulatorEnv({ seed: 11, counts: { clients: 1500, jobs: 1500, visitsPerJob: 2, invoices: 1500 } })
    const env = await syncEnv(emu)
    // Slow the list route down so that the churn lands while the sweep is walking.
    await emu.control('POST', '/faults', { route: 'GET /api/v1/*', latencyMs: 40 })
    const sweep = env.sync()
    let n = 0
    const deleted: string[] = []
    for (let round = 0; round < 30; round++) {
      for (const stream of ['clients', 'jobs', 'visits', 'invoices']) {
        const ids = await liveIds(emu, stream)
        await update(emu, stream, ids[round % ids.length]!, n++) // early rows (already passed)
        await update(emu, stream, ids[ids.length - 1 - round]!, n++) // late rows (still ahead)
      }
      const created = await emu.api('POST', '/api/v1/clients', { firstName: `Churn${round}`, email: `churn${round}@example.com` })
      expect(created.status).toBeLessThan(300)
      const victim = (await liveIds(emu, 'invoices'))[round * 7]!
      expect((await emu.api('DELETE', `/api/v1/invoices/${victim}`)).status).toBe(200)
      deleted.push(victim)
    }
    const first = await sweep
    expect(first.every((r) => r.outcome === 'success')).toBe(true)
    await emu.control('POST', '/faults', { clear: true })
    await env.sync()
    const mismatches = await compareWithEmulator(emu, env)
    // Deleted records are only known after reconciliation (or a webhook): nothing else may differ.
    expect(mismatches.filter((m) => !(m.problem.startsWith('phantom') && deleted.includes(m.id)))).toEqual([])
    await env.reconcile()
    expect(await compareWithEmulator(emu, env)).toEqual([])
  })

  test('--full ignores the cursor, rewrites nothing that did not change', async () => {
    const emu = await emulatorEnv({ seed: 2, counts: { clients: 250, jobs: 10, invoices: 10 } })
    const env = await syncEnv(emu)
    await env.sync({ streams: [clients, jobs] })
    const [run] = await env.sync({ streams: [clients], full: true })
    expect(run!.requests).toBeGreaterThanOrEqual(3)
    expect(run!.rows).toBe(0)
  })
})
