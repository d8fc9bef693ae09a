// Seeded custom-object records: equipment owned by business clients, inspections of equipment
// (a child object with a multi relation to team members), and records of a disabled object.
import { Collection, type Doc, type StoredRecord } from '../core/collection.js'
import { iso } from '../core/iso-time.js'
import type { ObjectDef } from '../objects/object-definitions.js'
import { nextDisplayId, serviceOwnedData } from '../objects/record-data.js'
import { shape } from './docs.js'
import { seededTimes } from './seed-time.js'
import type { ObjectRecordInternal, State } from './state.js'
import { JOB_NOTES } from './word-lists.js'

const BRANDS = ['Carrier', 'Trane', 'Lennox', 'Rheem', 'Goodman', 'Daikin', 'Bosch', 'Kohler'] as const
const KINDS: Record<string, readonly string[]> = {
  hvac: ['AC condenser', 'Furnace', 'Heat pump', 'Air handler'],
  plumbing: ['Water heater', 'Sump pump', 'Backflow preventer'],
  electrical: ['Panel', 'Generator', 'EV charger'],
  appliance: ['Ice machine', 'Walk-in cooler', 'Dishwasher'],
}

function insertRecord(
  state: State,
  def: ObjectDef,
  coll: Collection<ObjectRecordInternal>,
  data: Doc,
  stage: string,
  anchorMs: number,
): StoredRecord<ObjectRecordInternal> {
  const { createdMs, updatedMs } = seededTimes(state.prng, anchorMs)
  const id = state.ids.make(createdMs)
  const full = { ...serviceOwnedData(state, def, data, stage), ...nextDisplayId(state, def) }
  return coll.insert(
    id,
    shape('record', { id, object: def.slug, stage, data: full, createdAt: iso(createdMs), updatedAt: iso(updatedMs) }),
    createdMs,
    updatedMs,
    { linkedRecords: null },
  )
}

export function seedObjects(state: State, perObject: number, anchorMs: number): void {
  const { prng } = state
  const business = state.clients.all().filter((c) => c.doc.clientType === 'Commercial')
  const teamIds = state.team.all().map((t) => t.id)
  for (const def of state.objectDefs) {
    const coll = new Collection<ObjectRecordInternal>()
    state.objects.set(def.slug, coll)
    const n = def.enabled ? perObject : Math.ceil(perObject / 4)
    for (let i = 0; i < n; i++) {
      const stage = prng.pick(def.pipeline.stages).value
      let data: Doc
      if (def.slug === 'equipment') {
        const category = prng.pick(Object.keys(KINDS))
        data = {
          name: `${prng.pick(BRANDS)} ${prng.pick(KINDS[category] ?? ['Unit'])} #${i + 1}`,
          serialNumber: `SN-${prng.hex(8).toUpperCase()}`,
          category,
          ownerId: business.length > 0 ? prng.pick(business).id : null,
          location: prng.pick(['Roof', 'Basement', 'Garage', 'Utility room', 'Kitchen', 'Exterior pad']),
        }
      } else if (def.slug === 'inspections') {
        const equipment = state.objects.get('equipment')?.all() ?? []
        data = {
          title: `Inspection ${i + 1}`,
          equipmentId: equipment.length > 0 ? prng.pick(equipment).id : null,
          inspectorIds: prng.sample(teamIds, prng.int(1, 2)),
          result: prng.pick(['pass', 'fail', 'needs_followup']),
          notes: prng.pick(JOB_NOTES),
        }
      } else {
        data = { label: `Asset ${i + 1}` }
      }
      insertRecord(state, def, coll, data, stage, anchorMs)
    }
  }
}
