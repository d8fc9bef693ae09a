// Webhook signing secrets never touch the mirror, which warehouse readers may be given: register,
// rotation and intake against the emulator leave no secret's bytes in the mirror, its -wal or -shm;
// a mirror created by older releases (secrets in a table) has them moved to the 0600 file beside
// it, keeps verifying deliveries with them, and keeps no trace of them; `query` cannot reach them.
import { chmodSync, copyFileSync, existsSync, readFileSync, statSync } from 'node:fs'
import path from 'node:path'
import { Writable } from 'node:stream'
import Database from 'better-sqlite3'
import { request } from 'undici'
import { describe, expect, test } from 'vitest'
import { clients } from '../../../connectors/clients.js'
import { jobs } from '../../../connectors/jobs.js'
import { createLogger } from '../../../src/log/logger.js'
import { openMirror } from '../../../src/store/sqlite/mirror-database.js'
import { secretsFileHooks } from '../../../src/store/migrations/0011-secrets-file.js'
import { QueryRefusedError, runReadOnlyQuery } from '../../../src/store/sqlite/read-only-query.js'
import { readSecretsFile, secretsPathFor } from '../../../src/store/repositories/secrets-file.js'
import { startIntakeServer } from '../../../src/webhooks/intake-server.js'
import { registerEndpoint, type RegistrationClient } from '../../../src/webhooks/registration.js'
import { sign } from '../../../src/webhooks/signature.js'
import { createWebhookService } from '../../../src/webhooks/webhook-service.js'
import { emulatorEnv } from '../../support/emulator-env.js'
import { runCli, cleanEnv } from '../../support/run-cli.js'
import { compareWithEmulator, syncEnv } from '../../support/sync-env.js'
import { tempDir } from '../../support/temp-mirror.js'

const quiet = () => createLogger({ level: 'silent', destination: new Writable({ write: (_c, _e, cb) => cb() }) })
const serviceConfig = {
  webhookSecrets: [],
  webhooks: { path: '/webhooks', maxBodyBytes: 1 << 20, maxBacklog: 10_000, rotationGraceHours: 24 },
}

/** The mirror, its -wal and its -shm: which of them hold any of `secrets`' bytes. */
function filesHolding(db: string, secrets: readonly string[]): string[] {
  const found: string[] = []
  for (const file of [db, `${db}-wal`, `${db}-shm`]) {
    if (!existsSync(file)) continue
    const bytes = readFileSync(file)
    for (const s of secrets) if (bytes.includes(Buffer.from(s, 'utf8'))) found.push(`${path.basename(file)} holds ${s.slice(0, 8)}…`)
  }
  return found
}

const mode = (file: string) => statSync(file).mode & 0o777

async function postSigned(url: string, secret: string, deliveryId: string, payload: unknown): Promise<number> {
  const body = Buffer.from(JSON.stringify(payload))
  const res = await request(url, {
    method: 'POST',
    body,
    headers: {
      'content-type': 'application/json',
      'x-service-event': 'client.updated',
      'x-service-delivery': deliveryId,
      'x-service-signature': sign(secret, body),
    },
  })
  await res.body.dump()
  return res.statusCode
}

