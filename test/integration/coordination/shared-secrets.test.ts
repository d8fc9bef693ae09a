// The shared webhook secrets against the real Postgres server of the suite: the table only the
// daemon's role reads, sealed with FSM_SECRETS_KEY, published by the owner on a change and brought
// to the other replicas' caches by NOTIFY.
import { expect, describe, test } from 'vitest'
import { ensureCoordinationSchema } from '../../../src/coordination/coordination-schema.js'
import { InboxRelay } from '../../../src/coordination/inbox-relay.js'
import { SecretsKey } from '../../../src/coordination/secrets-key.js'
import { publishSecrets, readSecrets, SharedSecrets } from '../../../src/coordination/shared-secrets.js'
import { ensureWebhookSchema } from '../../../src/coordination/webhook-schema.js'
import { systemClock } from '../../../src/model/clock.js'
import { POSTGRES_PASSWORD, withDatabase } from '../../support/postgres-server.js'
import { entry, KEY, replica, SECRET, sharedWebhooksEnv } from './shared-webhooks-env.js'

const env = sharedWebhooksEnv('fsm_shared_secrets')
const { client, fresh, listenClient, pool } = env

describe('the shared secrets table', () => {
  test("only the daemon's role reads it, also after a GRANT or default privileges gave it away", async () => {
    const admin = await client()
    const schema = env.schema()
    const suffix = `${process.pid}_${schema}`
    const [daemonRole, reader] = [`fsm_daemon_${suffix}`, `fsm_reader_${suffix}`]
    const database = new URL(env.url).pathname.slice(1)
    await admin.query(`CREATE ROLE ${daemonRole} LOGIN PASSWORD '${POSTGRES_PASSWORD}'`)
    await admin.query(`CREATE ROLE ${reader} LOGIN PASSWORD '${POSTGRES_PASSWORD}'`)
    await admin.query(`GRANT CREATE ON DATABASE "${database}" TO ${daemonRole}`)
    const as = (role: string) => {
      const u = new URL(withDatabase(env.url, database))
      u.username = role
      return client(u.toString())
    }
    const daemon = await as(daemonRole)
    // Default privileges the user set for every table the daemon creates: they reach the new table.
    await daemon.query(`ALTER DEFAULT PRIVILEGES GRANT SELECT ON TABLES TO ${reader}`)
    await ensureCoordinationSchema(daemon, schema)
    const first = await ensureWebhookSchema(daemon, schema)
    expect(first.revoked).toEqual([reader])
    await publishSecrets(daemon, first.tables, undefined, 'acct-a', [entry(SECRET)])
    // The schema's other tables stay open to what the user grants (fsm-sync replicas as a monitor).
    await daemon.query(`GRANT USAGE ON SCHEMA "${schema}" TO ${reader}`)
    await daemon.query(`GRANT SELECT ON "${schema}".replicas TO ${reader}`)
    await daemon.query(`GRANT SELECT ON "${schema}".webhook_secrets, "${schema}".webhook_inbox TO ${reader}`)
    const other = await as(reader)
    await expect(other.query(`SELECT * FROM "${schema}".replicas`)).resolves.toBeDefined()
    expect((await other.query(`SELECT count(*)::int AS n FROM "${schema}".webhook_secrets`)).rows[0].n).toBe(1)
    // The next start revokes the GRANT.
    const again = await ensureWebhookSchema(daemon, schema)
    expect(again.revoked).toEqual([reader])
    await expect(other.query(`SELECT * FROM "${schema}".webhook_secrets`)).rejects.toMatchObject({ code: '42501' })
    await expect(other.query(`SELECT * FROM "${schema}".webhook_inbox`)).rejects.toMatchObject({ code: '42501' })
    await expect(readSecrets(daemon, again.tables, undefined, 'acct-a')).resolves.toEqual([entry(SECRET)])
  })

  test('sealed with FSM_SECRETS_KEY: the column is not the secret, a wrong or missing key names the variable', async () => {
    const { db, t } = await fresh()
    const key = SecretsKey.fromVariable(KEY)!
    await publishSecrets(db, t, key, 'acct-a', [
      entry(SECRET),
      entry('whsec_previous_abcdef0123456789', 'ep-0', '2026-11-20T00:00:00.000Z'),
    ])
    const raw = (await db.query<{ secrets: Buffer; encrypted: boolean }>(`SELECT secrets, encrypted FROM ${t.secrets}`)).rows[0]!
    expect(raw.encrypted).toBe(true)
    expect(raw.secrets.includes(Buffer.from(SECRET))).toBe(false)
    expect(raw.secrets.includes(Buffer.from('whsec_'))).toBe(false)
    expect((await readSecrets(db, t, key, 'acct-a'))!.map((e) => e.secret)).toEqual(['whsec_previous_abcdef0123456789', SECRET])

    const wrong = await readSecrets(db, t, SecretsKey.fromVariable(`${KEY}-other`), 'acct-a').catch((e: unknown) => e as Error)
    expect(wrong).toMatchObject({ code: 'SECRETS_KEY_WRONG' })
    expect((wrong as Error).message).toContain('FSM_SECRETS_KEY')
    expect((wrong as Error).message).not.toContain(SECRET)
    await expect(readSecrets(db, t, undefined, 'acct-a')).rejects.toMatchObject({ code: 'SECRETS_KEY_MISSING' })
    // A sealed value copied onto another account does not open: the account id is bound to it.
    await db.query(`INSERT INTO ${t.secrets} (account_id, secrets, encrypted) SELECT 'acct-b', secrets, true FROM ${t.secrets}`)
    await expect(readSecrets(db, t, key, 'acct-b')).rejects.toMatchObject({ code: 'SECRETS_KEY_WRONG' })
  })
})

