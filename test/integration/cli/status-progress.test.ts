// `status` from another process while `sync` backfills: the running sync stores its progress with
// each page (the run's row), and `status --json` shows the backfill in progress with its estimate.
// The real CLI in two child processes against the emulator; a low budget keeps the backfill going.
import { writeFileSync } from 'node:fs'
import path from 'node:path'
import { expect, test } from 'vitest'
import { emulatorEnv } from '../../support/emulator-env.js'
import { cleanEnv, runCli, spawnCli } from '../../support/run-cli.js'
import { tempDir } from '../../support/temp-mirror.js'
import { until } from '../../support/daemon-env.js'

test('status --json, run beside a backfilling sync, shows the backfill in progress and what is left of it', async () => {
  const emu = await emulatorEnv({ counts: { clients: 100, jobs: 0, visitsPerJob: 0, invoices: 0, customRecords: 0 } })
  const dir = tempDir()
  const config = path.join(dir, 'config.json')
  // 20 rows a page: five requests for the clients; 6 a minute: after the burst of two, one every 10 s.
  writeFileSync(config, JSON.stringify({ sync: { pageSize: 20 } }))
  const env = cleanEnv({
    FSM_BASE_URL: emu.url,
    FSM_API_KEY: emu.apiKey,
    FSM_DB: path.join(dir, 'mirror.db'),
    FSM_CONFIG: config,
    FSM_RATE_LIMIT: '6',
  })
  const sync = spawnCli(['sync', '--stream', 'clients'], env)
  const exited = new Promise<number | null>((resolve) => sync.on('close', (code) => resolve(code)))
  try {
    const doc = await until(
      'a page of the backfill in status',
      async () => {
        const r = await runCli(['status', '--json'], env)
        if (r.stdout === '') return undefined
        const d = JSON.parse(r.stdout)
        const run = d.running?.find((x: { stream: string }) => x.stream === 'clients')
        return run?.progress?.rowsRead > 0 ? { r, d, run } : undefined
      },
      60_000,
    )
    const { r, d, run } = doc
    // A page committed its cursor: the mirror counts as synced (docs/commands.md, A mirror that was never synced).
    expect(r.code, r.stderr).toBe(0)
    expect(run).toMatchObject({ kind: 'sweep', ownerGone: false, progress: { backfill: true, budgetPerMinute: 6 } })
    const p = run.progress
    // Rows read (each once) and rows left (after the last answer's last row) make the 100 clients.
    expect(p.rowsRemaining).toBe(100 - p.rowsRead)
    expect(p.requestsRemaining).toBe(Math.ceil(p.rowsRemaining / 20))
    expect(p.rowsChanged).toBe(p.rowsRead)
    expect(d.backfill).toEqual({
      streams: ['clients'],
      rowsRemaining: p.rowsRemaining,
      requestsRemaining: p.requestsRemaining,
      secondsRemaining: Math.ceil((p.requestsRemaining / 6) * 60),
      budgetPerMinute: 6,
      sizeUnknown: [],
    })
    // The text form says the same, labelled.
    const text = await runCli(['status'], env)
    expect(text.stdout).toMatch(
      /^ {2}clients sweep \(backfill\): running \d[\dhms]*; \d+ rows? read, \d+ changed, \d+ requests?; ~\d+ rows? left \(~\d+ requests?\)/m,
    )
    expect(text.stdout).toMatch(/^backfill left: ~\d+ rows?, ~\d+ requests?, ~\S+ at 6 requests\/min$/m)
  } finally {
    sync.kill('SIGTERM')
    await exited
  }
}, 90_000)
