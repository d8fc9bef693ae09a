// The replica's views are derived from the declarations: every fixed view the connectors declare has
// its Postgres definition, with account_id and the declared columns in order, and each carries
// fsm-sync's mark; a custom object's view is the union of the accounts' fields.
import { expect, test } from 'vitest'
import { destinationTables, destinationViews } from '../../../src/destination/destination-tables.js'
import { mergeObjectTypes, objectViewSql } from '../../../src/destination/postgres-ddl.js'
import { undefinedFixedViews, VIEW_MARK, viewDefinitions } from '../../../src/destination/postgres-views.js'

test("every declared fixed view is built in Postgres with its declared columns, and marked as fsm-sync's", () => {
  expect(undefinedFixedViews()).toEqual([])
  const views = viewDefinitions('fsm', destinationTables(), [{ slug: 'pets', fields: '[{"name":"colour"}]' }])
  expect(views.map((v) => v.name)).toEqual([...destinationViews().map((v) => v.name), 'obj_pets'])
  for (const declared of destinationViews()) {
    const create = views.find((v) => v.name === declared.name)!.create
    const list = /^CREATE VIEW "fsm"\."\w+" AS SELECT (.*?) FROM \(/s.exec(create)![1]!
    expect(list.split(', ').map((c) => /AS "(\w+)"$/.exec(c)![1])).toEqual(['account_id', ...declared.columns.map((c) => c.name)])
  }
  for (const v of views) expect(v.comment.startsWith(VIEW_MARK)).toBe(true)
  // Without the tables a view reads, it is not built.
  expect(
    viewDefinitions(
      'fsm',
      destinationTables().filter((t) => t.name !== 'client_fields'),
      [],
    ).map((v) => v.name),
  ).toEqual([])
})

test("an object's view is the union of the accounts' fields, a field typed differently read as text", () => {
  const merged = mergeObjectTypes([
    { accountId: 'b', slug: 'kit', fields: '[{"name":"size","type":"text"},{"name":"weight","type":"number"}]' },
    { accountId: 'a', slug: 'kit', fields: '[{"name":"size","type":"number"},{"name":"paid","type":"boolean"}]' },
    { accountId: 'a', slug: 'solo', fields: null },
  ])
  expect(merged).toEqual([
    {
      slug: 'kit',
      fields: [
        { name: 'size', asText: true },
        { name: 'paid', type: 'boolean', relation: null },
        { name: 'weight', type: 'number', relation: null },
      ],
    },
    { slug: 'solo', fields: [] },
  ])
  const sql = objectViewSql('fsm', { slug: 'kit', fields: null }, merged[0]!.fields)
  expect(sql).toContain(`r.data::jsonb ->> 'size' AS "size"`)
  expect(sql).toContain(`THEN (r.data::jsonb -> 'weight')::double precision END AS "weight"`)
  expect(sql).toMatch(/^CREATE VIEW "fsm"\."obj_kit" AS SELECT r\.account_id AS account_id, r\.id AS id/)
})
