// `fsm-sync emulator`: prints `export` lines a shell takes as they are (or one JSON document), a key
// that is the same for the same seed, serves the API, explains a busy port, stops cleanly on SIGTERM.
import { execFileSync } from 'node:child_process'
import { readFileSync } from 'node:fs'
import http from 'node:http'
import type { AddressInfo } from 'node:net'
import { describe, expect, test } from 'vitest'
import { cleanEnv, ROOT, runCli, spawnCli } from '../../support/run-cli.js'

/** Starts the emulator, waits for `until` in its stdout, and returns what it printed and a stop. */
async function started(args: string[], until: RegExp): Promise<{ out: string; stop(): Promise<number | null> }> {
  const child = spawnCli(['emulator', ...args], cleanEnv())
  let out = ''
  child.stdout?.setEncoding('utf8').on('data', (d: string) => (out += d))
  const closed = new Promise<number | null>((resolve) => child.on('close', resolve))
  while (!until.test(out)) await new Promise((r) => setTimeout(r, 50))
  return {
    out,
    stop: () => {
      child.kill('SIGTERM')
      return closed
    },
  }
}

/** The variables a shell has after running the printed lines. */
const exported = (out: string): Record<string, string> => {
  const env = execFileSync('sh', ['-c', `${out}\nenv`], { encoding: 'utf8', env: { PATH: process.env.PATH ?? '/usr/bin:/bin' } })
  return Object.fromEntries(
    env
      .split('\n')
      .filter((l) => l.includes('='))
      .map((l) => [l.slice(0, l.indexOf('=')), l.slice(l.indexOf('=') + 1)]),
  )
}

describe('fsm-sync emulator', () => {
  test('prints export lines a shell runs as they are; answers with that key; exits 0 on SIGTERM', async () => {
    const emu = await started(['--port', '0', '--seed', '3', '--clients', '12'], /FSM_API_KEY=\S+\n/)
    expect(emu.out.split('\n').filter((l) => l !== '' && !l.startsWith('#') && !l.startsWith('export '))).toEqual([])
    const env = exported(emu.out)
    expect(env.FSM_BASE_URL).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/)
    expect(env.FSM_API_KEY).toMatch(/^svc_live_/)
    const res = await fetch(`${env.FSM_BASE_URL}/api/v1/clients?limit=100`, { headers: { 'x-api-key': env.FSM_API_KEY! } })
    expect(res.status).toBe(200)
    expect(((await res.json()) as { meta: { total: number } }).meta.total).toBe(12)
    expect(await emu.stop()).toBe(0)
    // The same seed gives the same key on the next start, so a walkthrough can be repeated.
    const again = await started(['--port', '0', '--seed', '3'], /FSM_API_KEY=\S+\n/)
    expect(exported(again.out).FSM_API_KEY).toBe(env.FSM_API_KEY)
    expect(await again.stop()).toBe(0)
  })

  test('--key sets the key; --accounts N exports every account key; --json is one document', async () => {
    const three = await started(
      ['--port', '0', '--accounts', '3', '--rows', '60', '--key', 'svc_live_walkthrough'],
      /EMULATOR_KEY_ACCT_003=\S+\n/,
    )
    const env = exported(three.out)
    expect(env.FSM_API_KEY).toBe('svc_live_walkthrough')
    expect(env.EMULATOR_KEY_ACCT_001).toBe('svc_live_walkthrough')
    const keys = [env.EMULATOR_KEY_ACCT_001, env.EMULATOR_KEY_ACCT_002, env.EMULATOR_KEY_ACCT_003]
    expect(new Set(keys).size).toBe(3)
    const listed = (await (await fetch(`${env.FSM_BASE_URL}/__emulator/accounts`)).json()) as { data: { apiKey: string }[] }
    expect(listed.data.map((a) => a.apiKey)).toEqual(keys)
    expect(await three.stop()).toBe(0)
    const json = await started(['--port', '0', '--accounts', '2', '--json'], /\}\n/)
    const doc = JSON.parse(json.out) as { url: string; accounts: { id: string; apiKey: string; apiKeyEnv: string }[] }
    expect(doc.accounts.map((a) => [a.id, a.apiKeyEnv])).toEqual([
      ['acct-001', 'EMULATOR_KEY_ACCT_001'],
      ['acct-002', 'EMULATOR_KEY_ACCT_002'],
    ])
    const res = await fetch(`${doc.url}/__emulator/accounts/acct-002/info`)
    expect(((await res.json()) as { data: { seed: number } }).data.seed).toBe(2)
    expect(await json.stop()).toBe(0)
  })

  test('a busy port: exit 1 with a message naming it and --port 0', async () => {
    const holder = http.createServer()
    await new Promise<void>((r) => holder.listen(0, '127.0.0.1', r))
    const port = (holder.address() as AddressInfo).port
    try {
      const r = await runCli(['emulator', '--port', String(port)], cleanEnv())
      expect(r.code).toBe(1)
      expect(r.stderr).toContain(`127.0.0.1:${port}`)
      expect(r.stderr).toContain('in use')
      expect(r.stderr).toContain('--port 0')
      expect(r.stderr).not.toContain('    at ')
    } finally {
      await new Promise((r) => holder.close(r))
    }
  })

  test.each(['README.md', 'emulator/README.md'])('%s: the walkthrough exports the key it starts the emulator with', (file) => {
    const text = readFileSync(`${ROOT}/${file}`, 'utf8')
    const started = /npx fsm-sync emulator --port (\d+) --key (\S+)/.exec(text)
    const exported = /export FSM_BASE_URL=http:\/\/127\.0\.0\.1:(\d+) FSM_API_KEY=(\S+)/.exec(text)
    expect(started?.slice(1)).toEqual(exported?.slice(1))
    expect(started?.[2]).toMatch(/^svc_live_[A-Za-z0-9_-]+$/)
  })
})
