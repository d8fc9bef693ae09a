// `fsm-sync emulator`: prints its base URL and a key, serves the API, stops cleanly on SIGTERM.
import { describe, expect, test } from 'vitest'
import { cleanEnv, spawnCli } from '../../support/run-cli.js'

describe('fsm-sync emulator', () => {
  test('prints FSM_BASE_URL and FSM_API_KEY, answers with that key, exits 0 on SIGTERM', async () => {
    const child = spawnCli(['emulator', '--port', '0', '--seed', '3', '--clients', '12'], cleanEnv())
    let out = ''
    child.stdout?.setEncoding('utf8').on('data', (d: string) => (out += d))
    const closed = new Promise<number | null>((resolve) => child.on('close', resolve))
    while (!/FSM_API_KEY=\S+/.test(out)) await new Promise((r) => setTimeout(r, 50))
    const url = /FSM_BASE_URL=(\S+)/.exec(out)![1]!
    const key = /FSM_API_KEY=(\S+)/.exec(out)![1]!
    expect(url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/)
    expect(key).toMatch(/^svc_live_/)
    const res = await fetch(`${url}/api/v1/clients?limit=100`, { headers: { 'x-api-key': key } })
    expect(res.status).toBe(200)
    expect(((await res.json()) as { meta: { total: number } }).meta.total).toBe(12)
    child.kill('SIGTERM')
    expect(await closed).toBe(0)
  })
})