describe('webhook signing secrets stay out of the mirror', () => {
  test('no secret reaches the mirror, its -wal or -shm after register, rotation and signed deliveries through the intake', async () => {
    const emu = await emulatorEnv({
      allowHttpWebhooks: true,
      counts: { clients: 3, jobs: 3, visitsPerJob: 1, invoices: 1, customRecords: 0 },
    })
    const env = await syncEnv(emu)
    await env.sync({ streams: [clients, jobs] })
    // The secrets as the upstream issued them, seen on the wire (whatever the store does with them).
    const issued: string[] = []
    const watch = (data: unknown) => {
      const s = (data as { secret?: unknown } | undefined)?.secret
      if (typeof s === 'string') issued.push(s)
    }
    const client: RegistrationClient = {
      get: (...a) => env.app.client.get(...a),
      post: async (...a) => {
        const r = await env.app.client.post(...a)
        watch(r.data)
        return r
      },
      put: async (...a) => {
        const r = await env.app.client.put(...a)
        watch(r.data)
        return r
      },
    }
    const service = createWebhookService({ sqlite: env.app.mirror.sqlite, logger: quiet(), client: env.app.client, config: serviceConfig })
    service.start()
    const first = await startIntakeServer(service.handler, { path: '/webhooks' })
    const second = await startIntakeServer(service.handler, { path: '/webhooks' })
    try {
      await registerEndpoint(client, service.secrets, first.url, Date.now)
      const [c1, c2] = await emu.state('clients')
      expect((await emu.api('PUT', `/api/v1/clients/${c1.id}`, { notes: 'signed with the first secret' })).status).toBe(200)
      await emu.control('POST', '/deliveries/flush')
      await service.processor.drained()
      // Rotation: a new URL issues a new secret; the first stays accepted for the grace period.
      expect(await registerEndpoint(client, service.secrets, second.url, Date.now)).toMatchObject({ rotated: true })
      expect((await emu.api('PUT', `/api/v1/clients/${c2.id}`, { notes: 'signed with the second secret' })).status).toBe(200)
      await emu.control('POST', '/deliveries/flush')
      await service.processor.drained()

      expect(issued).toHaveLength(2)
      // Both deliveries were verified and applied through the real intake.
      expect(env.rows(`SELECT count(*) AS n FROM webhook_inbox WHERE event = 'client.updated' AND processed_at IS NOT NULL`)).toEqual([
        { n: 2 },
      ])
      expect(await compareWithEmulator(emu, env, [clients])).toEqual([])
      // While the daemon runs (frames in the -wal) and after it closed (checkpointed into the file).
      expect(filesHolding(env.db, issued)).toEqual([])
    } finally {
      await first.close()
      await second.close()
      await service.stop()
      await env.close()
    }
    expect(filesHolding(env.db, issued)).toEqual([])
  })

  test('the secrets live in their own 0600 file beside the mirror, which gets FSM_DB_MODE (0640 by default)', async () => {
    const emu = await emulatorEnv({ allowHttpWebhooks: true, counts: { clients: 1, jobs: 1, invoices: 1, customRecords: 0 } })
    const env = await syncEnv(emu)
    const service = createWebhookService({ sqlite: env.app.mirror.sqlite, logger: quiet(), config: serviceConfig })
    await registerEndpoint(env.app.client, service.secrets, 'http://127.0.0.1:9/webhooks', Date.now)
    env.app.mirror.sqlite.prepare(`INSERT INTO webhook_state (key, value, updated_at) VALUES ('x', 'y', 'z')`).run()
    const file = secretsPathFor(env.db)
    expect(file).toBe(path.join(env.dir, 'mirror.secrets.json'))
    expect(mode(file)).toBe(0o600)
    expect(readSecretsFile(file)).toHaveLength(1)
    for (const f of [env.db, `${env.db}-wal`, `${env.db}-shm`]) expect([f, mode(f)]).toEqual([f, 0o640])
    await service.stop()
    await env.close()
    // FSM_DB_MODE narrows an existing mirror and its -wal/-shm at the next open.
    const again = await syncEnv(emu, { FSM_DB_MODE: '0600' }, env.dir)
    for (const f of [again.db, `${again.db}-wal`, `${again.db}-shm`]) expect([f, mode(f)]).toEqual([f, 0o600])
    await again.close()
  })

  test('query cannot read a secret: no secrets table in the mirror, and ATTACH of the secrets file is refused', async () => {
    const emu = await emulatorEnv({ allowHttpWebhooks: true, counts: { clients: 1, jobs: 1, invoices: 1, customRecords: 0 } })
    const env = await syncEnv(emu)
    const service = createWebhookService({ sqlite: env.app.mirror.sqlite, logger: quiet(), config: serviceConfig })
    await registerEndpoint(env.app.client, service.secrets, 'http://127.0.0.1:9/webhooks', Date.now)
    // A synced mirror: `query` refuses one nothing was ever synced into.
    await env.sync()
    await service.stop()
    await env.close()
    const file = secretsPathFor(env.db)
    const reader = await openMirror(env.db, { readonly: true })
    try {
      expect(() => runReadOnlyQuery(reader.sqlite, 'SELECT secret FROM webhook_secrets')).toThrow(/no such table: webhook_secrets/)
      for (const text of [
        `ATTACH '${file}' AS s`,
        `attach database '${file}' as s`,
        `/* x */ ATTACH '${file}' AS s`,
        `-- x\n  ATTACH '${file}' AS s`,
      ]) {
        expect(() => runReadOnlyQuery(reader.sqlite, text), text).toThrow(QueryRefusedError)
      }
      expect(reader.sqlite.prepare('PRAGMA database_list').all()).toHaveLength(1)
    } finally {
      await reader.close()
    }
    const cli = await runCli(['query', `ATTACH '${file}' AS s`], cleanEnv({ FSM_DB: env.db }))
    expect(cli.code).toBe(1)
    expect(cli.stderr).toContain('only read-only statements are allowed')
    expect(cli.stdout + cli.stderr).not.toContain(readSecretsFile(file)[0]!.secret)
  })
})

