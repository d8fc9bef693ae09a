// config/README.md documents every key of the schema (its table is written from the schema by
// `npm run docs:config`), and config/example.json holds every key at its default.
import { readFileSync } from 'node:fs'
import path from 'node:path'
import { describe, expect, test } from 'vitest'
import { CONFIG_DOC, configKeys, envVariables, withFreshTable } from '../../../src/config/config-doc.js'
import { ConfigSchema } from '../../../src/config/index.js'
import { ROOT } from '../../support/run-cli.js'

const keys = configKeys()

/** The value at a dotted path of a parsed config. */
function at(value: unknown, dotted: string): unknown {
  return dotted
    .split('.')
    .reduce<unknown>((v, k) => (typeof v === 'object' && v !== null ? (v as Record<string, unknown>)[k] : undefined), value)
}

/** `{a: {b: value}}` for the dotted path `a.b`. */
function nested(dotted: string, value: unknown): Record<string, unknown> {
  return dotted
    .split('.')
    .reverse()
    .reduce<unknown>((v, k) => ({ [k]: v }), value) as Record<string, unknown>
}

describe('config/README.md', () => {
  const committed = readFileSync(path.join(ROOT, CONFIG_DOC), 'utf8')

  test('its table is the one the schema writes', () => {
    // A plain comparison first, so the failure leads with the fix rather than a long diff.
    if (withFreshTable(committed) !== committed)
      expect.fail(`${CONFIG_DOC} is out of date with src/config/schema.ts: run \`npm run docs:config\` and commit it`)
  })

  test('every key of the schema has a row with its environment variable, and no row names a key the schema lacks', () => {
    const rows = [...committed.matchAll(/^\| `([A-Za-z0-9.]+)` \| (?:`(FSM_[A-Z0-9_]+)`)? \|/gm)].map((m) => ({ key: m[1]!, env: m[2] }))
    expect(rows.map((r) => r.key)).toEqual(keys.map((k) => k.key))
    for (const [key, env] of envVariables()) {
      expect(
        keys.map((k) => k.key),
        `${env} sets ${key}, which the schema does not have`,
      ).toContain(key)
      expect(rows.find((r) => r.key === key)?.env, `the row of ${key} names its variable`).toBe(env)
    }
  })

  test("a default shown as a value is the key's actual default: given, it parses to what leaving the key out gives", () => {
    for (const k of keys) {
      const shown = /^`(.+)`$/.exec(k.shownDefault)?.[1]
      if (k.shownDefault === 'none') expect(k.parsedDefault, k.key).toBeUndefined()
      if (shown === undefined) continue
      const parsed = ConfigSchema.parse(nested(k.key, JSON.parse(shown)))
      expect(at(parsed, k.key), `${k.key}: the default shown, ${shown}`).toEqual(k.parsedDefault)
    }
    // The defaults shown as text are the ones the schema cannot show as one value.
    expect(keys.filter((k) => !/^`.+`$|^none$/.test(k.shownDefault)).map((k) => k.key)).toEqual([
      'streams',
      'http.bodyTimeoutMs',
      'metrics.perAccount',
    ])
  })

  test('every key says what it does; a number says its unit', () => {
    for (const k of keys) {
      expect(k.description.length, k.key).toBeGreaterThan(20)
      if (/\bnumber\b/.test(k.allowed) && k.key !== 'httpPort') expect(k.unit, `${k.key} is a number: give its unit`).toBeDefined()
    }
  })
})

describe('config/example.json', () => {
  const example = JSON.parse(readFileSync(path.join(ROOT, 'config/example.json'), 'utf8')) as Record<string, unknown>

  test('holds every key that has a default, at its default (secrets left out)', () => {
    const parsed = ConfigSchema.parse(example)
    for (const k of keys) {
      if (k.key === 'apiKey' || k.key === 'webhookSecrets') {
        expect(at(example, k.key), `${k.key} is a secret: not in the example`).toBeUndefined()
        continue
      }
      if (k.key === 'baseUrl' || k.shownDefault === 'none') continue
      expect(at(example, k.key), `${k.key} is missing from config/example.json`).toBeDefined()
      // A default shown as text (every stream) is filled in after parsing: only its presence is checked.
      if (/^`.+`$/.test(k.shownDefault)) expect(at(parsed, k.key), `${k.key} in config/example.json`).toEqual(k.parsedDefault)
    }
  })
})
