// When a custom object's schema is fetched (docs/sweeping.md, What a sweep costs): the schema route costs
// one request per object, and the upstream serves definitions from a five-minute cache anyway (the
// API's specification, Limits: custom-schema cache), so a sweep does not fetch them every time. A
// schema is fetched when discovery shows an object that is new, changed (its discovery item
// differs) or enabled again; when a record read by a sweep carries what the stored schema does not
// know (a field, or a select value outside the field's options) and was written after that schema
// was fetched; and otherwise once its stored copy is five minutes old. The client schema (the
// field ids behind clients.properties) follows the five-minute rule alone. When each was fetched is
// kept in sync_state under the discovery run's stream (`objects`), so one-shot `sync` commands
// share it with the daemon.
import { z } from 'zod'
import { customObjects } from '../../connectors/custom-objects.js'
import type { DiscoveryItem } from '../model/custom-objects.js'
import type { Payload } from '../model/rows.js'
import { isoNow, parseInstant } from '../model/timestamps.js'
import type { SyncContext } from './sync-context.js'

/** How long a fetched schema is used: the upstream's own cache of definitions lasts five minutes. */
export const SCHEMA_MAX_AGE_MS = 5 * 60_000

/** The key of the client schema among the fetch times (a built-in module, never a custom object slug). */
export const CLIENT_SCHEMA = 'client'

const instant = z.string().refine((text) => !Number.isNaN(parseInstant(text)), 'not a time')

export const SchemaTimesSchema = z.object({
  schemas: z.record(z.string(), z.object({ fetchedAt: instant, discovery: z.string().optional() })),
})
export type SchemaTimes = z.infer<typeof SchemaTimesSchema>

/** The stored fetch times; an unreadable row counts as none (every schema is fetched again, nothing else is lost). */
export function readSchemaTimes(ctx: SyncContext): SchemaTimes {
  const stored = ctx.state.readCursor(customObjects.name, SchemaTimesSchema)
  return stored.ok && stored.cursor !== undefined ? stored.cursor : { schemas: {} }
}

export function recordSchemaFetch(ctx: SyncContext, key: string, item: DiscoveryItem | undefined): void {
  const times = readSchemaTimes(ctx)
  const now = isoNow(ctx.now())
  times.schemas[key] = { fetchedAt: now, ...(item === undefined ? {} : { discovery: JSON.stringify(item.raw) }) }
  ctx.state.setCursor(customObjects.name, times, now)
}

/** Whether the schema under `key` is due by discovery and age (not by records). Pure. */
export function schemaDue(
  times: SchemaTimes,
  key: string,
  now: number,
  seen: { item?: DiscoveryItem; stored: boolean; disabled: boolean },
): boolean {
  const t = times.schemas[key]
  if (t === undefined || !seen.stored || seen.disabled) return true
  if (seen.item !== undefined && t.discovery !== JSON.stringify(seen.item.raw)) return true
  return now - parseInstant(t.fetchedAt) >= SCHEMA_MAX_AGE_MS
}

interface StoredField {
  name?: unknown
  type?: unknown
  options?: unknown
}

/**
 * The keys and select values of a record's `data` that the stored schema does not know. Known
 * besides the schema's fields: what the service writes into `data` itself (spec, Custom object
 * definition and record): a `<base>Name` mirror beside each relation `<base>Id`, `customId` and
 * `customIdCounter`, the stage under the pipeline's field name, and keys starting with `__`. Pure.
 */
export function unknownToSchema(fieldsJson: string | null, pipelineJson: string | null, data: Payload): string[] {
  const fields = parseArray(fieldsJson) as StoredField[]
  const known = new Map<string, StoredField>()
  for (const f of fields) if (typeof f.name === 'string') known.set(f.name, f)
  const extra = new Set(['customId', 'customIdCounter'])
  for (const f of fields)
    if (f.type === 'relation' && typeof f.name === 'string' && f.name.endsWith('Id') && f.name.length > 2)
      extra.add(`${f.name.slice(0, -2)}Name`)
  const pipeline = parseObject(pipelineJson)
  if (typeof pipeline?.fieldName === 'string') extra.add(pipeline.fieldName)
  const unknown: string[] = []
  for (const [k, v] of Object.entries(data)) {
    const field = known.get(k)
    if (field === undefined) {
      if (!extra.has(k) && !k.startsWith('__')) unknown.push(k)
    } else if (field.type === 'select' && Array.isArray(field.options) && typeof v === 'string' && v !== '') {
      const values = (field.options as { value?: unknown }[]).map((o) => o?.value)
      if (!values.includes(v)) unknown.push(`${k}=${v}`)
    }
  }
  return unknown
}

function parseArray(text: string | null): unknown[] {
  try {
    const v: unknown = text === null ? [] : JSON.parse(text)
    return Array.isArray(v) ? v.filter((x) => typeof x === 'object' && x !== null) : []
  } catch {
    return []
  }
}

function parseObject(text: string | null): Record<string, unknown> | undefined {
  try {
    const v: unknown = text === null ? undefined : JSON.parse(text)
    return typeof v === 'object' && v !== null && !Array.isArray(v) ? (v as Record<string, unknown>) : undefined
  } catch {
    return undefined
  }
}