const LEGACY_SCHEMA = readFileSync(new URL('../../fixtures/mirror-0009.sql', import.meta.url), 'utf8')
const OLD = 'whsec_legacy_previous_0123456789abcdef0123456789abcdef'
const CURRENT = 'whsec_legacy_current_fedcba9876543210fedcba9876543210'

/**
 * A mirror as older releases left it when killed: the schema of the fixture, two secrets written
 * (and rotated) with those releases' statements, and the log not checkpointed (a copy of the file
 * and its -wal taken while the connection was open).
 */
function legacyMirror(dir: string): string {
  const live = path.join(dir, 'live.db')
  const conn = new Database(live)
  conn.pragma('journal_mode = WAL')
  conn.exec(LEGACY_SCHEMA)
  const iso = (ms: number) => new Date(ms).toISOString()
  const t0 = Date.now() - 3_600_000
  const insert = conn.prepare(`INSERT INTO webhook_secrets (endpoint_id, url, secret, created_at) VALUES (?, ?, ?, ?)`)
  insert.run('ep1', 'https://old.example/webhooks', OLD, iso(t0))
  conn
    .prepare(`UPDATE webhook_secrets SET url = ? WHERE endpoint_id = ? AND superseded_at IS NULL`)
    .run('https://older.example/webhooks', 'ep1')
  conn.pragma('wal_checkpoint(TRUNCATE)')
  conn.prepare(`UPDATE webhook_secrets SET superseded_at = ? WHERE superseded_at IS NULL`).run(iso(t0 + 60_000))
  insert.run('ep1', 'https://new.example/webhooks', CURRENT, iso(t0 + 60_000))
  const db = path.join(dir, 'mirror.db')
  copyFileSync(live, db)
  copyFileSync(`${live}-wal`, `${db}-wal`)
  conn.close()
  expect(filesHolding(db, [OLD, CURRENT]).length).toBeGreaterThan(0)
  return db
}

describe('a mirror created by older releases, with its secrets inside', () => {
  test('its secrets move to the secrets file, still verify deliveries, and are gone from the mirror, its -wal and -shm', async () => {
    const dir = tempDir()
    const db = legacyMirror(dir)
    const mirror = await openMirror(db)
    const file = secretsPathFor(db)
    try {
      expect(mode(file)).toBe(0o600)
      expect(readSecretsFile(file).map((e) => [e.secret, e.url, e.supersededAt === null])).toEqual([
        [OLD, 'https://older.example/webhooks', false],
        [CURRENT, 'https://new.example/webhooks', true],
      ])
      expect(mirror.sqlite.prepare(`SELECT name FROM sqlite_master WHERE name = 'webhook_secrets'`).all()).toEqual([])
      expect(filesHolding(db, [OLD, CURRENT])).toEqual([])

      const service = createWebhookService({ sqlite: mirror.sqlite, logger: quiet(), config: serviceConfig, process: false })
      const intake = await startIntakeServer(service.handler, { path: '/webhooks' })
      try {
        const payload = { id: 'c1', updatedAt: new Date().toISOString() }
        expect(await postSigned(intake.url, CURRENT, 'd-current', payload)).toBe(200)
        expect(await postSigned(intake.url, OLD, 'd-previous', payload)).toBe(200)
        expect(await postSigned(intake.url, 'whsec_someone_else_entirely_0000', 'd-forged', payload)).toBe(401)
        expect(mirror.sqlite.prepare(`SELECT delivery_id, verified_with FROM webhook_inbox ORDER BY seq`).all()).toEqual([
          { delivery_id: 'd-current', verified_with: 'endpoint ep1 (current)' },
          { delivery_id: 'd-previous', verified_with: 'endpoint ep1 (previous)' },
        ])
      } finally {
        await intake.close()
        await service.stop()
      }
    } finally {
      await mirror.close()
    }
    expect(filesHolding(db, [OLD, CURRENT])).toEqual([])
  })

  test('a move killed after the secrets file was written and before the table was dropped neither loses nor duplicates a secret', async () => {
    const dir = tempDir()
    const db = legacyMirror(dir)
    // The first half of the migration on its own, as a kill right after the file write leaves it.
    const conn = new Database(db)
    secretsFileHooks.before!(conn)
    conn.close()
    expect(readSecretsFile(secretsPathFor(db)).map((e) => e.secret)).toEqual([OLD, CURRENT])
    const mirror = await openMirror(db)
    await mirror.close()
    expect(readSecretsFile(secretsPathFor(db)).map((e) => e.secret)).toEqual([OLD, CURRENT])
    expect(filesHolding(db, [OLD, CURRENT])).toEqual([])
  })
})

