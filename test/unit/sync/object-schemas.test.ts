// When a custom object's schema is due (src/sync/object-schemas.ts), and what of a record's data
// the stored schema does not know.
import { describe, expect, test } from 'vitest'
import { SCHEMA_MAX_AGE_MS, schemaDue, unknownToSchema, type SchemaTimes } from '../../../src/sync/object-schemas.js'

const at = Date.UTC(2026, 0, 5, 10)
const item = { slug: 'equipment', raw: { slug: 'equipment', namePlural: 'Equipment' } }
const times: SchemaTimes = { schemas: { equipment: { fetchedAt: new Date(at).toISOString(), discovery: JSON.stringify(item.raw) } } }

describe('schemaDue', () => {
  test('not before five minutes for an object discovered unchanged; due at five minutes', () => {
    const seen = { item, stored: true, disabled: false }
    expect(schemaDue(times, 'equipment', at + SCHEMA_MAX_AGE_MS - 1, seen)).toBe(false)
    expect(schemaDue(times, 'equipment', at + SCHEMA_MAX_AGE_MS, seen)).toBe(true)
  })

  test('at once for an object new, changed in discovery, enabled again, or never fetched', () => {
    expect(schemaDue(times, 'equipment', at, { item, stored: false, disabled: false })).toBe(true)
    expect(
      schemaDue(times, 'equipment', at, { item: { ...item, raw: { ...item.raw, namePlural: 'Gear' } }, stored: true, disabled: false }),
    ).toBe(true)
    expect(schemaDue(times, 'equipment', at, { item, stored: true, disabled: true })).toBe(true)
    expect(schemaDue(times, 'inspections', at, { item: { slug: 'inspections', raw: {} }, stored: true, disabled: false })).toBe(true)
  })
})

describe('unknownToSchema', () => {
  const fields = JSON.stringify([
    { name: 'name', type: 'text' },
    { name: 'ownerId', type: 'relation', relation: { targetObject: 'client' } },
    { name: 'category', type: 'select', options: [{ value: 'hvac' }, { value: 'plumbing' }] },
    { name: 'status', type: 'select', options: [{ value: 'active' }] },
  ])
  const pipeline = JSON.stringify({ fieldName: 'status', stages: [] })

  test('what the service writes into data is known: relation name mirrors, display ids, the stage, __ keys', () => {
    const data = { name: 'x', ownerId: 'a', ownerName: 'Acme', customId: 'EQ-1', customIdCounter: 1, status: 'active', __t: 1 }
    expect(unknownToSchema(fields, pipeline, data)).toEqual([])
  })

  test('a field the schema lacks, and a select value outside its options, are reported', () => {
    expect(unknownToSchema(fields, pipeline, { name: 'x', warranty: 'W-1', category: 'roofing', status: 'retired' })).toEqual([
      'warranty',
      'category=roofing',
      'status=retired',
    ])
  })

  test('an unreadable stored schema knows nothing', () => {
    expect(unknownToSchema('not json', null, { name: 'x' })).toEqual(['name'])
  })
})
