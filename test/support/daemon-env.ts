// A `fsm-sync run` child process against an emulator: free port, config file, output capture,
// polling helpers (conditions, never durations), and a read-only look at its mirror.
import type { ChildProcess } from 'node:child_process'
import { writeFileSync } from 'node:fs'
import path from 'node:path'
import Database from 'better-sqlite3'
import { request } from 'undici'
import { cleanEnv, spawnCli } from './run-cli.js'
import type { EmulatorEnv } from './emulator-env.js'

export { freePort } from './free-port.js'

export { NEVER } from './schedules.js'

export function daemonEnv(
  emu: EmulatorEnv,
  dir: string,
  port: number,
  config: Record<string, unknown>,
  extra: Record<string, string> = {},
): Record<string, string> {
  const file = path.join(dir, 'config.json')
  writeFileSync(file, JSON.stringify(config))
  return cleanEnv({
    FSM_BASE_URL: emu.url,
    FSM_API_KEY: emu.apiKey,
    FSM_DB: path.join(dir, 'mirror.db'),
    FSM_RATE_LIMIT: '100000',
    FSM_HTTP_HOST: '127.0.0.1',
    FSM_HTTP_PORT: String(port),
    FSM_CONFIG: file,
    ...extra,
  })
}

export interface Running {
  child: ChildProcess
  output: () => string
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>
}

export function startRun(env: Record<string, string>, args: readonly string[] = [], cwd?: string): Running {
  const child = spawnCli(['run', ...args], env, cwd)
  let out = ''
  child.stdout?.setEncoding('utf8').on('data', (d: string) => (out += d))
  child.stderr?.setEncoding('utf8').on('data', (d: string) => (out += d))
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.on('close', (code, signal) => resolve({ code, signal })),
  )
  return { child, output: () => out, exited }
}

export async function until<T>(
  what: string,
  probe: () => Promise<T | undefined | false> | T | undefined | false,
  limitMs = 30_000,
): Promise<T> {
  const end = Date.now() + limitMs
  for (;;) {
    const v = await probe()
    if (v !== undefined && v !== false) return v
    if (Date.now() > end) throw new Error(`gave up waiting for ${what}`)
    await new Promise((r) => setTimeout(r, 100))
  }
}

export async function get(url: string): Promise<{ status: number; text: string }> {
  try {
    const res = await request(url)
    return { status: res.statusCode, text: await res.body.text() }
  } catch {
    return { status: 0, text: '' }
  }
}

/** Runs `sql` on the mirror through a short-lived read-only connection. */
export function query(db: string, sql: string, ...params: unknown[]): Record<string, unknown>[] {
  let conn: Database.Database
  try {
    conn = new Database(db, { readonly: true, fileMustExist: true })
  } catch {
    return []
  }
  try {
    return conn.prepare(sql).all(...params) as Record<string, unknown>[]
  } catch (err) {
    if (/no such table/.test((err as Error).message)) return []
    throw err
  } finally {
    conn.close()
  }
}
