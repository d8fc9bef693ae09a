// `fsm-sync demo`, the README's first command, driven for a bounded time through the real CLI.
import path from 'node:path'
import { describe, expect, test } from 'vitest'
import { cleanEnv, runCli } from '../../helpers/run-cli.js'
import { tempDir } from '../../helpers/temp-mirror.js'

describe('fsm-sync demo', () => {
  test('starts the emulated account, backfills every stream, answers its example queries, keeps sweeping', async () => {
    const dir = tempDir()
    const r = await runCli(['demo', '--dir', dir, '--duration', '10', '--interval', '3'], cleanEnv())
    expect(r.code, r.stderr).toBe(0)
    const backfill = r.stdout.slice(r.stdout.indexOf('Backfill:'), r.stdout.indexOf('-- Jobs by status'))
    for (const stream of ['clients', 'jobs', 'visits', 'invoices', 'items', 'taxes', 'team', 'job_forms', 'company', 'webhooks', 'api_keys', 'objects:equipment']) {
      expect(backfill).toMatch(new RegExp(`^${stream}\\s+sweep\\s+success`, 'm'))
    }
    expect(r.stdout).toMatch(/-- Jobs by status[\s\S]*\(\d+ rows?\)/)
    expect(r.stdout).toContain(`FSM_DB=${path.join(dir, 'fsm-mirror.db')}`)
    expect(r.stdout).toMatch(/sweep 1: /)
    expect(r.stdout).toContain('Stopped.')
    // The mirror it leaves behind answers queries.
    const q = await runCli(['query', 'SELECT count(*) AS n FROM clients', '--format', 'csv'], cleanEnv({ FSM_DB: path.join(dir, 'fsm-mirror.db') }))
    expect(Number(q.stdout.split('\n')[1])).toBeGreaterThanOrEqual(50)
  }, 120_000)
})
