// The exactness check: the mirror against the emulator's own record of the account, record by
// record, for the record streams and the named custom objects. Works from two functions, so it
// needs no vitest and no runtime: the integration tests (sync-env.ts compareWithEmulator) and the
// soak use the same rule.
import { RECORD_STREAMS } from '../../connectors/index.js'
import type { RecordStream } from '../../src/model/streams.js'

export type Rows = (sql: string, ...params: unknown[]) => Record<string, unknown>[]
export type State = (resource: string) => Promise<Record<string, unknown>[]>

export type Problem = 'missing' | 'stale' | 'phantom'

export interface Mismatch {
  stream: string
  id: string
  problem: Problem
  detail: string
}

export interface Comparison {
  /** Live upstream records compared, per stream (`objects:<slug>` for custom objects). */
  compared: Record<string, number>
  mismatches: Mismatch[]
}

/** Control-API resource name of each record stream. */
const STATE_NAME: Record<string, string> = { clients: 'clients', jobs: 'jobs', visits: 'visits', invoices: 'invoices' }

export async function compareMirror(
  state: State,
  rows: Rows,
  objectSlugs: readonly string[],
  streams: readonly RecordStream[] = RECORD_STREAMS,
): Promise<Comparison> {
  const compared: Record<string, number> = {}
  const mismatches: Mismatch[] = []
  for (const stream of streams) {
    const upstream = await state(STATE_NAME[stream.name] ?? stream.name)
    const live = new Map(upstream.filter((r) => r.deleted !== true).map((r) => [String(r.id), r]))
    compared[stream.name] = live.size
    const seen = new Set<string>()
    for (const row of rows(`SELECT * FROM "${stream.table}" WHERE deleted_at IS NULL`)) {
      const id = String(row.id)
      seen.add(id)
      const record = live.get(id)
      if (record === undefined) {
        mismatches.push({ stream: stream.name, id, problem: 'phantom', detail: 'live in the mirror, deleted or absent upstream' })
        continue
      }
      const { deleted: _deleted, ...payload } = record
      const expected = stream.toRow(payload)
      if (row.updated_at !== expected.updated_at) {
        mismatches.push({
          stream: stream.name,
          id,
          problem: 'stale',
          detail: `updated_at ${String(row.updated_at)} != ${expected.updated_at}`,
        })
        continue
      }
      if (JSON.stringify(JSON.parse(String(row.raw))) !== JSON.stringify(payload)) {
        mismatches.push({ stream: stream.name, id, problem: 'stale', detail: 'same updated_at, raw payload differs' })
        continue
      }
      for (const [col, value] of Object.entries(expected.columns)) {
        if (row[col] !== value)
          mismatches.push({
            stream: stream.name,
            id,
            problem: 'stale',
            detail: `column ${col}: ${JSON.stringify(row[col])} != ${JSON.stringify(value)}`,
          })
      }
    }
    for (const id of live.keys())
      if (!seen.has(id)) mismatches.push({ stream: stream.name, id, problem: 'missing', detail: 'live upstream, not live in the mirror' })
  }
  for (const slug of objectSlugs) {
    const name = `objects:${slug}`
    const upstream = (await state(`objects/${slug}`)).filter((r) => r.deleted !== true)
    compared[name] = upstream.length
    const mirrored = new Map(
      rows(`SELECT id, stage, data, updated_at FROM custom_records WHERE slug = ? AND deleted_at IS NULL`, slug).map((r) => [
        String(r.id),
        r,
      ]),
    )
    for (const rec of upstream) {
      const id = String(rec.id)
      const row = mirrored.get(id)
      mirrored.delete(id)
      if (row === undefined) mismatches.push({ stream: name, id, problem: 'missing', detail: 'live upstream, not live in the mirror' })
      else if (row.updated_at !== rec.updatedAt)
        mismatches.push({ stream: name, id, problem: 'stale', detail: `updated_at ${String(row.updated_at)} != ${String(rec.updatedAt)}` })
      else if (row.data !== JSON.stringify(rec.data) || row.stage !== rec.stage)
        mismatches.push({ stream: name, id, problem: 'stale', detail: 'same updated_at, data or stage differs' })
    }
    for (const id of mirrored.keys())
      mismatches.push({ stream: name, id, problem: 'phantom', detail: 'live in the mirror, deleted or absent upstream' })
  }
  return { compared, mismatches }
}

export function countBy(mismatches: readonly Mismatch[], problem: Problem): number {
  return mismatches.filter((m) => m.problem === problem).length
}
