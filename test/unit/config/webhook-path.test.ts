// webhooks.path equal to one of the daemon's own endpoints would take that endpoint's place on the
// shared listener (health checks answered by the webhook intake): it is a configuration error.
import { mkdtempSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { expect, test } from 'vitest'
import { ConfigError, loadConfig } from '../../../src/config/index.js'

test.each(['/healthz', '/readyz', '/metrics'])('webhooks.path %s is a configuration error naming the key', (p) => {
  const file = path.join(mkdtempSync(path.join(tmpdir(), 'fsm-config-')), 'config.json')
  writeFileSync(file, JSON.stringify({ webhooks: { path: p } }))
  let issues: readonly { key: string; message: string }[] = []
  try {
    loadConfig({ file, env: {} })
  } catch (err) {
    expect(err).toBeInstanceOf(ConfigError)
    issues = (err as ConfigError).issues
  }
  expect(issues).toEqual([
    {
      key: `webhooks.path (in ${file})`,
      message: 'must not be /healthz, /readyz, /metrics: the daemon serves those itself; use e.g. /webhooks',
    },
  ])
})

test('another path is accepted', () => {
  expect(loadConfig({ overrides: { webhooks: { path: '/hooks/fsm' } }, env: {} }).webhooks.path).toBe('/hooks/fsm')
})
