// Results on stdout, logs on stderr, for every command that prints a result; with --json, stdout is
// one JSON document and the exit code is the same as without. The real CLI in child processes against
// the emulator, logging at info so that stderr has lines to check.
import { readFileSync } from 'node:fs'
import path from 'node:path'
import { beforeAll, describe, expect, test } from 'vitest'
import { emulatorEnv, type EmulatorEnv } from '../../support/emulator-env.js'
import { cliInProcess } from '../../support/cli-in-process.js'
import { cleanEnv, runCli, type CliResult } from '../../support/run-cli.js'
import { tempDir } from '../../support/temp-mirror.js'

let emu: EmulatorEnv
let vars: Record<string, string>
let endpointId: string

beforeAll(async () => {
  emu = await emulatorEnv({ counts: { clients: 3, jobs: 2, visitsPerJob: 1, invoices: 1, customRecords: 1 } })
  const db = path.join(tempDir(), 'mirror.db')
  vars = cleanEnv({ FSM_BASE_URL: emu.url, FSM_API_KEY: emu.apiKey, FSM_DB: db, FSM_RATE_LIMIT: '100000', FSM_LOG_LEVEL: 'info' })
  const sync = await runCli(['sync', '--json'], vars)
  expect(sync.code, sync.stderr).toBe(0)
  checkStreams(sync, ['sweep finished'])
  const doc = JSON.parse(sync.stdout)
  expect(doc.ok).toBe(true)
  expect(doc.runs.map((r: { stream: string }) => r.stream)).toContain('clients')
  expect(doc.runs.every((r: { outcome: string }) => r.outcome === 'success')).toBe(true)
  // An endpoint made through the API (not from this mirror), so `deliveries` is given its id.
  const created = await emu.api('POST', '/api/v1/webhooks', { url: 'https://mirror.example.test/webhooks', events: ['client.updated'] })
  endpointId = created.body.data.id as string
}, 60_000)

/** Every line of stderr is a JSON log line, or the command's one-line error (`fsm-sync: ...`). */
function logLines(stderr: string): { level: string; msg: string }[] {
  const lines = stderr.split('\n').filter((l) => l !== '' && !l.startsWith('fsm-sync: '))
  return lines.map((l) => JSON.parse(l) as { level: string; msg: string })
}

/** stdout is one JSON document; stderr holds the logs, the messages named among them. */
function checkStreams(r: CliResult, messages: string[] = []): unknown {
  const doc: unknown = JSON.parse(r.stdout)
  const logs = logLines(r.stderr)
  for (const l of logs) expect(l).toHaveProperty('level')
  for (const m of messages) expect(logs.map((l) => l.msg)).toContain(m)
  return doc
}

