// Realistic inputs for records made by the control API (mutate create, churn), through the same
// write functions the API uses, so they look like any other record.
import type { Doc } from '../core/collection.js'
import type { Prng } from '../core/prng.js'
import type { ClientInput } from '../api/client-input.js'
import type { InvoiceInput } from '../api/invoice-input.js'
import type { JobInput } from '../api/job-input.js'
import { CLIENT_STAGES } from '../data/account-config.js'
import { detailedAddress } from '../data/seed-records.js'
import { phoneNumber } from '../data/seed-reference.js'
import type { State } from '../data/state.js'
import { FIRST_NAMES, JOB_NOTES, LAST_NAMES, SERVICES } from '../data/word-lists.js'
import type { ObjectDef } from '../objects/object-definitions.js'

export function fakeClient(prng: Prng): ClientInput {
  const firstName = prng.pick(FIRST_NAMES)
  const lastName = prng.pick(LAST_NAMES)
  return {
    fields: {
      firstName,
      lastName,
      email: `${firstName}.${lastName}.${prng.hex(4)}@example.com`.toLowerCase().replace(/[^a-z0-9.@]/g, ''),
      phoneNumber: phoneNumber(prng),
      propertyAddress: detailedAddress(prng),
      clientType: 'Residential',
      stage: prng.pick(CLIENT_STAGES),
    },
    properties: undefined,
  }
}

const liveIds = (coll: { all(): { id: string; deleted: boolean }[] }): string[] =>
  coll
    .all()
    .filter((r) => !r.deleted)
    .map((r) => r.id)

export function fakeJob(state: State): JobInput {
  const { prng } = state
  const start = Date.UTC(2030, 0, 1) + prng.int(0, 365) * 86_400_000
  return {
    clientId: prng.pick(liveIds(state.clients)),
    fields: {
      jobType: 'one-off',
      startDateTime: new Date(start).toISOString(),
      endDateTime: new Date(start + 7_200_000).toISOString(),
      assignedToTeams: prng.sample(liveIds(state.team), 1),
      subTotal: prng.int(10, 90) * 10,
      notes: prng.pick(JOB_NOTES),
    },
  }
}

export function fakeInvoice(state: State): InvoiceInput {
  const { prng } = state
  const [name, , rate] = prng.pick(SERVICES)
  return {
    clientId: prng.pick(liveIds(state.clients)),
    fields: {
      title: `Invoice ${prng.hex(6)}`,
      items: [{ itemId: null, name, description: name, quantity: 1, rate, taxes: [] }],
      subTotal: rate,
      total: rate,
    },
  }
}

export function fakeRecordData(state: State, def: ObjectDef): Doc {
  const { prng } = state
  const data: Doc = {}
  for (const f of def.fields) {
    if (f.name === def.pipeline.fieldName || f.type === 'relation') continue
    if (f.type === 'select' && f.options !== null) data[f.name] = prng.pick(f.options).value
    else if (f.required || prng.chance(0.5)) data[f.name] = `${f.label} ${prng.hex(5)}`
  }
  return data
}

export { liveIds }
