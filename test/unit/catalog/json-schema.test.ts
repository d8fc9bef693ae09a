// The JSON Schemas of `fsm-sync schema --json`, the catalog read without a mirror, and CSV quoting.
import { existsSync } from 'node:fs'
import path from 'node:path'
import { expect, test } from 'vitest'
import { readCatalog } from '../../../src/catalog/catalog.js'
import { catalogDocument, JSON_SCHEMA_DIALECT } from '../../../src/catalog/json-schema.js'
import { csvField } from '../../../src/export/encoding.js'
import type { TableSpec } from '../../../src/model/table-spec.js'
import { tempDir } from '../../support/temp-mirror.js'

const fixture: TableSpec = {
  name: 'widgets',
  description: 'One row per widget.',
  role: 'data',
  primaryKey: ['id'],
  columns: [
    { name: 'id', kind: 'text', nullable: false, from: 'id', description: 'The id.' },
    { name: 'seen_at', kind: 'time', nullable: true, from: 'seenAt', description: 'When.' },
    { name: 'on', kind: 'flag', nullable: true, from: 'isOn', description: 'Switched on.' },
    // Exported as null when its value is no instant (a legacy record without a time has '').
    { name: 'changed_at', kind: 'time', nullable: false, description: 'Changed.' },
    { name: 'shape', kind: 'json', nullable: false, from: 'shape', description: 'Its shape.' },
    { name: 'raw', kind: 'bytes', nullable: true, description: 'Bytes.' },
  ],
}

test('a table becomes a draft 2020-12 schema of its rows inside an Airbyte-shaped catalog', () => {
  const [stream] = catalogDocument([fixture]).streams
  expect(stream!.name).toBe('widgets')
  expect(stream!.source_defined_primary_key).toEqual([['id']])
  // Not a declared data table: export --after-seq reads no changes of it.
  expect(stream!.supported_sync_modes).toEqual(['full_refresh'])
  expect(stream!.default_cursor_field).toBeUndefined()
  const schema = stream!.json_schema
  expect(schema).toMatchObject({
    $schema: JSON_SCHEMA_DIALECT,
    type: 'object',
    required: ['id', 'seen_at', 'on', 'changed_at', 'shape', 'raw'],
    additionalProperties: false,
    'x-primary-key': ['id'],
  })
  expect(schema.properties).toEqual({
    id: { type: 'string', description: 'The id.', 'x-sqlite-type': 'TEXT', 'x-kind': 'text', 'x-from': 'id' },
    seen_at: {
      type: ['string', 'null'],
      format: 'date-time',
      description: 'When.',
      'x-sqlite-type': 'TEXT',
      'x-kind': 'time',
      'x-from': 'seenAt',
    },
    on: { type: ['boolean', 'null'], description: 'Switched on.', 'x-sqlite-type': 'INTEGER', 'x-kind': 'flag', 'x-from': 'isOn' },
    changed_at: { type: ['string', 'null'], format: 'date-time', description: 'Changed.', 'x-sqlite-type': 'TEXT', 'x-kind': 'time' },
    shape: { description: 'Its shape.', 'x-sqlite-type': 'TEXT', 'x-kind': 'json', 'x-from': 'shape' },
    raw: { type: ['string', 'null'], contentEncoding: 'base64', description: 'Bytes.', 'x-sqlite-type': 'BLOB', 'x-kind': 'bytes' },
  })
})

test('incremental tables say so, with the change_log seq as cursor and the change columns as optional properties', () => {
  const [stream] = catalogDocument([fixture], undefined, () => true).streams
  expect(stream!.supported_sync_modes).toEqual(['full_refresh', 'incremental'])
  expect(stream!.source_defined_cursor).toBe(true)
  expect(stream!.default_cursor_field).toEqual(['change_seq'])
  const schema = stream!.json_schema
  const properties = schema.properties as Record<string, Record<string, unknown>>
  expect(Object.keys(properties).slice(0, 2)).toEqual(['change_seq', 'change_op'])
  expect(properties.change_seq).toMatchObject({ type: 'integer', 'x-kind': 'integer' })
  expect(properties.change_op).toMatchObject({ type: 'string', 'x-kind': 'text' })
  // A whole-table row has no change columns: they are not required.
  expect(schema.required).toEqual(['id', 'seen_at', 'on', 'changed_at', 'shape', 'raw'])
})

test('without a mirror file the catalog is the declarations, and no file is created', async () => {
  const file = path.join(tempDir(), 'absent.db')
  expect(await readCatalog(file, [fixture])).toEqual([fixture])
  expect(existsSync(file)).toBe(false)
})

test('CSV fields are quoted as RFC 4180 says, and an empty string is told apart from NULL', () => {
  expect(['plain', '', 'a,b', 'say "hi"', 'two\nlines', 'cr\r'].map(csvField)).toEqual([
    'plain',
    '""',
    '"a,b"',
    '"say ""hi"""',
    '"two\nlines"',
    '"cr\r"',
  ])
})
