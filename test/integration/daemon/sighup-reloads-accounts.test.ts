// SIGHUP makes `fsm-sync run` read its config again and apply the accounts list (an account added,
// one removed, the rest running on); an invalid file is refused in one line and the running set
// kept; a file changed without a signal is seen too. SIGTERM still stops it cleanly (exit 0).
import { writeFileSync } from 'node:fs'
import path from 'node:path'
import { expect, test } from 'vitest'
import { emulatorEnv } from '../../support/emulator-env.js'
import { tempDir } from '../../support/temp-mirror.js'
import { freePort, get, startRun, until } from '../../support/daemon-env.js'
import { keyVariable } from '../../support/accounts-env.js'
import { cleanEnv } from '../../support/run-cli.js'
import { idleSchedules } from '../../support/schedules.js'

type Emulator = Awaited<ReturnType<typeof emulatorEnv>>

/** A config file listing accounts of `emu` (sweeps off), the environment of a `run` on it, and its /readyz accounts. */
async function reloadEnv(emu: Emulator) {
  const dir = tempDir()
  const file = path.join(dir, 'config.json')
  const write = (accounts: unknown) => writeFileSync(file, JSON.stringify({ schedules: idleSchedules({ sweep: 'off' }), accounts }))
  const entry = (h: Emulator['accounts'][number]) => ({ id: h.id, apiKeyEnv: keyVariable(h) })
  const port = await freePort()
  const env = cleanEnv({
    FSM_CONFIG: file,
    FSM_BASE_URL: emu.url,
    FSM_DATA_DIR: dir,
    FSM_RATE_LIMIT: '100000',
    FSM_HTTP_HOST: '127.0.0.1',
    FSM_HTTP_PORT: String(port),
    FSM_LOG_LEVEL: 'info',
    ...Object.fromEntries(emu.accounts.map((h) => [keyVariable(h), h.apiKey])),
  })
  const accounts = async () => {
    const r = await get(`http://127.0.0.1:${port}/readyz`)
    return r.status === 200 ? Object.keys((JSON.parse(r.text) as { accounts: object }).accounts).sort() : undefined
  }
  return { write, entry, env, accounts }
}

test('SIGHUP applies the edited accounts list without a restart; an invalid file is refused; a later edit is seen alone; SIGTERM still stops (exit 0)', async () => {
  const emu = await emulatorEnv({ accounts: 3, counts: { clients: 2, jobs: 2, visitsPerJob: 1, invoices: 1, customRecords: 0 } })
  const [a, b, c] = emu.accounts as [(typeof emu.accounts)[0], (typeof emu.accounts)[0], (typeof emu.accounts)[0]]
  const { write, entry, env, accounts } = await reloadEnv(emu)
  write([entry(a), entry(b)])
  const run = startRun(env)
  await until('/readyz 200 with two accounts', async () => (await accounts())?.join() === [a.id, b.id].join(), 60_000)

  write([entry(a), entry(c)])
  run.child.kill('SIGHUP')
  await until('the new list applied', async () => (await accounts())?.join() === [a.id, c.id].join(), 60_000)

  // An invalid file: one line naming the problem, the running accounts kept.
  write([entry(a), { id: 'Not Valid', apiKeyEnv: keyVariable(b) }])
  run.child.kill('SIGHUP')
  await until('the refusal logged', () => /configuration not reloaded: .*keeping the running accounts/.test(run.output()), 30_000)
  expect(await accounts()).toEqual([a.id, c.id])

  // No signal: the file written again is seen by the watcher on its own (polled every 2 s).
  write([entry(a), entry(b), entry(c)])
  await until('the file change applied', async () => (await accounts())?.join() === [a.id, b.id, c.id].join(), 30_000)

  run.child.kill('SIGTERM')
  expect(await run.exited, run.output()).toEqual({ code: 0, signal: null })
  const logs = run
    .output()
    .split('\n')
    .filter((l) => l.startsWith('{'))
    .map((l) => JSON.parse(l) as { msg: string; signal?: string; account?: string; removed?: string[]; added?: string[] })
  expect(logs).toContainEqual(expect.objectContaining({ msg: 'the accounts list is applied', added: [c.id], removed: [b.id] }))
  expect(logs).toContainEqual(expect.objectContaining({ msg: 'the account stopped: its mirror stays on disk', account: b.id }))
  // Each SIGHUP asked for a reload (and none stopped the daemon).
  expect(logs.filter((l) => l.msg === 'configuration reload requested')).toHaveLength(2)
  expect(logs.filter((l) => l.msg === 'stop requested').map((l) => l.signal)).toEqual(['SIGTERM'])
  expect(logs.map((l) => l.msg)).toContain('stopped cleanly')
}, 120_000)

test('a SIGHUP or SIGTERM while the accounts open ends nothing early: the reload is done once they run, the stop after the start', async () => {
  const emu = await emulatorEnv({ accounts: 2, counts: { clients: 2, jobs: 1, visitsPerJob: 1, invoices: 1, customRecords: 0 } })
  const [a, b] = emu.accounts as [(typeof emu.accounts)[0], (typeof emu.accounts)[0]]
  const { write, entry, env, accounts } = await reloadEnv(emu)
  write([entry(a)])
  // The first line an account logs as it opens: the process is past its start-up, the daemon not started yet.
  const opening = (out: string) => out.includes('schedules switched off')
  const run = startRun(env)
  await until('the account opening', () => opening(run.output()), 60_000)
  write([entry(a), entry(b)])
  run.child.kill('SIGHUP')
  await until('the reload applied', async () => (await accounts())?.join() === [a.id, b.id].join(), 60_000)

  const second = startRun({ ...env, FSM_HTTP_PORT: String(await freePort()) })
  await until('the accounts opening', () => opening(second.output()), 60_000)
  second.child.kill('SIGTERM')
  expect(await second.exited, second.output()).toEqual({ code: 0, signal: null })
  expect(second.output()).toMatch(/stopped cleanly/)
  run.child.kill('SIGTERM')
  expect(await run.exited, run.output()).toEqual({ code: 0, signal: null })
}, 120_000)