describe('--json: one JSON document on stdout, the logs on stderr', () => {
  test.concurrent('reconcile', async () => {
    const r = await runCli(['reconcile', '--stream', 'clients', '--json'], vars)
    expect(r.code, r.stderr).toBe(0)
    expect(checkStreams(r, ['reconcile finished'])).toMatchObject({ ok: true, runs: [{ stream: 'clients', kind: 'reconcile' }] })
  })

  test.concurrent('trigger', async () => {
    const r = await runCli(['trigger', 'calendar-a', '--json'], vars)
    expect(r.code, r.stderr).toBe(0)
    expect(checkStreams(r, ['trigger finished'])).toMatchObject({
      ok: true,
      trigger: { stream: 'calendar-a', kind: 'trigger', outcome: 'success' },
      calendarStatus: { connected: true },
      changeFeed: { stream: 'calendar_changes', outcome: 'success' },
    })
  })

  test.concurrent('webhooks list and deliveries', async () => {
    const [list, deliveries] = await Promise.all([
      runCli(['webhooks', 'list', '--json'], vars),
      runCli(['webhooks', 'deliveries', '--endpoint', endpointId, '--json'], vars),
    ])
    expect(list.code, list.stderr).toBe(0)
    const endpoints = (checkStreams(list) as { endpoints: { url: string; thisMirror: boolean }[] }).endpoints
    expect(endpoints).toEqual([expect.objectContaining({ id: endpointId, url: 'https://mirror.example.test/webhooks', thisMirror: false })])
    expect(deliveries.code, deliveries.stderr).toBe(0)
    expect(checkStreams(deliveries)).toMatchObject({ endpoint: endpointId, deliveries: expect.any(Array) })
  })

  test.concurrent('doctor', async () => {
    const r = await runCli(['doctor', '--json'], vars)
    const doc = checkStreams(r) as { ok: boolean; checks: { ok: boolean; label: string }[] }
    expect(r.code, r.stdout).toBe(doc.ok ? 0 : 1)
    expect(doc.checks.map((c) => c.label)).toContain('FSM_API_KEY valid')
  })

  test.concurrent('query: the example of docs/querying.md with ?; --json is the json format', async () => {
    // docs/querying.md, Tables: "increments for a warehouse loader: everything after the last seq it saw".
    const r = await runCli(['query', 'SELECT * FROM change_log WHERE seq > ? ORDER BY seq', '--param', '2', '--json'], vars)
    expect(r.code, r.stderr).toBe(0)
    const rows = checkStreams(r) as { seq: number; table_name: string }[]
    expect(rows.map((row) => row.seq).slice(0, 2)).toEqual([3, 4])
  })

  test.concurrent('query: a statement failing after rows went out closes the array; stdout stays one JSON document', async () => {
    // 200-byte rows, then json_extract meets malformed JSON at row 2,000: well past the first 64 KB batch.
    const sql = (failAt: number) =>
      `WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 3000)
       SELECT i, printf('%.200c', 'x') AS pad, CASE WHEN i < ${failAt} THEN i ELSE json_extract('{not json', '$.a') END AS v FROM n`
    const [late, lateFormat, early] = await Promise.all([
      runCli(['query', sql(2000), '--json'], vars),
      runCli(['query', sql(2000), '--format', 'json'], vars),
      runCli(['query', sql(1), '--json'], vars),
    ])
    for (const r of [late, lateFormat]) {
      expect(r.code).toBe(1)
      const rows = checkStreams(r) as { i: number; v: number }[]
      expect(rows.length).toBeGreaterThan(0)
      expect(rows.length).toBeLessThan(1999)
      expect(rows.every((row, k) => row.i === k + 1 && row.v === k + 1)).toBe(true)
      expect(r.stderr).toMatch(/^fsm-sync: malformed JSON \(the JSON array on stdout holds only the rows written before this error\)$/m)
    }
    // Failing before anything was written: the error document alone, as for any command.
    expect(early.code).toBe(1)
    expect(checkStreams(early)).toEqual({ error: { message: 'malformed JSON', exitCode: 1 } })
  })
})

