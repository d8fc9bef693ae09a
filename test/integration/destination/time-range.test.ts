// A time the mirror's text form fits but Postgres cannot hold (year 0000): one rule on both sides
// (isInstant). A signed delivery carrying one in createdAt is stored as text that is no instant, and
// the replica writes NULL for it, counted, on the change path and on the COPY load, so the changes
// after it arrive; a record whose updatedAt is one is refused by the mirror, as any other non-time.
import pino from 'pino'
import { afterAll, beforeAll, expect, inject, test } from 'vitest'
import { destinationTables } from '../../../src/destination/destination-tables.js'
import { PostgresDestination } from '../../../src/destination/postgres-destination.js'
import { systemClock } from '../../../src/model/clock.js'
import { T, hex, webhookEnv, type WebhookEnv } from '../../support/webhook-env.js'
import { createDatabase, pgQuery } from '../../support/postgres-server.js'

const YEAR_0 = '0000-01-01T00:00:00.000Z'
const tables = destinationTables().filter((t) => t.name === 'clients' || t.name === 'change_log')
let env: WebhookEnv
let url: string

function destination(schema: string): PostgresDestination {
  return new PostgresDestination({
    url,
    schema,
    mirrorPath: env.mirror.path,
    mirror: env.mirror.sqlite,
    tables,
    logger: pino({ level: 'silent' }),
    clock: systemClock,
  })
}

const client = (n: number, s: number, extra: Record<string, unknown> = {}) => ({
  id: hex(n),
  firstName: `Client ${n}`,
  createdAt: T(0),
  updatedAt: T(s),
  ...extra,
})

beforeAll(async () => {
  env = await webhookEnv()
  url = await createDatabase(inject('postgresUrl'))
})

afterAll(async () => {
  await env.close()
})

test('year 0000 in a time column: NULL in the replica on the change path and the COPY load, counted; later changes arrive', async () => {
  // The replica follows before the odd value arrives: it comes through the change path.
  const follower = destination('fsm')
  await follower.catchUp()
  expect(await env.deliver('d1', 'client.updated', client(1, 1, { createdAt: YEAR_0 }))).toMatchObject({ status: 200 })
  await env.service.processor.drained()
  // The mirror keeps what upstream sent, as text that is no instant.
  expect(env.rows(`SELECT created_at FROM clients WHERE id = ?`, hex(1))).toEqual([{ created_at: YEAR_0 }])
  const first = await follower.catchUp()
  expect(first.changesApplied).toBe(1)
  expect(follower.status().timesNulled).toBe(1)

  // The next change is not held back by it.
  await env.deliver('d2', 'client.updated', client(2, 2))
  await env.service.processor.drained()
  expect((await follower.catchUp()).changesApplied).toBe(1)
  const replica = `SELECT id, first_name, created_at FROM %s.clients ORDER BY id`
  const expected = [
    { id: hex(1), first_name: 'Client 1', created_at: null },
    { id: hex(2), first_name: 'Client 2', created_at: new Date(T(0)) },
  ]
  expect(await pgQuery(url, replica.replace('%s', 'fsm'))).toEqual(expected)
  expect(follower.status()).toMatchObject({ state: 'following', lastError: null })
  await follower.close()

  // A new replica (or --reseed) loads the same rows with COPY.
  const seeded = destination('seeded')
  expect((await seeded.catchUp()).loaded).toBe('a new destination')
  expect(await pgQuery(url, replica.replace('%s', 'seeded'))).toEqual(expected)
  expect(seeded.status().timesNulled).toBe(1)
  expect((await seeded.catchUp({ reseed: true })).loaded).toMatch(/reseed/)
  expect(seeded.status().timesNulled).toBe(2)
  await seeded.close()

  // updatedAt, which orders the record's versions, must be an instant: the mirror refuses the delivery.
  await env.deliver('d3', 'client.updated', client(3, 3, { updatedAt: YEAR_0 }))
  await env.service.processor.drained()
  expect(env.rows(`SELECT error FROM webhook_inbox WHERE delivery_id = 'd3'`)).toEqual([
    { error: `record ${hex(3)} without a valid updatedAt` },
  ])
  expect(env.rows(`SELECT id FROM clients WHERE id = ?`, hex(3))).toEqual([])
})
