// `fsm-sync export --all-accounts` over a config file listing three accounts of one emulator, each
// synced into its own mirror: one export whose every table has account_id first and, per account, the
// rows of that account's own export; a mirror never synced or unreadable among them refuses the export.
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs'
import path from 'node:path'
import { Writable } from 'node:stream'
import { DuckDBInstance } from '@duckdb/node-api'
import { afterAll, beforeAll, describe, expect, test } from 'vitest'
import { main } from '../../../src/cli/main.js'
import type { AccountsExportManifest } from '../../../src/export/export-accounts.js'
import type { ExportManifest } from '../../../src/export/export-mirror.js'
import { query } from '../../support/daemon-env.js'
import { emulatorEnv, type EmulatorEnv } from '../../support/emulator-env.js'
import { cleanEnv, runCli } from '../../support/run-cli.js'
import { tempDir } from '../../support/temp-mirror.js'

const IDS = ['north', 'south', 'east'] as const
let emu: EmulatorEnv
let dataDir: string
let config: string

/** A config file listing `ids` under `dataDir`, the i-th with the key of the emulator's i-th account. */
function writeConfig(ids: readonly string[]): string {
  const dir = tempDir()
  const accounts = ids.map((id, i) => {
    const file = path.join(dir, `${id}.key`)
    writeFileSync(file, `${emu.accounts[i % emu.accounts.length]!.apiKey}\n`)
    return { id, apiKeyFile: file }
  })
  const file = path.join(dir, 'config.json')
  writeFileSync(file, JSON.stringify({ baseUrl: emu.url, dataDir, rateLimit: 100000, accounts }))
  return file
}

/** The CLI in this process (an export needs no child), its output captured. */
async function cli(args: string[], file = config): Promise<{ code: number; stdout: string; stderr: string }> {
  let stdout = ''
  let stderr = ''
  const sink = (f: (s: string) => void) => new Writable({ write: (c: Buffer, _e, cb) => (f(c.toString('utf8')), cb()) })
  const code = await main(['--config', file, ...args], {
    stdout: sink((s) => (stdout += s)),
    stderr: sink((s) => (stderr += s)),
    env: { FSM_LOG_LEVEL: 'silent' },
  })
  return { code, stdout, stderr }
}

const mirrorOf = (id: string) => path.join(dataDir, id, 'mirror.db')
const lines = (file: string) =>
  readFileSync(file, 'utf8')
    .split('\n')
    .filter((l) => l !== '')
    .map((l) => JSON.parse(l) as Record<string, unknown>)

beforeAll(async () => {
  emu = await emulatorEnv({ accounts: 3, counts: { clients: 4, jobs: 3, visitsPerJob: 1, invoices: 2, customRecords: 2 } })
  dataDir = tempDir()
  config = writeConfig(IDS)
  const runs = await Promise.all(IDS.map((id) => runCli(['--config', config, 'sync', '--account', id], cleanEnv())))
  for (const r of runs) expect(r.code, r.stderr).toBe(0)
}, 120_000)
afterAll(() => emu.close())

