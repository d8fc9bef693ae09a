// What `sync` and `reconcile` print and log, run as a user runs them (the real CLI in a child process
// against the emulator): a table with a header row, each run's kind as sync_runs records it, the
// default log level without lines nobody acts on, and a rejected key ending the run at its first 401.
import path from 'node:path'
import { describe, expect, test } from 'vitest'
import { emulatorEnv, type EmulatorEnv } from '../../support/emulator-env.js'
import { cleanEnv, runCli, withoutFsmSettings } from '../../support/run-cli.js'
import { tempDir } from '../../support/temp-mirror.js'
import { query } from '../../support/daemon-env.js'

const COUNTS = { clients: 3, jobs: 2, visitsPerJob: 1, invoices: 1, customRecords: 1 }

async function account(counts = COUNTS): Promise<{ emu: EmulatorEnv; db: string; vars: Record<string, string> }> {
  const emu = await emulatorEnv({ counts })
  const db = path.join(tempDir(), 'mirror.db')
  return { emu, db, vars: { FSM_BASE_URL: emu.url, FSM_API_KEY: emu.apiKey, FSM_DB: db, FSM_RATE_LIMIT: '100000' } }
}

/** The messages of stderr's JSON log lines. */
function messages(stderr: string): string[] {
  return stderr
    .split('\n')
    .filter((l) => l.startsWith('{'))
    .map((l) => (JSON.parse(l) as { msg: string }).msg)
}

describe('sync and reconcile output', () => {
  test('a header row; reference streams are "reference" on stdout, in --json and in sync_runs alike', async () => {
    const { db, vars } = await account()
    const text = await runCli(['sync'], cleanEnv(vars))
    expect(text.code, text.stderr).toBe(0)
    const [header, ...rows] = text.stdout.trimEnd().split('\n')
    expect(header).toMatch(/^stream\s+kind\s+outcome\s+rows changed\s+requests\s+time$/)
    expect(rows.join('\n')).toMatch(/^items\s+reference\s+success\s+\d+\s+\d+\s+\d+\.\d s$/m)
    expect(rows.join('\n')).toMatch(/^clients\s+sweep\s+success\s+3\s+1\s+\d+\.\d s$/m)
    const json = await runCli(['sync', '--json'], cleanEnv(vars))
    expect(json.code, json.stderr).toBe(0)
    const runs = (JSON.parse(json.stdout) as { runs: { stream: string; kind: string }[] }).runs
    const recorded = new Map(query(db, `SELECT stream, kind FROM sync_runs`).map((r) => [r.stream, r.kind]))
    for (const r of runs) expect(r.kind, r.stream).toBe(recorded.get(r.stream))
    expect(runs.filter((r) => r.kind === 'reference').map((r) => r.stream)).toEqual([
      'items',
      'taxes',
      'team',
      'job_forms',
      'company',
      'webhooks',
      'api_keys',
    ])
  }, 60_000)

  test('reconcile says what it checked and what it marked deleted', async () => {
    // 20 clients: one deleted is within the share a reconciliation may mark.
    const { emu, vars } = await account({ ...COUNTS, clients: 20 })
    expect((await runCli(['sync', '--stream', 'clients'], cleanEnv(vars))).code).toBe(0)
    const gone = (await emu.state('clients')).find((c) => c.deleted !== true)!.id as string
    await emu.control('POST', '/mutate', { resource: 'clients', op: 'delete', id: gone })
    const r = await runCli(['reconcile', '--stream', 'clients'], cleanEnv(vars))
    expect(r.code, r.stderr).toBe(0)
    expect(r.stdout).toMatch(
      /^stream\s+kind\s+outcome\s+checked\s+marked deleted\s+requests\s+time\nclients\s+reconcile\s+success\s+19\s+1\s+\d+\s/,
    )
  }, 60_000)

  test('the default log level: each stream finishes once, no shape or shared-budget notes', async () => {
    const { vars } = await account()
    // Twice: the second finds the first one's requests in the shared window.
    const env = withoutFsmSettings(vars)
    for (let round = 0; round < 2; round++) {
      const r = await runCli(['sync'], env)
      expect(r.code, r.stderr).toBe(0)
      const logged = messages(r.stderr)
      expect(logged).not.toContain('legacy list shape found')
      expect(logged.filter((m) => m.includes('another process'))).toEqual([])
      expect(logged.filter((m) => m === 'sweep finished')).toHaveLength(4 + 1 + 2) // record streams, discovery, two objects
      expect(logged.filter((m) => m === 'reference finished')).toHaveLength(7)
      expect(logged.filter((m) => m === 'sweep progress')).toEqual([])
    }
  }, 60_000)

  test('a rejected key: one request, one error, the rest skipped, exit 1', async () => {
    const { emu, vars } = await account()
    const bad = cleanEnv({ ...vars, FSM_API_KEY: 'svc_live_0000000000000000000000000000000000000000000000' })
    for (const command of [['sync'], ['sync', '--json']]) {
      await emu.control('POST', '/requests/clear')
      const r = await runCli(command, bad)
      expect(r.code, r.stderr).toBe(1)
      const requests = (await emu.control('GET', '/requests')) as { path: string; status: number }[]
      expect(requests.map((q) => [q.path, q.status])).toEqual([['/api/v1/clients', 401]])
      expect(messages(r.stderr)).toEqual(['sweep failed'])
      if (command.includes('--json')) {
        const doc = JSON.parse(r.stdout) as { ok: boolean; runs: { stream: string; outcome: string; errorCode?: string }[] }
        expect(doc.ok).toBe(false)
        expect(doc.runs[0]).toMatchObject({ stream: 'clients', outcome: 'error', errorCode: 'API_UNAUTHORIZED' })
        expect(doc.runs.slice(1).map((x) => x.outcome)).toEqual(doc.runs.slice(1).map(() => 'skipped'))
        expect(doc.runs.map((x) => x.stream)).toContain('objects')
      } else {
        expect(r.stdout.match(/FSM_API_KEY was rejected/g)).toHaveLength(1)
        expect(r.stdout).toContain('create a new one in the account settings')
        expect(r.stdout).toMatch(/^jobs\s+sweep\s+skipped$/m)
        expect(r.stdout).toMatch(
          /^skipped: jobs, visits, invoices, items, taxes, team, job_forms, company, webhooks, api_keys, objects \(not run because the API key was rejected on clients: every stream would get the same answer\)$/m,
        )
      }
    }
    // reconcile likewise, on a mirror synced with a good key.
    expect((await runCli(['sync'], cleanEnv(vars))).code).toBe(0)
    await emu.control('POST', '/requests/clear')
    const reconcile = await runCli(['reconcile'], bad)
    expect(reconcile.code).toBe(1)
    expect(((await emu.control('GET', '/requests')) as unknown[]).length).toBe(1)
    expect(reconcile.stdout).toMatch(/^skipped: jobs, visits, invoices, objects \(not run because/m)
    // trigger: the POST alone, not the calendar's status after it.
    await emu.control('POST', '/requests/clear')
    const trigger = await runCli(['trigger', 'calendar-a'], bad)
    expect(trigger.code).toBe(1)
    expect(((await emu.control('GET', '/requests')) as { method: string }[]).map((q) => q.method)).toEqual(['POST'])
  }, 60_000)
})
