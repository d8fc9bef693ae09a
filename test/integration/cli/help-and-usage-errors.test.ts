import { describe, expect, test } from 'vitest'
import { streamNamesText } from '../../../src/cli/stream-option.js'
import { packageInfo } from '../../../src/config/package-info.js'
import { cleanEnv, runCli } from '../../support/run-cli.js'

const COMMANDS = ['run', 'sync', 'reconcile', 'status', 'query', 'schema', 'export', 'trigger', 'webhooks', 'doctor', 'emulator', 'demo']

describe('the command line: help, version and usage errors', () => {
  test('--help lists every command of docs/commands.md', async () => {
    const r = await runCli(['--help'])
    expect(r.code).toBe(0)
    for (const c of COMMANDS) expect(r.stdout).toMatch(new RegExp(`fsm-sync ${c}\\b`))
  })

  test('--version prints the package version', async () => {
    const r = await runCli(['--version'])
    expect(r.code).toBe(0)
    expect(r.stdout.trim()).toBe(packageInfo().version)
  })

  test.each(COMMANDS)('%s --help works', async (c) => {
    const r = await runCli([c, '--help'])
    expect(r.code).toBe(0)
    expect(r.stdout).toContain(`fsm-sync ${c}`)
    const help = r.stdout.replace(/\s+/g, ' ')
    // Where --stream is taken, the help lists the names it takes (from the lists the check uses).
    if (c === 'sync' || c === 'reconcile' || c === 'run') expect(help).toContain(`one of: ${streamNamesText(c)}`)
    if (c === 'sync') expect(help).toContain('clients, jobs, visits, invoices, items')
    if (c === 'reconcile') expect(help).toContain('one of: clients, jobs, visits, invoices, objects, or objects:<slug>')
    // The emulator's help shows its own options only, not the mirror's settings.
    if (c === 'emulator') {
      for (const other of ['--config', '--base-url', '--db', '--log-level', '--version']) expect(help).not.toContain(other)
      expect(help).toContain('--allow-http-webhooks')
      expect(help).toContain('--rate-limit requests per key per sliding minute')
    }
  })

  test('an unknown command is a usage error (exit 2)', async () => {
    const r = await runCli(['frobnicate'])
    expect(r.code).toBe(2)
    expect(r.stderr).toMatch(/Unknown argument|Unknown command/i)
  })

  test('an unknown flag is a usage error (exit 2)', async () => {
    const r = await runCli(['sync', '--bogus-flag'])
    expect(r.code).toBe(2)
    expect(r.stderr).toContain('bogus-flag')
    expect(r.stderr).not.toContain('not built yet')
  })

  test('no command is a usage error (exit 2)', async () => {
    expect((await runCli([])).code).toBe(2)
  })

  test('FSM_RATE_LIMIT=abc fsm-sync sync exits 2 naming FSM_RATE_LIMIT', async () => {
    const r = await runCli(['sync'], cleanEnv({ FSM_RATE_LIMIT: 'abc' }))
    expect(r.code).toBe(2)
    expect(r.stderr).toContain('FSM_RATE_LIMIT')
  })

  test('a bad API key is named but never echoed', async () => {
    const r = await runCli(['sync'], cleanEnv({ FSM_API_KEY: 'pk_wrong_secret_value' }))
    expect(r.code).toBe(2)
    expect(r.stderr).toContain('FSM_API_KEY')
    expect(r.stderr + r.stdout).not.toContain('pk_wrong_secret_value')
  })
})
