// A configuration without an accounts list, and a mirror an older release left at the default
// path (./data/fsm-mirror.db), run as before under the accounts daemon: the one account `default`
// opens that mirror where it is, migrates it, syncs it exact, and /readyz keeps its top-level fields.
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs'
import path from 'node:path'
import Database from 'better-sqlite3'
import { expect, test } from 'vitest'
import { compareMirror } from '../../support/compare-mirror.js'
import { emulatorEnv } from '../../support/emulator-env.js'
import { tempDir } from '../../support/temp-mirror.js'
import { freePort, get, query, startRun, until } from '../../support/daemon-env.js'
import { cleanEnv } from '../../support/run-cli.js'
import { idleSchedules } from '../../support/schedules.js'

const LEGACY_SCHEMA = readFileSync(new URL('../../fixtures/mirror-0009.sql', import.meta.url), 'utf8')

test('a single-account config and an older mirror at the default path open and sync unchanged', async () => {
  const emu = await emulatorEnv({ counts: { clients: 4, jobs: 3, visitsPerJob: 1, invoices: 2, customRecords: 0 } })
  const cwd = tempDir()
  const db = path.join(cwd, 'data', 'fsm-mirror.db')
  mkdirSync(path.dirname(db))
  const legacy = new Database(db)
  legacy.exec(LEGACY_SCHEMA)
  legacy.close()
  writeFileSync(path.join(cwd, 'config.json'), JSON.stringify({ schedules: idleSchedules({ sweep: 'continuous' }) }))
  const port = await freePort()
  // No FSM_DB, no accounts: the mirror is today's default, relative to the folder it runs in.
  const run = startRun(
    cleanEnv({
      FSM_CONFIG: 'config.json',
      FSM_BASE_URL: emu.url,
      FSM_API_KEY: emu.apiKey,
      FSM_RATE_LIMIT: '100000',
      FSM_HTTP_HOST: '127.0.0.1',
      FSM_HTTP_PORT: String(port),
    }),
    [],
    cwd,
  )
  try {
    const exact = async () => {
      const c = await compareMirror(
        (resource) => emu.state(resource),
        (sql, ...params) => query(db, sql, ...params),
        [],
      )
      return c.mismatches.length === 0 && c.compared.clients === 4
    }
    await until('the mirror exact', exact, 60_000)
    const ready = await get(`http://127.0.0.1:${port}/readyz`)
    expect(ready.status).toBe(200)
    const body = JSON.parse(ready.text) as Record<string, any>
    // Today's fields at the top level, as before; the one account under `accounts`.
    expect(body).toMatchObject({ status: 'ready', ready: true, running: expect.any(Array), next: expect.any(Object) })
    expect(body.migrations).toEqual(body.accounts.default.migrations)
    expect(Object.keys(body.accounts)).toEqual(['default'])
    expect(body.accounts.default).toMatchObject({ state: 'running', ready: true })
    // Nothing moved: no folder per account, no second mirror.
    expect(existsSync(path.join(cwd, 'data', 'default'))).toBe(false)
  } finally {
    run.child.kill('SIGTERM')
  }
  expect(await run.exited, run.output()).toEqual({ code: 0, signal: null })
}, 120_000)
