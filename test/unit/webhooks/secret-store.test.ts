import path from 'node:path'
import { afterEach, beforeEach, describe, expect, test } from 'vitest'
import { SecretStore, secretSource } from '../../../src/webhooks/secret-store.js'
import { tempMirror, type TempMirror } from '../../support/temp-mirror.js'

const HOUR = 3_600_000
const T0 = Date.parse('2026-03-01T00:00:00.000Z')
const iso = (ms: number) => new Date(ms).toISOString()

let m: TempMirror
let store: SecretStore
beforeEach(async () => {
  m = await tempMirror()
  store = SecretStore.forMirror(m.path)
})
afterEach(() => m.dispose())

describe('SecretStore', () => {
  test('empty: no current endpoint, no secret', () => {
    expect(store.current()).toBeUndefined()
    expect(store.active(T0, 24)).toEqual([])
  })

  test('a new secret supersedes the previous one, which stays accepted for the grace period only', () => {
    store.record('ep', 'https://a/', 'old-secret', iso(T0))
    store.record('ep', 'https://b/', 'new-secret', iso(T0 + HOUR))
    expect(store.current()).toEqual({ endpointId: 'ep', url: 'https://b/', createdAt: iso(T0 + HOUR), supersededAt: null })
    expect(store.active(T0 + 2 * HOUR, 24).map((s) => s.secret)).toEqual(['new-secret', 'old-secret'])
    expect(store.active(T0 + 25 * HOUR - 1, 24).map((s) => s.secret)).toEqual(['new-secret', 'old-secret'])
    expect(store.active(T0 + 25 * HOUR, 24).map((s) => s.secret)).toEqual(['new-secret'])
    expect(store.active(T0 + 2 * HOUR, 0).map((s) => s.secret)).toEqual(['new-secret'])
  })

  test('endpoints() lists registrations without their secrets', () => {
    store.record('ep', 'https://a/', 'the-secret', iso(T0))
    expect(JSON.stringify(store.endpoints(T0, 24))).not.toContain('the-secret')
  })

  test('the secrets file is readable by its owner only and sits beside the mirror', async () => {
    const { statSync } = await import('node:fs')
    store.record('ep', 'https://a/', 'the-secret', iso(T0))
    expect(store.file).toBe(path.join(m.dir, 'mirror.secrets.json'))
    expect(statSync(store.file).mode & 0o777).toBe(0o600)
  })
})

describe('SecretStore cache', () => {
  test('a secret registered by another store on the same file (another process) is accepted at once', () => {
    expect(store.active(T0, 24)).toEqual([])
    SecretStore.forMirror(m.path).record('ep', 'https://a/', 'from-the-cli', iso(T0))
    expect(store.active(T0, 24).map((s) => s.secret)).toEqual(['from-the-cli'])
    // And each later rotation, even within the same millisecond and with the same length.
    SecretStore.forMirror(m.path).record('ep', 'https://b/', 'from-the-cl2', iso(T0))
    expect(store.active(T0, 24).map((s) => s.secret)).toEqual(['from-the-cl2', 'from-the-cli'])
  })

  test('a cached answer ends with the grace period it contains', () => {
    store.record('ep', 'https://a/', 'old', iso(T0))
    store.record('ep', 'https://b/', 'new', iso(T0))
    expect(store.active(T0 + HOUR, 2)).toHaveLength(2)
    expect(store.active(T0 + 2 * HOUR, 2).map((s) => s.secret)).toEqual(['new'])
    // A clock moved back is answered afresh, not from the later answer.
    expect(store.active(T0 + HOUR, 2)).toHaveLength(2)
  })
})

describe('secretSource', () => {
  test('environment secrets first, then stored ones; duplicates once; read afresh each time', () => {
    let now = T0
    const source = secretSource({ envSecrets: ['env-a', 'shared'], store, graceHours: 1, now: () => now })
    expect(source().map((s) => s.label)).toEqual(['FSM_WEBHOOK_SECRETS#0', 'FSM_WEBHOOK_SECRETS#1'])
    store.record('ep', 'https://a/', 'shared', iso(T0))
    store.record('ep', 'https://b/', 'stored-new', iso(T0))
    expect(source().map((s) => s.secret)).toEqual(['env-a', 'shared', 'stored-new'])
    now = T0 + 2 * HOUR
    expect(source().map((s) => s.secret)).toEqual(['env-a', 'shared', 'stored-new'])
  })
})
