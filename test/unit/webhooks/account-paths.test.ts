// Which account a request path is for: `<webhooks.path>/<id>` for each account, `webhooks.path`
// itself for the default one, whatever `webhooks.path` is set to.
import { expect, test } from 'vitest'
import { accountWebhookPath, webhookPathAccount } from '../../../src/webhooks/account-paths.js'

test.each([
  ['/webhooks', '/webhooks', 'default'],
  ['/webhooks/north', '/webhooks', 'north'],
  ['/webhooks/default', '/webhooks', 'default'],
  ['/webhooks/', '/webhooks', ''],
  ['/webhooks/a/b', '/webhooks', 'a/b'],
  ['/webhooksx', '/webhooks', undefined],
  ['/metrics', '/webhooks', undefined],
  ['/hooks/fsm/north', '/hooks/fsm', 'north'],
  ['/hooks/fsm/', '/hooks/fsm/', 'default'],
  ['/hooks/fsm/north', '/hooks/fsm/', 'north'],
  ['/', '/', 'default'],
  ['/north', '/', 'north'],
])('%s with webhooks.path %s is for %s', (path, base, expected) => {
  expect(webhookPathAccount(path, base, 'default')).toBe(expected)
})

test("an account's path is the one that reads back as its id", () => {
  for (const base of ['/webhooks', '/hooks/fsm/', '/'])
    for (const id of ['north', 'acct-001', 'default']) expect(webhookPathAccount(accountWebhookPath(base, id), base, 'default')).toBe(id)
  expect(accountWebhookPath('/webhooks', 'north')).toBe('/webhooks/north')
  expect(accountWebhookPath('/', 'north')).toBe('/north')
})