describe('export, query and schema on a fresh account', () => {
  test.concurrent(
    'export at the default level: the result on stdout and nothing on stderr (no misfit in a fresh mirror)',
    async () => {
      // The mirror's own '' for what upstream gives no time (an API key's updated_at) is no misfit.
      const keys = await cliInProcess(['query', "SELECT count(*) AS n FROM api_keys WHERE updated_at = ''", '--json'], vars.FSM_DB!)
      expect(JSON.parse(keys.stdout)).toEqual([{ n: 1 }])
      const r = await runCli(['export', '--format', 'jsonl', '--out', tempDir(), '--json'], vars)
      expect(r.code, r.stderr).toBe(0)
      expect(r.stderr).toBe('')
      const manifest = checkStreams(r) as { tables: { name: string; nulledValues: number; nulledColumns: unknown[] }[] }
      expect(manifest.tables.find((t) => t.name === 'api_keys')).toMatchObject({ nulledValues: 0, nulledColumns: [] })
    },
    120_000,
  )

  test.concurrent('query writes what export writes: JSON columns as JSON values, CSV with CRLF', async () => {
    const dir = tempDir()
    const cli = (args: string[]) => cliInProcess(args, vars.FSM_DB!)
    const out = await cli(['export', '--format', 'csv', '--out', dir, '--tables', 'clients'])
    expect(out.code, out.stderr).toBe(0)
    const jsonl = tempDir()
    await cli(['export', '--format', 'jsonl', '--out', jsonl, '--tables', 'clients'])
    const sql = 'SELECT * FROM clients ORDER BY id'
    const csv = await cli(['query', sql, '--format', 'csv'])
    expect(csv.stdout).toBe(readFileSync(path.join(dir, 'clients.csv'), 'utf8'))
    expect(csv.stdout).toMatch(/^id,[^\n]*\r\n/)
    const rows = JSON.parse((await cli(['query', sql, '--json'])).stdout) as Record<string, unknown>[]
    const lines = readFileSync(path.join(jsonl, 'clients.jsonl'), 'utf8').trim().split('\n')
    expect(rows).toEqual(lines.map((l) => JSON.parse(l) as unknown))
    expect(typeof rows[0]!.raw).toBe('object')
  })

  test.concurrent("schema --json is the catalog of the account's data; --all adds the daemon's own tables", async () => {
    const cli = (args: string[]) => cliInProcess(args, vars.FSM_DB!)
    const [data, all] = [await cli(['schema', '--json']), await cli(['schema', '--json', '--all'])]
    const names = (r: { stdout: string }) => (JSON.parse(r.stdout) as { streams: { name: string }[] }).streams.map((s) => s.name)
    expect(names(data)).toEqual(expect.arrayContaining(['clients', 'client_fields', 'client_properties']))
    for (const internal of ['kysely_migration', 'mirror_probe', 'request_starts', 'sync_runs', 'change_log']) {
      expect(names(data)).not.toContain(internal)
      expect(names(all)).toContain(internal)
    }
    const text = await cli(['schema'])
    expect(text.stdout).not.toMatch(/^request_starts /m)
  })
})

describe('errors', () => {
  test.concurrent(
    'a rejected key: the table on stdout, one log line without a stack trace on stderr; --json gives a document',
    async () => {
      const bad = { ...vars, FSM_API_KEY: 'svc_live_0000000000000000000000000000000000000000000000' }
      const [text, json] = await Promise.all([
        runCli(['sync', '--stream', 'clients'], bad),
        runCli(['sync', '--stream', 'clients', '--json'], bad),
      ])
      expect(text.code).toBe(1)
      expect(text.stdout).toMatch(/^clients\s+sweep\s+error/m)
      expect(text.stdout).toContain('FSM_API_KEY was rejected (401 UNAUTHORIZED)')
      expect(text.stdout).not.toContain('{')
      const failed = logLines(text.stderr).find((l) => l.msg === 'sweep failed') as { err: { message: string } } | undefined
      expect(failed?.err.message).toContain('create a new one in the account settings')
      expect(failed?.err).not.toHaveProperty('stack')
      expect(text.stderr).not.toMatch(/\s+at /)
      expect(json.code).toBe(1)
      expect(checkStreams(json)).toMatchObject({ ok: false, runs: [{ stream: 'clients', outcome: 'error' }] })
    },
  )

  test.concurrent('webhooks register with an http:// URL: the refusal says how the emulator takes one', async () => {
    const r = await runCli(['webhooks', 'register', '--url', 'http://127.0.0.1:9/webhooks', '--json'], vars)
    expect(r.code).toBe(1)
    const doc = checkStreams(r) as { error: { message: string; exitCode: number } }
    expect(doc.error.exitCode).toBe(1)
    expect(doc.error.message).toContain('must start with https://')
    expect(doc.error.message).toContain('fsm-sync emulator --allow-http-webhooks')
  })
})
