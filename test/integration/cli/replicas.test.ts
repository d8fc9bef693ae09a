// `fsm-sync replicas` as a user runs it (a child process) against the suite's Postgres server, where
// two replicas (Coordinators in this process) registered and took the configured accounts, and a
// third is stopping: each replica with its state, heartbeat age and accounts, the accounts waiting.
import { randomUUID } from 'node:crypto'
import { writeFileSync } from 'node:fs'
import path from 'node:path'
import pg from 'pg'
import { afterAll, beforeAll, describe, expect, inject, test } from 'vitest'
import { ensureCoordinationSchema } from '../../../src/coordination/coordination-schema.js'
import { Coordinator } from '../../../src/coordination/coordinator.js'
import { markStopping, registerReplica } from '../../../src/coordination/membership.js'
import { createDatabase } from '../../support/postgres-server.js'
import { cleanEnv, runCli } from '../../support/run-cli.js'
import { tempDir } from '../../support/temp-mirror.js'

const OWNED = ['north', 'south', 'east', 'centre']
let url: string
let db: pg.Client
const coordinators: Coordinator[] = []

/** A config file listing `ids`, each with a key from the environment. */
function configOf(ids: readonly string[]): string {
  const dir = tempDir()
  const file = path.join(dir, 'config.json')
  writeFileSync(file, JSON.stringify({ dataDir: dir, accounts: ids.map((id) => ({ id, apiKeyEnv: 'KEY' })) }))
  return file
}

const replicas = (ids: readonly string[], ...args: string[]) =>
  runCli(['--config', configOf(ids), 'replicas', ...args], cleanEnv({ FSM_POSTGRES_URL: url, KEY: 'svc_live_test' }))

beforeAll(async () => {
  url = await createDatabase(inject('postgresUrl'), 'fsm_replicas_cli')
  db = new pg.Client({ connectionString: url })
  await db.connect()
  const tables = await ensureCoordinationSchema(db)
  const noop = () => undefined
  for (const name of ['r-a', 'r-b']) {
    const c = new Coordinator({
      db,
      tables,
      me: { name, incarnation: randomUUID() },
      accounts: () => OWNED,
      onAcquired: noop,
      onStop: noop,
    })
    await c.register()
    coordinators.push(c)
  }
  // Both registered first: each takes its rendezvous share at its first heartbeat.
  for (const c of coordinators) await c.tick()
  const stopping = { name: 'r-c', incarnation: randomUUID() }
  await registerReplica(db, tables, stopping)
  await markStopping(db, tables, stopping)
})

afterAll(async () => {
  for (const c of coordinators) await c.stop().catch(() => undefined)
  await db?.end()
})

describe('fsm-sync replicas', () => {
  test('--json: each replica with its state, heartbeat age and accounts; the unowned account waits (exit 1)', async () => {
    const r = await replicas([...OWNED, 'west'], '--json')
    expect(r.stderr).not.toContain(url)
    expect(r.code).toBe(1)
    const report = JSON.parse(r.stdout) as {
      schema: string
      replicas: { name: string; state: string; heartbeatAgeMs: number; accounts: string[] }[]
      waiting: string[]
    }
    expect(report.schema).toBe('fsm_coordination')
    expect(report.replicas.map((x) => [x.name, x.state])).toEqual([
      ['r-a', 'live'],
      ['r-b', 'live'],
      ['r-c', 'stopping'],
    ])
    const [a, b, c] = report.replicas
    expect([...a!.accounts, ...b!.accounts].sort()).toEqual([...OWNED].sort())
    expect(a!.accounts.sort()).toEqual(coordinators[0]!.owned())
    expect(b!.accounts.sort()).toEqual(coordinators[1]!.owned())
    expect(c!.accounts).toEqual([])
    for (const x of report.replicas) expect(x.heartbeatAgeMs).toBeGreaterThanOrEqual(0)
    expect(report.waiting).toEqual(['west'])
  })

  test('text, every account owned: one line per replica, exit 0', async () => {
    const r = await replicas(OWNED)
    expect(r.code).toBe(0)
    const lines = r.stdout.trim().split('\n')
    expect(lines[0]).toMatch(/^r-a {2}live {2}heartbeat \d+\.\d s ago {2}/)
    expect(lines[2]).toMatch(/^r-c {2}stopping .* no account$/)
    expect(lines.at(-1)).toBe('every account has an owner')
  })

  test('without FSM_POSTGRES_URL: a usage error naming the setting (exit 2)', async () => {
    const r = await runCli(['--config', configOf(OWNED), 'replicas'], cleanEnv({ KEY: 'svc_live_test' }))
    expect(r.code).toBe(2)
    expect(r.stderr).toContain('FSM_POSTGRES_URL')
  })
})
