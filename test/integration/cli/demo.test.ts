// `fsm-sync demo`, the README's first command, driven through the real CLI: the real daemon with
// webhooks flowing from the churning emulated account, bounded by --duration, and stopped by SIGTERM.
import path from 'node:path'
import { Writable } from 'node:stream'
import { describe, expect, test } from 'vitest'
import { runDemo } from '../../../src/daemon/demo.js'
import { cleanEnv, runCli, spawnCli } from '../../support/run-cli.js'
import { tempDir } from '../../support/temp-mirror.js'
import { query, until } from '../../support/daemon-env.js'

/** Webhook event → the mirror table its payload lands in (deletions carry only an id: left out). */
const TABLE_OF_EVENT: Record<string, string> = { client: 'clients', job: 'jobs', invoice: 'invoices', visit: 'visits' }

describe('fsm-sync demo', () => {
  test('runs the daemon: backfill, example queries, webhooks received and applied, clean exit at --duration', async () => {
    const dir = tempDir()
    const db = path.join(dir, 'fsm-mirror.db')
    const r = await runCli(['demo', '--dir', dir, '--duration', '15', '--interval', '5'], cleanEnv())
    expect(r.code, r.stderr).toBe(0)
    const backfill = r.stdout.slice(r.stdout.indexOf('Backfill:'), r.stdout.indexOf('-- Jobs by status'))
    // Record streams with the rows their backfill changed and its requests; reference data and
    // account metadata as snapshots (read whole: no row or request figure to compare).
    // Under a header row, each run's kind as sync_runs records it.
    expect(backfill).toMatch(/^Backfill:\nstream\s+kind\s+outcome\s+rows changed\s+requests\s+time\n/)
    for (const stream of ['clients', 'jobs', 'visits', 'invoices', 'objects:equipment']) {
      expect(backfill).toMatch(new RegExp(`^${stream}\\s+sweep\\s+success\\s+\\d+\\s+\\d+\\s+\\d+\\.\\d s$`, 'm'))
    }
    for (const stream of ['items', 'taxes', 'team', 'job_forms', 'company', 'webhooks', 'api_keys']) {
      expect(backfill).toMatch(new RegExp(`^${stream}\\s+reference\\s+success\\s+snapshot\\s+\\d+\\.\\d s$`, 'm'))
    }
    expect(r.stdout).toMatch(/-- Jobs by status[\s\S]*\(\d+ rows?\)/)
    expect(r.stdout).toMatch(/-- Visits by status[\s\S]*\(\d+ rows?\)/)
    expect(r.stdout).toContain(`FSM_DB=${db}`)
    expect(r.stdout).toMatch(/^Webhooks: endpoint \S+ delivers every event to http:\/\/127\.0\.0\.1:\d+\/webhooks\.$/m)
    // Live lines read from the daemon's own state, every number labelled.
    const live = r.stdout.split('\n').filter((l) => /^\[\d\d:\d\d:\d\d\] /.test(l))
    expect(live.length, r.stdout).toBeGreaterThan(0)
    for (const line of live)
      expect(line).toMatch(/^\[\d\d:\d\d:\d\d\] webhooks: \+\d+ received, \+\d+ applied(, .*)?; .*mirror: \+\d+ rows changed(; |$)/)
    expect(live.join('\n')).toMatch(/; sweeps: \d+ finished, \d+ requests?, (no rows changed|rows changed: [a-z_]+ \d+)/)
    const summary = /(\d+) webhooks received, (\d+) applied into the mirror/.exec(r.stdout)
    expect(summary, r.stdout).not.toBeNull()
    expect(Number(summary![1])).toBeGreaterThan(0)
    expect(Number(summary![2])).toBeGreaterThan(0)
    expect(r.stdout).toContain('Stopped.')
    expect(r.stdout).not.toContain('svc_live_')
    expect(r.stderr).not.toContain('svc_live_')

    // The mirror it leaves behind: the daemon's runs, and deliveries applied into the tables.
    expect(query(db, `SELECT count(*) AS n FROM clients`)[0]!.n as number).toBeGreaterThanOrEqual(50)
    expect(query(db, `SELECT count(*) AS n FROM sync_runs WHERE outcome = 'running'`)).toEqual([{ n: 0 }])
    const applied = query(db, `SELECT event, raw FROM webhook_inbox WHERE processed_at IS NOT NULL AND error IS NULL`)
    expect(applied.length).toBeGreaterThan(0)
    const landed = applied.flatMap((d) => {
      const [resource, action] = String(d.event).split('.')
      const table = TABLE_OF_EVENT[resource ?? '']
      if (table === undefined || action === 'deleted' || action === 'status_changed') return []
      const id = (JSON.parse(String(d.raw)) as { id?: unknown }).id
      return typeof id === 'string' ? [{ table, id }] : []
    })
    expect(landed.length, JSON.stringify(applied.map((d) => d.event))).toBeGreaterThan(0)
    for (const { table, id } of landed) expect(query(db, `SELECT id FROM "${table}" WHERE id = ?`, id), `${table} ${id}`).toEqual([{ id }])
  }, 120_000)

  test('as the demo ends the account stops changing and its deliveries are answered before the daemon stops: no 503, no error line', async () => {
    let logs = ''
    const logDestination = new Writable({ write: (c: Buffer, _e, cb) => ((logs += c.toString('utf8')), cb()) })
    let emulatorUrl = ''
    let atTeardown: Record<string, unknown>[] = []
    const control = async (route: string) =>
      ((await (await fetch(`${emulatorUrl}/__emulator/${route}`)).json()) as { data: Record<string, unknown> }).data
    const nothing = () => undefined
    const stop = new AbortController()
    await runDemo(
      { seed: 1, sweepSeconds: 5, dir: tempDir(), signal: stop.signal, logDestination },
      {
        started: (e) => (emulatorUrl = e.emulatorUrl),
        backfilled: nothing,
        live: nothing,
        // Ends once webhooks flow (a --duration ends the same way).
        activity: (e) => {
          if (e.activity.received > 0) stop.abort()
        },
        summary: nothing,
        stopped: nothing,
        // What the account is doing as the daemon begins to stop.
        teardown: async () => {
          atTeardown = await Promise.all([control('churn'), control('counters')])
        },
      },
    )
    const [churn, counters] = atTeardown
    expect(churn).toMatchObject({ running: false })
    expect(counters!['deliveries.sent']).toBeGreaterThan(0)
    expect(counters).toMatchObject({ 'deliveries.failed': 0 })
    expect(logs).not.toContain('not stored')
    expect(logs).not.toMatch(/"level":(50|60)/)
  }, 120_000)

  test('SIGTERM stops the daemon, then the emulator: exit 0', async () => {
    const dir = tempDir()
    const child = spawnCli(['demo', '--dir', dir, '--interval', '10'], cleanEnv())
    let out = ''
    child.stdout?.setEncoding('utf8').on('data', (d: string) => (out += d))
    child.stderr?.setEncoding('utf8').on('data', (d: string) => (out += d))
    const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
      child.on('close', (code, signal) => resolve({ code, signal })),
    )
    await until('the live phase', () => out.includes('Ctrl-C stops.'), 90_000)
    child.kill('SIGTERM')
    expect(await exited, out).toEqual({ code: 0, signal: null })
    expect(out).toContain('Stopped.')
    expect(query(path.join(dir, 'fsm-mirror.db'), `SELECT count(*) AS n FROM sync_runs WHERE outcome = 'running'`)).toEqual([{ n: 0 }])
  }, 120_000)
})
