// `sync --stream widgets` used to run and report the name as "not built yet" (exit 1), and
// `reconcile --stream company` did nothing and exited 0. Both are usage errors now (exit 2) that
// list the valid names; nothing is run.
import path from 'node:path'
import { describe, expect, test } from 'vitest'
import { emulatorEnv } from '../../support/emulator-env.js'
import { cleanEnv, runCli } from '../../support/run-cli.js'
import { tempDir } from '../../support/temp-mirror.js'
import { existsSync } from 'node:fs'
import { streamOptionProblem } from '../../../src/cli/stream-option.js'

async function env() {
  const emu = await emulatorEnv({ counts: { clients: 2, jobs: 1, visitsPerJob: 1, invoices: 1, customRecords: 0 } })
  const db = path.join(tempDir(), 'mirror.db')
  return { db, vars: cleanEnv({ FSM_BASE_URL: emu.url, FSM_API_KEY: emu.apiKey, FSM_DB: db, FSM_RATE_LIMIT: '100000' }) }
}

describe('--stream names are checked before anything runs', () => {
  test('sync --stream widgets: an unknown stream is a usage error (exit 2) listing the valid names', async () => {
    const { db, vars } = await env()
    const r = await runCli(['sync', '--stream', 'jobs', '--stream', 'widgets'], vars)
    expect(r.code, r.stdout + r.stderr).toBe(2)
    expect(r.stderr).toContain(
      '--stream widgets: no such stream; sync takes: clients, jobs, visits, invoices, items, taxes, team, job_forms, company, webhooks, api_keys, objects, or objects:<slug>',
    )
    expect(existsSync(db)).toBe(false)
  })

  test('reconcile --stream company: a stream reconcile cannot reconcile is a usage error (exit 2) listing the reconcilable ones', async () => {
    const { db, vars } = await env()
    const r = await runCli(['reconcile', '--stream', 'company'], vars)
    expect(r.code, r.stdout + r.stderr).toBe(2)
    expect(r.stderr).toContain('--stream company: reconcile has nothing to do for it')
    expect(r.stderr).toContain('reconcile takes: clients, jobs, visits, invoices, objects, or objects:<slug>')
    expect(existsSync(db)).toBe(false)
  })

  test('reconcile --stream widgets: the names listed are the ones reconcile takes, and each of them is taken', async () => {
    const { db, vars } = await env()
    const r = await runCli(['reconcile', '--stream', 'widgets'], vars)
    expect(r.code, r.stdout + r.stderr).toBe(2)
    const listed = /--stream widgets: no such stream; reconcile takes: (.*), or objects:<slug>/.exec(r.stderr)?.[1]?.split(', ')
    expect(listed).toEqual(['clients', 'jobs', 'visits', 'invoices', 'objects'])
    for (const name of [...listed!, 'objects:equipment']) expect(streamOptionProblem('reconcile', name), name).toBeUndefined()
    for (const name of ['items', 'company', 'clients:x']) expect(streamOptionProblem('reconcile', name), name).toBeDefined()
    expect(existsSync(db)).toBe(false)
  })

  test('a reconcilable stream still runs', async () => {
    const { vars } = await env()
    const sync = await runCli(['sync', '--stream', 'clients'], vars)
    expect(sync.code, sync.stderr).toBe(0)
    const r = await runCli(['reconcile', '--stream', 'clients'], vars)
    expect(r.code, r.stderr).toBe(0)
    expect(r.stdout).toMatch(/^clients\s+reconcile\s+success/m)
  })
})