describe('the mirror is never group-readable while it may hold a secret', () => {
  const captured = () => {
    const lines: Record<string, unknown>[] = []
    const destination = new Writable({
      write(chunk: Buffer, _e, cb) {
        for (const l of chunk.toString('utf8').split('\n')) if (l.trim() !== '') lines.push(JSON.parse(l) as Record<string, unknown>)
        cb()
      },
    })
    return { lines, logger: createLogger({ level: 'info', destination }) }
  }

  test('an older mirror upgraded while a reader holds a snapshot stays 0600 with a warning until its log is emptied, then gets FSM_DB_MODE', async () => {
    const dir = tempDir()
    const db = legacyMirror(dir)
    // As an earlier open (or a copy) may have left it: readable by others.
    chmodSync(db, 0o644)
    chmodSync(`${db}-wal`, 0o644)
    const reader = new Database(db)
    reader.exec('BEGIN')
    reader.prepare('SELECT count(*) FROM sqlite_master').get()
    const { lines, logger } = captured()
    const mirror = await openMirror(db, { mode: 0o640, busyTimeoutMs: 100, logger })
    try {
      // The checkpoint could not empty the log: the secrets' bytes are still in the -wal.
      expect(filesHolding(db, [OLD, CURRENT]).length).toBeGreaterThan(0)
      for (const f of [db, `${db}-wal`, `${db}-shm`]) expect([f, mode(f)]).toEqual([f, 0o600])
      const warn = lines.filter((l) => l.level === 'warn')
      expect(warn).toHaveLength(1)
      expect(String(warn[0]!.msg)).toMatch(/may still hold the webhook secrets.*stay mode 0600.*restart fsm-sync/)
    } finally {
      reader.exec('COMMIT')
      reader.close()
      await mirror.close()
    }
    const again = captured()
    const reopened = await openMirror(db, { mode: 0o640, logger: again.logger })
    try {
      for (const f of [db, `${db}-wal`, `${db}-shm`]) expect([f, mode(f)]).toEqual([f, 0o640])
      expect(again.lines.filter((l) => l.level === 'warn')).toEqual([])
      expect(filesHolding(db, [OLD, CURRENT])).toEqual([])
    } finally {
      await reopened.close()
    }
  })

  test('a new mirror is created 0600: one whose first migration fails is never left wider', async () => {
    const db = path.join(tempDir(), 'new.db')
    await expect(openMirror(db, { mode: 0o644, migrations: { '0001-broken': ['CREATE TABLE t (x)', 'NOT SQL'] } })).rejects.toThrow(
      /0001-broken/,
    )
    expect(mode(db)).toBe(0o600)
    const ok = await openMirror(db, { mode: 0o644, migrations: { '0001-fine': ['CREATE TABLE t (x)'] } })
    await ok.close()
    expect(mode(db)).toBe(0o644)
  })
})

describe('secure_delete is on only for the drop of the secrets table', () => {
  test("a new mirror's writer has secure_delete off after open, so retention's deletes do not zero pages", async () => {
    const mirror = await openMirror(path.join(tempDir(), 'fresh.db'))
    try {
      expect(mirror.sqlite.pragma('secure_delete', { simple: true })).toBe(0)
    } finally {
      await mirror.close()
    }
  })

  test("an older mirror's writer has secure_delete off after its secrets were moved and wiped", async () => {
    const db = legacyMirror(tempDir())
    const mirror = await openMirror(db)
    try {
      expect(filesHolding(db, [OLD, CURRENT])).toEqual([])
      expect(mirror.sqlite.pragma('secure_delete', { simple: true })).toBe(0)
    } finally {
      await mirror.close()
    }
  })
})
