// Webhooks and sweeps write the same records; whatever the order, the newer version wins
// (docs/guarantees.md, Newer wins). Sweep writes go through the same writer the sweeps use, with
// their options (observedAt, replaceTies: true); deliveries go through the inbox and the processor.
import fc from 'fast-check'
import { afterAll, beforeAll, describe, expect, test } from 'vitest'
import { jobs } from '../../../connectors/jobs.js'
import { RecordWriter } from '../../../src/store/repositories/record-writer.js'
import { FakeClock } from '../../support/fake-clock.js'
import { T, hex, jobPayload, webhookEnv, type WebhookEnv } from '../../support/webhook-env.js'

let env: WebhookEnv
let sweepWriter: RecordWriter
beforeAll(async () => {
  // The processor's clock stands at T(150): deletions by webhook are stamped then.
  env = await webhookEnv({ clock: new FakeClock(Date.parse(T(150))) })
  sweepWriter = new RecordWriter(env.mirror.sqlite, 'jobs')
})
afterAll(() => env.close())

const version = (id: string, v: number) => jobPayload(id, T(v), { total: v, notes: `version ${v}` })

function sweepPage(id: string, v: number, observedSecond = 100): void {
  env.mirror.sqlite.transaction(() =>
    sweepWriter.upsert([jobs.toRow(version(id, v))], { now: T(200), observedAt: T(observedSecond), replaceTies: true }),
  )()
}

async function deliver(deliveryId: string, id: string, v: number): Promise<void> {
  const result = await env.service.inbox.enqueue({
    deliveryId,
    event: 'job.updated',
    body: Buffer.from(JSON.stringify(version(id, v))),
    verifiedWith: 'test',
  })
  expect(['stored', 'duplicate']).toContain(result)
}

const stored = (id: string) => env.rows('SELECT updated_at, total FROM jobs WHERE id = ?', id)[0]

let next = 1000
const freshId = () => hex(next++)

describe('webhook against sweep', () => {
  test.each([
    ['webhook newer than the sweep page; page first', 'sweep', 1, 'hook', 2, 2],
    ['webhook newer than the sweep page; webhook first', 'hook', 2, 'sweep', 1, 2],
    ['sweep newer than the webhook; webhook first', 'hook', 1, 'sweep', 2, 2],
    ['sweep newer than the webhook; page first', 'sweep', 2, 'hook', 1, 2],
  ] as const)('%s', async (_name, firstKind, firstVersion, secondKind, secondVersion, winner) => {
    const id = freshId()
    for (const [kind, v] of [
      [firstKind, firstVersion],
      [secondKind, secondVersion],
    ] as const) {
      if (kind === 'sweep') sweepPage(id, v)
      else {
        await deliver(`race-${id}-${v}`, id, v)
        await env.service.processor.drained()
      }
    }
    expect(stored(id)).toEqual({ updated_at: T(winner), total: winner })
  })

  test('a deletion by webhook is not undone by an older page read before it, but a page read after it revives', async () => {
    const id = freshId()
    sweepPage(id, 1)
    await env.service.inbox.enqueue({
      deliveryId: `gone-${id}`,
      event: 'job.deleted',
      body: Buffer.from(JSON.stringify({ id })),
      verifiedWith: 'test',
    })
    await env.service.processor.drained()
    const deletedAt = T(150)
    expect(env.rows('SELECT deleted_at FROM jobs WHERE id = ?', id)[0]!.deleted_at).toBe(deletedAt)
    sweepPage(id, 1, 100)
    expect(env.rows('SELECT deleted_at FROM jobs WHERE id = ?', id)[0]!.deleted_at).toBe(deletedAt)
    // A delivery carries no request time: a snapshot never revives a deleted record by itself.
    await deliver(`del-${id}`, id, 3)
    await env.service.processor.drained()
    expect(env.rows('SELECT deleted_at FROM jobs WHERE id = ?', id)[0]!.deleted_at).toBe(deletedAt)
    sweepPage(id, 3, 160)
    expect(env.rows('SELECT deleted_at FROM jobs WHERE id = ?', id)[0]!.deleted_at).toBeNull()
  })
})

describe('property: any interleaving of deliveries, duplicates and sweeps ends at the newest version', () => {
  type Op = { kind: 'deliver'; job: number; v: number; copy: number } | { kind: 'sweep'; job: number; v: number } | { kind: 'apply' }
  const op: fc.Arbitrary<Op> = fc.oneof(
    fc.record({
      kind: fc.constant('deliver' as const),
      job: fc.integer({ min: 0, max: 2 }),
      v: fc.integer({ min: 1, max: 6 }),
      copy: fc.integer({ min: 0, max: 1 }),
    }),
    fc.record({ kind: fc.constant('sweep' as const), job: fc.integer({ min: 0, max: 2 }), v: fc.integer({ min: 1, max: 6 }) }),
    fc.constant({ kind: 'apply' as const }),
  )

  test('newest wins', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(op, { minLength: 1, maxLength: 30 }), async (ops) => {
        const ids = [freshId(), freshId(), freshId()]
        const newest = new Map<string, number>()
        const inFlight: Promise<void>[] = []
        for (const o of ops) {
          if (o.kind === 'apply') {
            await Promise.all(inFlight.splice(0))
            await env.service.processor.drained()
            continue
          }
          const id = ids[o.job]!
          newest.set(id, Math.max(newest.get(id) ?? 0, o.v))
          if (o.kind === 'sweep') sweepPage(id, o.v)
          // The same delivery id always carries the same payload (the upstream's record of one send);
          // `copy` re-sends it, possibly in the same group commit.
          else for (let c = 0; c <= o.copy; c++) inFlight.push(deliver(`${id}-v${o.v}`, id, o.v))
        }
        await Promise.all(inFlight)
        await env.service.processor.drained()
        for (const [id, v] of newest) expect(stored(id)).toEqual({ updated_at: T(v), total: v })
        expect(env.service.inbox.backlog).toBe(0)
      }),
      { numRuns: 150 },
    )
  })
})
