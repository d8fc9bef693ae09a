// Many accounts of one emulator in one in-process daemon: an accounts config file (keys in
// variables, mirrors under a temporary dataDir) loaded the way `fsm-sync run` loads it, a logger
// whose lines a test reads, and the exactness check of one account's mirror.
import { Writable } from 'node:stream'
import { writeFileSync } from 'node:fs'
import path from 'node:path'
import { RECORD_STREAMS } from '../../connectors/index.js'
import { loadAccounts, type LoadedConfig } from '../../src/config/index.js'
import type { AccountRuntime } from '../../src/daemon/account-runtime.js'
import { createLogger, type Logger } from '../../src/log/logger.js'
import type { AccountHandle, EmulatorHandle } from '../../emulator/index.js'
import { compareMirror, type Comparison } from './compare-mirror.js'
import { idleSchedules } from './schedules.js'
import { tempDir } from './temp-mirror.js'

export interface AccountsEnv {
  dataDir: string
  file: string
  env: Record<string, string>
  /** Writes the file with these accounts (entries beyond `id` and the key merged in) and loads it. */
  load(
    accounts: readonly (AccountHandle | { handle: AccountHandle; [key: string]: unknown })[],
    top?: Record<string, unknown>,
  ): LoadedConfig
}

/** The variable holding an account's key. */
export const keyVariable = (a: AccountHandle) => `KEY_${a.id.replace(/-/g, '_').toUpperCase()}`

export function accountsEnv(emu: EmulatorHandle, rateLimit = 100_000): AccountsEnv {
  const dataDir = tempDir()
  const file = path.join(dataDir, 'config.json')
  const env: Record<string, string> = {
    FSM_BASE_URL: emu.url,
    FSM_HTTP_HOST: '127.0.0.1',
    FSM_HTTP_PORT: '0',
    FSM_DATA_DIR: dataDir,
    ...Object.fromEntries(emu.accounts.map((a) => [keyVariable(a), a.apiKey])),
  }
  return {
    dataDir,
    file,
    env,
    load: (accounts, top = {}) => {
      const entries = accounts.map((e) => {
        const { handle, ...rest } = 'handle' in e ? e : { handle: e }
        return { id: handle.id, apiKeyEnv: keyVariable(handle), ...rest }
      })
      const content = { rateLimit, schedules: idleSchedules({ sweep: 'continuous' }), ...top, accounts: entries }
      writeFileSync(file, JSON.stringify(content))
      return loadAccounts({ file, env })
    },
  }
}

export function capturedLogger(level = 'info'): { lines: Record<string, unknown>[]; logger: Logger } {
  const lines: Record<string, unknown>[] = []
  const destination = new Writable({
    write: (chunk: Buffer, _e, cb) => {
      for (const line of chunk.toString('utf8').split('\n')) if (line !== '') lines.push(JSON.parse(line) as Record<string, unknown>)
      cb()
    },
  })
  return { lines, logger: createLogger({ level, destination }) }
}

/** The account's mirror against the emulator's record of it (the four record streams). */
export function compareAccount(runtime: AccountRuntime, account: AccountHandle): Promise<Comparison> {
  return compareMirror(
    (resource) => account.control<Record<string, unknown>[]>('GET', `/state/${resource}`),
    (sql, ...params) => runtime.app.mirror.sqlite.prepare(sql).all(...params) as Record<string, unknown>[],
    [],
    RECORD_STREAMS,
  )
}

/** The most requests the account's key started in any 60 s window of the emulator's request log. */
export async function busiestMinute(account: AccountHandle): Promise<{ most: number; statuses: Record<number, number> }> {
  const log = await account.control<{ startedAt: string; status: number }[]>('GET', '/requests')
  const times = log.map((r) => Date.parse(r.startedAt)).sort((a, b) => a - b)
  let most = 0
  for (let i = 0, j = 0; j < times.length; j++) {
    while (times[j]! - times[i]! >= 60_000) i++
    most = Math.max(most, j - i + 1)
  }
  const statuses: Record<number, number> = {}
  for (const r of log) statuses[r.status] = (statuses[r.status] ?? 0) + 1
  return { most, statuses }
}