describe('publishing', () => {
  test('merges: a stale or empty secrets file takes nothing away, and publishers at once both land', async () => {
    const { db, t } = await fresh()
    const key = SecretsKey.fromVariable(KEY)!
    const old = entry('whsec_old_0123456789abcdef', 'ep-1')
    const rotated = [
      entry('whsec_old_0123456789abcdef', 'ep-1', '2026-11-27T00:00:00.000Z'),
      { ...entry('whsec_new_0123456789abcdef', 'ep-2'), createdAt: '2026-11-27T00:00:00.000Z' },
    ]
    expect(await publishSecrets(db, t, key, 'acct-a', [old])).toBe(true)
    expect(await publishSecrets(db, t, key, 'acct-a', rotated)).toBe(true)
    // The replica that owned the account before the rotation publishes its file at a takeover; a new
    // owner without a file publishes nothing.
    expect(await publishSecrets(db, t, key, 'acct-a', [old])).toBe(false)
    expect(await publishSecrets(db, t, key, 'acct-a', [])).toBe(false)
    expect(await readSecrets(db, t, key, 'acct-a')).toEqual(rotated)
    // Two replicas publishing different endpoints at once: both kept (the version is compared and swapped).
    const [p1, p2] = [pool(), pool()]
    const extra = (n: number) => ({ ...entry(`whsec_extra_${n}_0123456789`, `ep-x${n}`), createdAt: `2026-11-28T00:00:0${n}.000Z` })
    await Promise.all([1, 2, 3, 4].map((n) => publishSecrets(n % 2 === 0 ? p1 : p2, t, key, 'acct-a', [extra(n)])))
    expect((await readSecrets(db, t, key, 'acct-a'))!.map((e) => e.endpointId)).toEqual([
      'ep-1',
      'ep-2',
      'ep-x1',
      'ep-x2',
      'ep-x3',
      'ep-x4',
    ])
    // A row published in the clear before the key was set is sealed by the next publish.
    await publishSecrets(db, t, undefined, 'acct-b', [old])
    expect(await publishSecrets(db, t, key, 'acct-b', [old])).toBe(true)
    expect((await db.query(`SELECT encrypted FROM ${t.secrets} WHERE account_id = 'acct-b'`)).rows).toEqual([{ encrypted: true }])
  })
})

describe("a reader's cache of the shared secrets", () => {
  test('the owner publishes only a change, and a NOTIFY brings it to the readers', async () => {
    const { db, c, t } = await fresh()
    const owner = new SharedSecrets({ db, tables: t, key: undefined, clock: systemClock })
    const reader = new SharedSecrets({ db: pool(), tables: t, key: undefined, clock: systemClock, ttlMs: 3_600_000 })
    expect(await owner.publish('acct-a', [entry(SECRET)])).toBe(true)
    expect(await owner.publish('acct-a', [entry(SECRET)])).toBe(false)
    expect(await reader.refresh('acct-a')).toEqual([entry(SECRET)])
    const changed: string[] = []
    const relay = new InboxRelay({
      db,
      connect: listenClient,
      coordination: c,
      tables: t,
      me: replica('reader'),
      epochOf: () => undefined,
      deliver: () => Promise.resolve(),
      onSecretsChanged: (a) => {
        changed.push(a)
        reader.invalidate(a)
      },
      onError: () => undefined,
      clock: systemClock,
    })
    env.closers.push(() => relay.stop())
    await relay.start()
    const rotated = [entry(SECRET, 'ep-1', '2026-11-27T00:00:00.000Z'), entry('whsec_rotated_9876543210', 'ep-2')]
    expect(await owner.publish('acct-a', rotated)).toBe(true)
    while (changed.length === 0) await new Promise((r) => setTimeout(r, 10))
    expect(changed).toEqual(['acct-a'])
    // Invalidated: the next use starts a read, and the one after sees the rotation.
    expect(reader.cached('acct-a')).toEqual([])
    while (reader.cached('acct-a').length === 0) await new Promise((r) => setTimeout(r, 10))
    expect(reader.cached('acct-a')).toEqual(rotated)
    await relay.stop()
  })
})

/** An intake for `accountId` as a replica that does not own it serves it: shared secrets, shared inbox. */
