// compose.yaml's warehouse and daemon share one POSTGRES_PASSWORD: Postgres takes it raw, and the
// daemon must log in with it whatever it holds (`@:/%#?` are URL syntax). The file's own settings,
// pointed at the test's server, connect; the password stays out of the output.
import { readFileSync } from 'node:fs'
import path from 'node:path'
import pg from 'pg'
import { expect, inject, test } from 'vitest'
import { loadConfig, postgresSecrets } from '../../../src/config/index.js'
import { createDatabase, pgQuery } from '../../support/postgres-server.js'
import { cleanEnv, ROOT, runCli } from '../../support/run-cli.js'

const PASSWORD = 'p@ss:w/o%rd#?x=1&$ 25'

/** `NAME: value` lines of one service's `environment:` in compose.yaml, Compose's `${VAR...}` substituted. */
function composeEnvironment(service: string, vars: Record<string, string>): Record<string, string> {
  const text = readFileSync(path.join(ROOT, 'compose.yaml'), 'utf8')
  const block = new RegExp(`^  ${service}:\\n((?:    .*\\n|\\n)*)`, 'm').exec(text)?.[1] ?? ''
  const env = new RegExp(`^    environment:\\n((?:      .*\\n)*)`, 'm').exec(block)?.[1] ?? ''
  const out: Record<string, string> = {}
  for (const m of env.matchAll(/^ {6}([A-Z_]+): (.*)$/gm))
    out[m[1]!] = m[2]!.replace(/\$\{([A-Z_]+)(?::\?[^}]*)?\}/g, (_, name: string) => vars[name] ?? '')
  return out
}

test('a password with URL syntax in it logs in as compose.yaml passes it, and is never printed', async () => {
  const vars = { POSTGRES_PASSWORD: PASSWORD, FSM_BASE_URL: 'http://127.0.0.1:9', FSM_API_KEY: 'svc_live_compose' }
  const warehouse = composeEnvironment('warehouse', vars)
  const daemon = composeEnvironment('fsm-sync', vars)
  expect(warehouse.POSTGRES_PASSWORD).toBe(PASSWORD)

  // The warehouse container's first start: its user with the password as given, and its database.
  const server = new URL(inject('postgresUrl'))
  const user = `${warehouse.POSTGRES_USER}_${process.pid}`
  await pgQuery(server.toString(), `CREATE ROLE ${user} LOGIN PASSWORD '${PASSWORD}'`)
  const database = new URL(await createDatabase(server.toString())).pathname.slice(1)
  // compose.yaml's URL, aimed at the test's server: its host, port, this user and database.
  const url = new URL(daemon.FSM_POSTGRES_URL!)
  expect([url.hostname, url.port, url.username, url.pathname]).toEqual([
    'warehouse',
    '5432',
    warehouse.POSTGRES_USER,
    `/${warehouse.POSTGRES_DB}`,
  ])
  url.host = `${server.hostname}:${server.port}`
  url.username = user
  url.pathname = `/${database}`
  const env = { ...daemon, FSM_POSTGRES_URL: url.toString(), FSM_DB: '/nonexistent/fsm-mirror.db' }

  const config = loadConfig({ env })
  const client = new pg.Client({ connectionString: config.destination.postgres.url })
  await client.connect()
  try {
    expect((await client.query<{ u: string }>('SELECT current_user AS u')).rows[0]?.u).toBe(user)
  } finally {
    await client.end()
  }
  // Both the password and the URL carrying it are scrubbed from every log line.
  expect(postgresSecrets(config.destination.postgres.url)).toContain(PASSWORD)

  const doctor = await runCli(['doctor'], cleanEnv(env))
  expect(doctor.stdout).toMatch(new RegExp(`✓ Postgres connection: connected to 127\\.0\\.0\\.1:\\d+/${database} as ${user}`))
  expect(doctor.stdout + doctor.stderr).not.toContain(PASSWORD)
  expect(doctor.stdout + doctor.stderr).not.toContain(encodeURIComponent(PASSWORD))
})

test('FSM_POSTGRES_PASSWORD without a URL is a configuration error naming it', () => {
  expect(() => loadConfig({ env: { FSM_POSTGRES_PASSWORD: 'x' } })).toThrow(/FSM_POSTGRES_PASSWORD/)
})
