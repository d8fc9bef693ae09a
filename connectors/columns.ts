// Columns as data (src/model/table-spec.ts): each connector lists its table's columns once, with
// kind, nullability, the payload path it maps from and a description, and the row mapping is
// compiled from that list. A column's converter follows from its kind (mapping.ts); a column whose
// value needs more than a path says how with `map`, and its kind still converts what `map` returns.
import type { ColumnKind, ColumnSpec, TableSpec } from '../src/model/table-spec.js'
import type { ChildRows, Payload, SqlCell } from '../src/model/rows.js'
import { flag, integer, json, real, text, time } from './mapping.js'

export interface MappedColumn extends ColumnSpec {
  /** Reads the upstream value when `from` alone cannot say how; the result is converted by `kind`. */
  readonly map?: (p: Payload) => unknown
}

/** A table whose columns may carry their mapping. */
export interface MappedTable extends TableSpec {
  readonly columns: readonly MappedColumn[]
}

/** A column of the account's data: nullable unless told otherwise. */
export function col(
  name: string,
  kind: ColumnKind,
  from: string | undefined,
  description: string,
  options: { nullable?: boolean; map?: (p: Payload) => unknown } = {},
): MappedColumn {
  return {
    name,
    kind,
    nullable: options.nullable ?? true,
    ...(from === undefined ? {} : { from }),
    description,
    ...(options.map === undefined ? {} : { map: options.map }),
  }
}

// The columns every mirrored record table shares, declared once: its key first, this tail last.
export const ID: MappedColumn = col('id', 'text', 'id', "The record's upstream id.", { nullable: false })
export const CREATED_AT = col('created_at', 'time', 'createdAt', 'When the record was created upstream.')
export const UPDATED_AT = col(
  'updated_at',
  'time',
  'updatedAt',
  'When the record last changed upstream; newer wins. Empty for a tombstone of a record never seen, and for legacy records without one.',
  { nullable: false },
)
export const DELETED_AT = col(
  'deleted_at',
  'time',
  undefined,
  'When fsm-sync learnt the record was deleted upstream; NULL while it is live.',
)
export const RAW = col('raw', 'json', undefined, 'The latest full payload as received, as JSON text.', { nullable: false })
export const SYNCED_AT = col('synced_at', 'time', undefined, 'When fsm-sync last wrote the row.', { nullable: false })
export const RECORD_TAIL: readonly MappedColumn[] = [CREATED_AT, UPDATED_AT, DELETED_AT, RAW, SYNCED_AT]

/** Names the record writer and the row builders fill themselves, never a connector's mapper. */
const COMMON = new Set(['id', ...RECORD_TAIL.map((c) => c.name)])

/** A record table: `id`, the connector's own columns, the shared tail. */
export function recordTable(name: string, description: string, own: readonly MappedColumn[]): MappedTable {
  return { name, description, role: 'data', primaryKey: ['id'], columns: [ID, ...own, ...RECORD_TAIL] }
}

const CONVERT: Readonly<Record<Exclude<ColumnKind, 'bytes'>, (v: unknown) => SqlCell>> = { text, time, real, integer, flag, json }

/** A column's converter, from its kind. */
function converter(table: string, c: MappedColumn): (v: unknown) => SqlCell {
  if (c.kind === 'bytes') throw new TypeError(`column ${table}.${c.name}: a bytes column cannot be read from a JSON payload`)
  return CONVERT[c.kind]
}

type Reader = (p: Payload) => unknown

const asObject = (v: unknown): Payload | undefined =>
  typeof v === 'object' && v !== null && !Array.isArray(v) ? (v as Payload) : undefined

/** A getter for one dotted path (`jobPhone.number`): undefined where a step is not an object. */
function pathReader(path: string): Reader {
  const steps = path.split('.')
  if (steps.length === 1) {
    const [k] = steps as [string]
    return (p) => p[k]
  }
  return (p) => {
    let v: unknown = p
    for (const step of steps) {
      const o = asObject(v)
      if (o === undefined) return undefined
      v = o[step]
    }
    return v
  }
}

/** A getter for `from`: its alternatives (`jobType|type`) in order, the first one present (not null). */
export function reader(from: string): Reader {
  const alternatives = from.split('|').map(pathReader)
  if (alternatives.length === 1) return alternatives[0]!
  return (p) => {
    for (const read of alternatives) {
      const v = read(p)
      if (v !== undefined && v !== null) return v
    }
    return undefined
  }
}

/**
 * The mapping of a table's own columns, compiled once: a function returning a fresh object with
 * each mapped column, in declaration order. The shared record columns and columns with neither
 * `from` nor `map` (filled by fsm-sync) are left out.
 *
 * This is the hot path of every sweep page, so the function is generated as one object literal
 * (`{ record_id: text(p["recordId"]), ... }`): every row gets the same shape at the cost of a
 * literal, where a loop of keyed stores measured about a third slower. Only declared column names
 * and paths reach the generated text, each as a JSON string literal.
 */
