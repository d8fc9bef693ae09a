// `query` used to build the whole result in memory, and the table format crashed past ~125k rows
// (a spread over every row: "Maximum call stack size exceeded"). Rows now stream from SQLite to
// stdout with back-pressure, in every format. The real CLI runs against a mirror with 2,000,000
// change_log rows; the test counts lines as they arrive (never holding the output) and reads the
// child's peak RSS (VmHWM) as it exits.
import { spawn } from 'node:child_process'
import path from 'node:path'
import { beforeAll, describe, expect, test } from 'vitest'
import { openMirror } from '../../../src/store/sqlite/mirror-database.js'
import { SyncStateStore } from '../../../src/store/repositories/sync-state.js'
import { ROOT, cleanEnv } from '../../support/run-cli.js'
import { tempDir } from '../../support/temp-mirror.js'
import { PEAK_RSS_MARK } from '../../support/peak-rss-hook.js'

const ROWS = 2_000_000
/** Above the peak of a one-row query: a streamed result of any size stays well inside it. */
const HEADROOM_KB = 128 * 1024

interface Streamed {
  code: number | null
  lines: number
  head: string
  tail: string
  peakKb: number
  stderr: string
}

/** Runs `fsm-sync query` with the peak-RSS hook; keeps only a line count, the first and the last bytes. */
function streamQuery(db: string, sql: string, format: string): Promise<Streamed> {
  const child = spawn(
    process.execPath,
    [
      '--import',
      'tsx',
      '--import',
      path.join(ROOT, 'test/support/peak-rss-hook.ts'),
      path.join(ROOT, 'src/cli/entry.ts'),
      'query',
      sql,
      '--format',
      format,
    ],
    {
      cwd: ROOT,
      env: cleanEnv({ FSM_DB: db }),
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  )
  let lines = 0
  let head = ''
  let tail = ''
  let stderr = ''
  child.stdout.setEncoding('utf8').on('data', (d: string) => {
    for (let i = d.indexOf('\n'); i !== -1; i = d.indexOf('\n', i + 1)) lines++
    if (head.length < 4096) head += d.slice(0, 4096 - head.length)
    tail = (tail + d).slice(-4096)
  })
  child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d))
  return new Promise((resolve, reject) => {
    child.on('error', reject)
    child.on('close', (code) => {
      const peak = new RegExp(`${PEAK_RSS_MARK} (\\d+)`).exec(stderr)?.[1]
      resolve({ code, lines, head, tail, peakKb: Number(peak ?? NaN), stderr })
    })
  })
}

let db: string
let baselineKb: number
beforeAll(async () => {
  db = path.join(tempDir(), 'mirror.db')
  const m = await openMirror(db)
  m.sqlite.exec(`INSERT INTO change_log (table_name, record_id, op, updated_at, changed_at)
    WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < ${ROWS})
    SELECT 'jobs', printf('%024x', i), 'upsert', '2026-01-01T00:00:00.000Z', '2026-01-02T00:00:00.000Z' FROM n`)
  // A mirror that was synced: `query` refuses one nothing was ever synced into (require-synced.ts).
  const state = new SyncStateStore(m.sqlite)
  const now = new Date().toISOString()
  state.finishRun(state.startRun('sweep', 'jobs', now), { outcome: 'success', rows: ROWS, requests: 1 }, now)
  await m.close()
  const one = await streamQuery(db, 'SELECT 1 AS one', 'csv')
  expect(one.code, one.stderr).toBe(0)
  baselineKb = one.peakKb
  expect(baselineKb).toBeGreaterThan(0)
}, 60_000)

describe('query streams rows in constant memory', () => {
  test('SELECT * FROM change_log with 2,000,000 rows in the table format: every row printed, memory bounded', async () => {
    const r = await streamQuery(db, 'SELECT * FROM change_log', 'table')
    expect(r.code, r.stderr).toBe(0)
    expect(r.stderr).not.toContain('Maximum call stack')
    // Header, rule, the rows, the count.
    expect(r.lines).toBe(ROWS + 3)
    expect(r.head.split('\n')[0]).toMatch(/^seq\s+table_name\s+record_id\s+op\s+updated_at\s+changed_at$/)
    expect(r.tail).toMatch(/\n2000000\s+jobs\s+0{18}1e8480\s+upsert\s.*\n\(2000000 rows\)\n$/)
    expect(r.peakKb).toBeLessThan(baselineKb + HEADROOM_KB)
  }, 120_000)

  test.each([
    ['json', 500_000, 2],
    ['csv', 500_000, 1],
  ])(
    'the %s format streams too (%i rows), memory bounded',
    async (format, rows, extraLines) => {
      const r = await streamQuery(db, `SELECT * FROM change_log ORDER BY seq LIMIT ${rows}`, format)
      expect(r.code, r.stderr).toBe(0)
      expect(r.lines).toBe(rows + extraLines)
      if (format === 'json') {
        // One JSON document: the array opens, one object per line, and closes.
        expect(r.head.startsWith('[\n{"seq":1,"table_name":"jobs",')).toBe(true)
        expect(JSON.parse(r.head.split('\n')[1]!.replace(/,$/, ''))).toMatchObject({ seq: 1, op: 'upsert' })
        expect(
          r.tail.endsWith(
            `{"seq":${rows},"table_name":"jobs","record_id":"${rows.toString(16).padStart(24, '0')}","op":"upsert","updated_at":"2026-01-01T00:00:00.000Z","changed_at":"2026-01-02T00:00:00.000Z"}\n]\n`,
          ),
        ).toBe(true)
      } else {
        expect(r.head.split('\n')[0]).toBe('seq,table_name,record_id,op,updated_at,changed_at\r')
        expect(
          r.tail.endsWith(
            `\n${rows},jobs,${rows.toString(16).padStart(24, '0')},upsert,2026-01-01T00:00:00.000Z,2026-01-02T00:00:00.000Z\r\n`,
          ),
        ).toBe(true)
      }
      expect(r.peakKb).toBeLessThan(baselineKb + HEADROOM_KB)
    },
    120_000,
  )
})
