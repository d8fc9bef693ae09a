// What the shared-webhook tests share: a database of the suite's Postgres server per file, a fresh
// coordination schema per test, connections closed after the file, and the deliveries and secrets
// they post.
import { randomUUID } from 'node:crypto'
import pg from 'pg'
import { afterAll, beforeAll, inject } from 'vitest'
import { ensureCoordinationSchema, type CoordinationTables } from '../../../src/coordination/coordination-schema.js'
import type { ReplicaIdentity } from '../../../src/coordination/membership.js'
import { ensureWebhookSchema, type WebhookTables } from '../../../src/coordination/webhook-schema.js'
import { createDatabase } from '../../support/postgres-server.js'

export const SECRET = 'whsec_shared_current_0123456789abcdef'
export const KEY = 'a-random-key-for-the-replicas-0123456789'

export const replica = (name: string): ReplicaIdentity => ({ name, incarnation: randomUUID() })

export const entry = (secret: string, endpointId = 'ep-1', supersededAt: string | null = null) => ({
  endpointId,
  secret,
  createdAt: '2026-11-01T00:00:00.000Z',
  supersededAt,
})

export const delivery = (id: string): { deliveryId: string; event: string; body: Buffer; verifiedWith: string } => ({
  deliveryId: id,
  event: 'client.updated',
  body: Buffer.from(JSON.stringify({ id: `c-${id}`, name: 'Ada' })),
  verifiedWith: 'endpoint ep-1 (current)',
})

/** Call at a file's top level: registers the file's database and its clean-up. */
export function sharedWebhooksEnv(prefix: string) {
  const state = { url: '', schemas: 0 }
  const closers: (() => Promise<unknown>)[] = []
  beforeAll(async () => {
    state.url = await createDatabase(inject('postgresUrl'), prefix)
  })
  afterAll(async () => {
    for (const close of closers.reverse()) await close().catch(() => undefined)
  })
  const client = async (connectionString = state.url): Promise<pg.Client> => {
    const c = new pg.Client({ connectionString })
    await c.connect()
    closers.push(() => c.end())
    return c
  }
  return {
    closers,
    client,
    get url() {
      return state.url
    },
    /** A schema name not used before in this file. */
    schema: () => `webhooks_${state.schemas++}`,
    /** A relay's LISTEN connection: the relay ends it. */
    listenClient: async (): Promise<pg.Client> => {
      const c = new pg.Client({ connectionString: state.url })
      await c.connect()
      return c
    },
    pool: (max = 4): pg.Pool => {
      const p = new pg.Pool({ connectionString: state.url, max })
      p.on('error', () => undefined)
      closers.push(() => p.end())
      return p
    },
    /** A fresh coordination schema with the webhook tables, for one test. */
    fresh: async (): Promise<{ db: pg.Client; c: CoordinationTables; t: WebhookTables }> => {
      const db = await client()
      const schema = `webhooks_${state.schemas++}`
      const c = await ensureCoordinationSchema(db, schema)
      const { tables: t } = await ensureWebhookSchema(db, schema)
      return { db, c, t }
    },
  }
}