export function compileColumns(table: MappedTable): (p: Payload) => Record<string, SqlCell> {
  const fns: ((v: unknown) => unknown)[] = []
  const fields: string[] = []
  const use = (fn: (v: unknown) => unknown): string => `f[${fns.push(fn) - 1}]`
  for (const c of table.columns) {
    if (COMMON.has(c.name)) continue
    const from = c.from
    if (c.map === undefined && from === undefined) continue
    const convert = use(converter(table.name, c))
    let value: string
    if (c.map !== undefined) value = `${convert}(${use(c.map as (v: unknown) => unknown)}(p))`
    else if (/^[^.|]+$/.test(from!)) value = `${convert}(p[${JSON.stringify(from)}])`
    else value = `${convert}(${use(reader(from!) as (v: unknown) => unknown)}(p))`
    fields.push(`${JSON.stringify(c.name)}: ${value}`)
  }
  // eslint-disable-next-line @typescript-eslint/no-implied-eval -- generated from declarations only (see above)
  const build = new Function('f', `'use strict'; return (p) => ({ ${fields.join(', ')} })`) as (
    f: readonly ((v: unknown) => unknown)[],
  ) => (p: Payload) => Record<string, SqlCell>
  return build(fns)
}

/** A child table's declaration: rows from one array of the parent's payload. */
export interface ChildDeclaration {
  readonly table: string
  readonly description: string
  /** The column holding the parent's id. */
  readonly parentColumn: string
  /** The payload path of the array; each column's `from` is `<each>[]` (the element) or `<each>[].<path>`. */
  readonly each: string
  /** The column holding the element's position in the array, when the key needs it. */
  readonly position?: string
  /** The key after the parent column. */
  readonly key: readonly string[]
  readonly columns: readonly MappedColumn[]
}

export interface CompiledChild {
  readonly spec: MappedTable
  readonly rows: (p: Payload, parentId: string) => ChildRows
}

/**
 * A child table as data and its rows, compiled once. An element whose value for a NOT NULL column
 * is missing (or of another type) is skipped, and an element repeating a key already seen is too,
 * so a payload listing an assignee twice stores one row.
 */
export function compileChild(parent: string, d: ChildDeclaration): CompiledChild {
  const parentCol = col(d.parentColumn, 'text', undefined, `The ${parent} row these rows belong to.`, { nullable: false })
  const positionCol =
    d.position === undefined
      ? []
      : [col(d.position, 'integer', undefined, `The element's position in \`${d.each}\`, from 0.`, { nullable: false })]
  const spec: MappedTable = {
    name: d.table,
    description: d.description,
    role: 'data',
    primaryKey: [d.parentColumn, ...d.key],
    columns: [parentCol, ...positionCol, ...d.columns],
    parent: { table: parent, column: d.parentColumn },
  }
  const prefix = `${d.each}[]`
  const fns: ((v: unknown) => unknown)[] = []
  const use = (fn: (v: unknown) => unknown): string => `f[${fns.push(fn) - 1}]`
  const fields = [`${JSON.stringify(d.parentColumn)}: parentId`]
  if (d.position !== undefined) fields.push(`${JSON.stringify(d.position)}: i`)
  const required: string[] = []
  for (const c of d.columns) {
    const from = c.from
    if (from === undefined || (from !== prefix && !from.startsWith(`${prefix}.`)))
      throw new TypeError(`column ${d.table}.${c.name}: from must be ${prefix} or ${prefix}.<path>`)
    const convert = use(converter(d.table, c))
    const path = from === prefix ? undefined : from.slice(prefix.length + 1)
    // The element itself, one of its properties, or a path into it (`x` is the element as an object).
    const value =
      path === undefined ? 'e' : /^[^.|]+$/.test(path) ? `x[${JSON.stringify(path)}]` : `${use(reader(path) as (v: unknown) => unknown)}(x)`
    fields.push(`${JSON.stringify(c.name)}: ${convert}(${value})`)
    if (!c.nullable) required.push(c.name)
  }
  // Like compileColumns: one object literal per element (see there).
  // eslint-disable-next-line @typescript-eslint/no-implied-eval -- generated from declarations only
  const element = new Function(
    'f',
    'o',
    `'use strict'; return (e, parentId, i) => { const x = o(e); return { ${fields.join(', ')} } }`,
  ) as (
    f: readonly ((v: unknown) => unknown)[],
    o: (v: unknown) => Payload,
  ) => (e: unknown, parentId: string, i: number) => Record<string, SqlCell>
  const toRow = element(fns, (v) => asObject(v) ?? {})
  // Repeated elements are dropped by the key after the parent column (unless the position is in it).
  const key = d.position !== undefined && d.key.includes(d.position) ? [] : d.key
  for (const k of key)
    if (!d.columns.some((c) => c.name === k)) throw new TypeError(`table ${d.table}: its key names ${k}, not a declared column`)
  const keyOf =
    key.length === 0
      ? undefined
      : key.length === 1
        ? (row: Record<string, SqlCell>) => row[key[0]!]
        : (row: Record<string, SqlCell>) => JSON.stringify(key.map((k) => row[k]))
  const list = reader(d.each)
  return {
    spec,
    rows: (p, parentId) => {
      const elements = list(p)
      const rows: Record<string, SqlCell>[] = []
      if (Array.isArray(elements)) {
        const seen = keyOf === undefined ? undefined : new Set<unknown>()
        for (let i = 0; i < elements.length; i++) {
          const row = toRow(elements[i], parentId, i)
          if (required.length > 0 && required.some((k) => row[k] === null)) continue
          if (seen !== undefined) {
            const k = keyOf!(row)
            if (seen.has(k)) continue
            seen.add(k)
          }
          rows.push(row)
        }
      }
      return { table: d.table, parentColumn: d.parentColumn, rows }
    },
  }
}