describe('export --all-accounts', () => {
  test('every table has account_id first, and its rows of each account are that account’s own export (jsonl); a single-account export has no account_id', async () => {
    const out = tempDir()
    const all = await cli(['export', '--all-accounts', '--format', 'jsonl', '--out', out, '--json'])
    expect(all.code, all.stderr).toBe(0)
    const manifest = JSON.parse(all.stdout) as AccountsExportManifest
    expect(JSON.parse(readFileSync(path.join(out, 'manifest.json'), 'utf8'))).toEqual(manifest)
    // Each account's snapshot at its own mirror's seq (the mirrors are idle).
    expect(manifest.accounts).toEqual(
      IDS.map((id) => ({ id, seq: query(mirrorOf(id), 'SELECT coalesce(max(seq), 0) AS s FROM change_log')[0]!.s })),
    )
    expect(manifest).not.toHaveProperty('seq')
    expect(manifest.tables.map((t) => t.name)).toEqual(expect.arrayContaining(['clients', 'jobs', 'visits', 'invoices']))

    for (const id of IDS) {
      const own = tempDir()
      const single = await cli(['export', '--account', id, '--format', 'jsonl', '--out', own, '--json'])
      expect(single.code, single.stderr).toBe(0)
      const mine = JSON.parse(single.stdout) as ExportManifest
      // The single-account shape is today's: no account_id, the snapshot's seq at the top.
      expect(mine.seq).toBe(manifest.accounts.find((a) => a.id === id)!.seq)
      for (const t of mine.tables) {
        expect(t.columns[0]!.name).not.toBe('account_id')
        expect(t).not.toHaveProperty('rowsByAccount')
        const merged = manifest.tables.find((m) => m.name === t.name)!
        expect(merged.primaryKey).toEqual(['account_id', ...t.primaryKey])
        expect(merged.columns[0]).toEqual({ name: 'account_id', kind: 'text', type: 'VARCHAR', nullable: false })
        expect(merged.rowsByAccount?.[id]).toBe(t.rows)
        const rows = lines(path.join(out, merged.file)).filter((r) => r.account_id === id)
        expect(rows.map((r) => Object.keys(r)[0])).toEqual(rows.map(() => 'account_id'))
        expect(rows.map(({ account_id: _, ...rest }) => rest)).toEqual(lines(path.join(own, t.file)))
        // And the mirror's own count, for a table the mirror holds as such.
        if (t.name === 'clients' || t.name === 'jobs') expect(t.rows).toBe(query(mirrorOf(id), `SELECT count(*) AS n FROM ${t.name}`)[0]!.n)
      }
      expect(Object.keys(manifest.tables.find((m) => m.name === 'clients')!.rowsByAccount!)).toEqual([...IDS])
    }
    const rowTotal = manifest.tables.reduce((n, t) => n + t.rows, 0)
    expect(all.stderr).toBe('')
    expect(rowTotal).toBeGreaterThan(0)
  })

  test('parquet: account_id is the first column and each account’s rows count as in its mirror', async () => {
    const out = tempDir()
    const r = await cli(['export', '--all-accounts', '--format', 'parquet', '--out', out, '--tables', 'clients,jobs'])
    expect(r.code, r.stderr).toBe(0)
    expect(r.stdout).toMatch(/^2 files, \d+ rows, parquet, 3 accounts \(north at seq \d+, south at seq \d+, east at seq \d+\), in /)
    const instance = await DuckDBInstance.create(':memory:')
    const duck = await instance.connect()
    try {
      for (const table of ['clients', 'jobs']) {
        const file = path.join(out, `${table}.parquet`)
        const cols = (await duck.runAndReadAll(`DESCRIBE SELECT * FROM '${file}'`)).getRowObjects()
        expect(cols[0]).toMatchObject({ column_name: 'account_id', column_type: 'VARCHAR' })
        const counts = (
          await duck.runAndReadAll(`SELECT account_id, count(*)::INTEGER AS n FROM '${file}' GROUP BY 1 ORDER BY 1`)
        ).getRowObjects()
        const expected = IDS.map((id) => ({ account_id: id, n: query(mirrorOf(id), `SELECT count(*) AS n FROM ${table}`)[0]!.n })).sort(
          (a, b) => a.account_id.localeCompare(b.account_id),
        )
        expect(counts).toEqual(expected)
        // The key (account_id, id) is unique over the accounts.
        const dup = (
          await duck.runAndReadAll(
            `SELECT count(*)::INTEGER AS n FROM (SELECT account_id, id FROM '${file}' GROUP BY 1, 2 HAVING count(*) > 1)`,
          )
        ).getRowObjects()
        expect(dup).toEqual([{ n: 0 }])
      }
    } finally {
      duck.closeSync()
      instance.closeSync()
    }
  })

  test('--all-accounts with --account, --after-seq or --consumer is a usage error; export without either still needs --account', async () => {
    const out = tempDir()
    const [both, after, consumer, bare] = await Promise.all([
      cli(['export', '--all-accounts', '--account', 'north', '--format', 'csv', '--out', out]),
      cli(['export', '--all-accounts', '--after-seq', '3', '--format', 'csv', '--out', out]),
      cli(['export', '--all-accounts', '--consumer', 'wh', '--format', 'csv', '--out', out]),
      cli(['export', '--format', 'csv', '--out', out]),
    ])
    expect([both.code, after.code, consumer.code, bare.code]).toEqual([2, 2, 2, 2])
    expect(both.stderr).toContain('--all-accounts exports every account: give it or --account, not both')
    expect(after.stderr).toContain(
      "--all-accounts writes full exports only, not --after-seq: export each account's changes with --account ID --after-seq",
    )
    expect(consumer.stderr).toContain('not --consumer')
    expect(bare.stderr).toContain('--account is required: the config file lists 3 accounts (north, south, east)')
    expect(readdirSync(out)).toEqual([])
  })

  test('a mirror never synced, or unreadable, among the accounts refuses the whole export naming the account; nothing is written', async () => {
    const out = tempDir()
    // west's mirror does not exist: never synced.
    const never = await cli(['export', '--all-accounts', '--format', 'csv', '--out', out], writeConfig(['north', 'south', 'west']))
    expect(never.code).toBe(1)
    expect(never.stderr).toContain(`fsm-sync: account west: no mirror at ${mirrorOf('west')}: nothing was ever synced there`)
    expect(existsSync(path.join(out, 'manifest.json'))).toBe(false)

    const junk = mirrorOf('junk')
    mkdirSync(path.dirname(junk), { recursive: true })
    writeFileSync(junk, 'this is not a database, only text long enough to be read as a header of one'.repeat(20))
    const broken = await cli(['export', '--all-accounts', '--format', 'jsonl', '--out', out, '--json'], writeConfig(['north', 'junk']))
    expect(broken.code).toBe(1)
    expect(broken.stderr).toMatch(/^fsm-sync: account junk: the mirror .*junk\/mirror\.db/m)
    expect(JSON.parse(broken.stdout)).toEqual({ error: { message: expect.stringContaining('account junk:'), exitCode: 1 } })
    expect(readdirSync(out)).toEqual([])
  })
})
