// Reference data read through the legacy routes (spec: Legacy-route resources). The id key differs
// per resource on purpose: legacy payloads mix `id`, `recordId` and `_id` (spec: Versioning 4).
import { Collection, type Doc } from '../core/collection.js'
import { iso } from '../core/iso-time.js'
import type { ObjectIdFactory, Prng } from '../core/prng.js'
import { ACCOUNT_TIMEZONE, CURRENCY } from './account-config.js'
import { seededTimes } from './seed-time.js'
import { FIRST_NAMES, JOB_FORMS, LAST_NAMES, ROLES, SERVICES, TAX_CODES } from './word-lists.js'

export interface ReferenceData {
  team: Collection<null>
  taxes: Collection<null>
  items: Collection<null>
  jobForms: Collection<null>
  company: Doc
}

export const phoneNumber = (prng: Prng): Doc => ({
  countryCode: '+1',
  number: `512555${String(prng.int(100, 199)).padStart(4, '0')}`,
  countryIdentifier: 'US',
})

export function seedReference(
  prng: Prng,
  ids: ObjectIdFactory,
  anchorMs: number,
  counts: { teamMembers: number; taxes: number; items: number; jobForms: number },
): ReferenceData {
  const team = new Collection<null>()
  for (let i = 0; i < counts.teamMembers; i++) {
    const { createdMs, updatedMs } = seededTimes(prng, anchorMs)
    const id = ids.make(createdMs)
    const firstName = prng.pick(FIRST_NAMES)
    const lastName = prng.pick(LAST_NAMES)
    const role = i === 0 ? 'Admin' : prng.pick(ROLES)
    team.insert(
      id,
      {
        id,
        firstName,
        lastName,
        name: `${firstName} ${lastName}`,
        email: `${firstName}.${lastName}.${i}@northwind-field.test`.toLowerCase().replace(/[^a-z0-9.@-]/g, ''),
        phoneNumber: phoneNumber(prng),
        role: { id: ids.make(createdMs), name: role },
        isActive: i < 2 || prng.chance(0.9),
        isTeamMember: role !== 'Admin',
        createdAt: iso(createdMs),
        updatedAt: iso(updatedMs),
      },
      createdMs,
      updatedMs,
      null,
    )
  }
  const taxes = new Collection<null>()
  for (let i = 0; i < counts.taxes; i++) {
    const [name, rate] = TAX_CODES[i % TAX_CODES.length]!
    const { createdMs, updatedMs } = seededTimes(prng, anchorMs)
    const id = ids.make(createdMs)
    const suffix = i >= TAX_CODES.length ? ` ${Math.floor(i / TAX_CODES.length) + 1}` : ''
    taxes.insert(
      id,
      { id, name: `${name}${suffix}`, rate, taxType: 1, isDefault: i === 0, createdAt: iso(createdMs), updatedAt: iso(updatedMs) },
      createdMs,
      updatedMs,
      null,
    )
  }
  const items = new Collection<null>()
  for (let i = 0; i < counts.items; i++) {
    const [name, type, price] = SERVICES[i % SERVICES.length]!
    const { createdMs, updatedMs } = seededTimes(prng, anchorMs)
    const id = ids.make(createdMs)
    const suffix = i >= SERVICES.length ? ` (${Math.floor(i / SERVICES.length) + 1})` : ''
    items.insert(
      id,
      {
        _id: id,
        name: `${name}${suffix}`,
        type,
        price,
        description: `${type === 'Service' ? 'Labour' : 'Part'}: ${name}`,
        isActive: prng.chance(0.9),
        createdAt: iso(createdMs),
        updatedAt: iso(updatedMs),
      },
      createdMs,
      updatedMs,
      null,
    )
  }
  const jobForms = new Collection<null>()
  for (let i = 0; i < counts.jobForms; i++) {
    const { createdMs, updatedMs } = seededTimes(prng, anchorMs)
    const id = ids.make(createdMs)
    const name = JOB_FORMS[i % JOB_FORMS.length]!
    jobForms.insert(
      id,
      { recordId: id, name, fieldCount: prng.int(3, 25), isActive: true, createdAt: iso(createdMs), updatedAt: iso(updatedMs) },
      createdMs,
      updatedMs,
      null,
    )
  }
  const companyCreated = anchorMs - 400 * 86_400_000
  const company: Doc = {
    _id: ids.make(companyCreated),
    companyName: 'Northwind Field Services',
    email: 'office@northwind-field.test',
    phoneNumber: { countryCode: '+1', number: '5125550100', countryIdentifier: 'US' },
    address: {
      street: '100 Congress Ave',
      city: 'Austin',
      state: 'TX',
      country: 'US',
      zipCode: '78701',
      formattedAddress: '100 Congress Ave, Austin, TX 78701, US',
      houseNumber: '100',
      plusCode: '',
      latitude: 30.2642,
      longitude: -97.7446,
    },
    website: 'https://northwind-field.test',
    timezone: ACCOUNT_TIMEZONE,
    currency: CURRENCY,
    currencySymbol: '$',
    createdAt: iso(companyCreated),
    updatedAt: iso(companyCreated),
  }
  return { team, taxes, items, jobForms, company }
}
