// SIGHUP (a closed terminal, some container runtimes) used to end `fsm-sync run` at once, by
// Node's default, without the clean stop. It is now logged and handled like SIGTERM: exit 0.
import { expect, test } from 'vitest'
import { emulatorEnv } from '../../support/emulator-env.js'
import { tempDir } from '../../support/temp-mirror.js'
import { daemonEnv, freePort, get, startRun, until } from '../../support/daemon-env.js'
import { idleSchedules } from '../../support/schedules.js'

test('SIGHUP is logged and stops `fsm-sync run` cleanly, like SIGTERM (exit 0)', async () => {
  const emu = await emulatorEnv({ counts: { clients: 2, jobs: 2, visitsPerJob: 1, invoices: 1, customRecords: 0 } })
  const port = await freePort()
  const schedules = idleSchedules({ sweep: 'off' })
  const run = startRun(daemonEnv(emu, tempDir(), port, { schedules }, { FSM_LOG_LEVEL: 'info' }))
  await until('/readyz 200', async () => (await get(`http://127.0.0.1:${port}/readyz`)).status === 200)
  run.child.kill('SIGHUP')
  expect(await run.exited, run.output()).toEqual({ code: 0, signal: null })
  const logs = run
    .output()
    .split('\n')
    .filter((l) => l.startsWith('{'))
    .map((l) => JSON.parse(l) as { msg: string; signal?: string })
  expect(logs).toContainEqual(expect.objectContaining({ msg: 'stop requested', signal: 'SIGHUP' }))
  expect(logs.map((l) => l.msg)).toContain('stopped cleanly')
}, 60_000)
