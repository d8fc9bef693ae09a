// Client `jobCount` and `jobTotalAmount` (spec: Client, "List responses only, when job aggregation
// is enabled"). How an account enables it is not shown: the emulator takes it as an account
// setting, off by default (`jobAggregation` option of startEmulator, POST /__emulator/account).
//
// The two values are computed from the live jobs at answer time (count, and the sum of `total`),
// so a job write changes a client's row without moving the client's `updatedAt`: exactly the gap
// an incremental `since` sync has with these fields. Only list rows carry them (not the single
// GET, write answers or webhook payloads); their place is after `properties`, as the field table
// lists them.
import type { Doc, StoredRecord } from '../core/collection.js'
import type { State } from '../data/state.js'

interface Totals {
  count: number
  total: number
}

/** Per live-jobs array (a new one after every job write): totals by client id. */
const byJobs = new WeakMap<readonly StoredRecord[], Map<string, Totals>>()

function totals(state: State): Map<string, Totals> {
  const jobs = state.jobs.sorted('createdAt', 'desc')
  let map = byJobs.get(jobs)
  if (map === undefined) {
    map = new Map()
    for (const job of jobs) {
      const id = String(job.doc.clientId)
      const t = map.get(id) ?? { count: 0, total: 0 }
      t.count++
      t.total += typeof job.doc.total === 'number' ? job.doc.total : 0
      map.set(id, t)
    }
    byJobs.set(jobs, map)
  }
  return map
}

/** A row serialiser for the client list: the document with the two aggregates after `properties`. */
export function aggregatedClientRow(state: State): (r: StoredRecord) => Buffer {
  const map = totals(state)
  return (r) => {
    const t = map.get(r.id)
    const out: Doc = {}
    for (const [key, value] of Object.entries(r.doc)) {
      if (key === 'createdBy' || key === 'createdAt' || key === 'updatedAt') continue
      out[key] = value
    }
    out.jobCount = t?.count ?? 0
    out.jobTotalAmount = Math.round((t?.total ?? 0) * 100) / 100
    for (const key of ['createdBy', 'createdAt', 'updatedAt']) if (r.doc[key] !== undefined) out[key] = r.doc[key]
    return Buffer.from(JSON.stringify(out))
  }
}
