// Settings that pass each key's own range but can never work together are refused at start, naming
// both keys: a body buffer with no room for one body at the cap (every such delivery would get 503,
// never the 413 that tells the sender why), and a gap timeout between body chunks longer than the
// whole request's deadline (it could never fire).
import { mkdtempSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { expect, test } from 'vitest'
import { ConfigError, loadConfig } from '../../../src/config/index.js'

function issuesOf(config: unknown): { file: string; issues: readonly { key: string; message: string }[] } {
  const file = path.join(mkdtempSync(path.join(tmpdir(), 'fsm-config-')), 'config.json')
  writeFileSync(file, JSON.stringify(config))
  try {
    loadConfig({ file, env: {} })
  } catch (err) {
    expect(err).toBeInstanceOf(ConfigError)
    return { file, issues: (err as ConfigError).issues }
  }
  return { file, issues: [] }
}

test('a webhooks.maxBufferedBytes whose large-body share cannot hold one body of webhooks.maxBodyBytes is refused, naming both keys', () => {
  // 1 MiB buffered leaves 768 KiB for bodies over 64 KiB: a 0.8 MiB delivery could never be read.
  const { file, issues } = issuesOf({ webhooks: { maxBufferedBytes: 1 << 20, maxBodyBytes: 1 << 20 } })
  expect(issues).toHaveLength(1)
  expect(issues[0]!.key).toBe(`webhooks.maxBufferedBytes (in ${file})`)
  expect(issues[0]!.message).toContain('webhooks.maxBodyBytes (1048576)')
  expect(issues[0]!.message).toContain('raise webhooks.maxBufferedBytes to at least 1398102')
  // The smallest buffer that holds one such body is accepted.
  expect(
    loadConfig({ overrides: { webhooks: { maxBufferedBytes: 1398102, maxBodyBytes: 1 << 20 } }, env: {} }).webhooks.maxBufferedBytes,
  ).toBe(1398102)
})

test('an http.bodyTimeoutMs longer than http.requestDeadlineMs is refused, naming both keys; the default gap is under the default deadline', () => {
  const { file, issues } = issuesOf({ http: { bodyTimeoutMs: 60_000 } })
  expect(issues).toHaveLength(1)
  expect(issues[0]!.key).toBe(`http.bodyTimeoutMs (in ${file})`)
  expect(issues[0]!.message).toContain('longer than http.requestDeadlineMs (30000 ms)')
  const defaults = loadConfig({ env: {} }).http
  expect(defaults.bodyTimeoutMs).toBe(15_000)
  expect(defaults.bodyTimeoutMs).toBeLessThan(defaults.requestDeadlineMs)
  expect(loadConfig({ overrides: { http: { bodyTimeoutMs: 60_000, requestDeadlineMs: 60_000 } }, env: {} }).http.bodyTimeoutMs).toBe(60_000)
  // Lowering the deadline alone is valid: the unset gap follows it down.
  expect(loadConfig({ overrides: { http: { requestDeadlineMs: 5_000 } }, env: {} }).http.bodyTimeoutMs).toBe(5_000)
})
