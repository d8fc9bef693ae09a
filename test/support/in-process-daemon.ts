// The configuration of a daemon started in the test's own process against an emulator: a mirror in
// a temporary folder, a loopback listener on any free port, a budget that never holds a request,
// and every schedule off, so the test decides what runs (`daemon.scheduler.runNow(...)`).
import path from 'node:path'
import { loadConfig, SCHEDULE_OFF, type Config, type ConfigInput } from '../../src/config/index.js'
import type { EmulatorEnv } from './emulator-env.js'
import { tempDir } from './temp-mirror.js'

export function inProcessDaemonConfig(emu: Pick<EmulatorEnv, 'url' | 'apiKey'>, overrides: ConfigInput = {}): Config {
  const env = {
    FSM_BASE_URL: emu.url,
    FSM_API_KEY: emu.apiKey,
    FSM_DB: path.join(tempDir(), 'mirror.db'),
    FSM_RATE_LIMIT: '100000',
    FSM_HTTP_HOST: '127.0.0.1',
    FSM_HTTP_PORT: '0',
  }
  const scheduleNames = Object.keys(loadConfig({ env }).schedules)
  const schedules = Object.fromEntries(scheduleNames.map((name) => [name, SCHEDULE_OFF]))
  return loadConfig({ env, overrides: { ...overrides, schedules } })
}
