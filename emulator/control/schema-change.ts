// Runtime schema changes of a custom object (POST /__emulator/objects/{slug}/fields[/remove]):
// accounts change their fields at runtime (spec: Custom object definition), and a mirror must
// follow. Existing records keep their data; a removed field's values stay in stored data.
//
// The v1 routes read definitions through the five-minute schema cache (objects/schema-cache.ts).
// A change flushes the slug's entry unless the body says `cached: true`: then the entry is held
// with the definition as it was before the change, and the change shows in the schema route and
// in `data` validation only once that entry expires on the emulator clock.
import type { Doc } from '../core/collection.js'
import { badRequest, notFound } from '../core/http-error.js'
import type { EmulatorContext } from '../context.js'
import type { FieldDef, ObjectDef } from '../objects/object-definitions.js'

function objectDef(ctx: EmulatorContext, slug: string): ObjectDef {
  const def = slug === 'client' ? ctx.state.clientSchema : ctx.state.objectDefs.find((d) => d.slug === slug)
  if (def === undefined) throw notFound(`No object with slug '${slug}'`)
  return def
}

/** Runs a definition change with the cache behaviour the body asks for (`cached`, default false). */
function change(ctx: EmulatorContext, def: ObjectDef, body: Doc, apply: () => Doc): Doc {
  if (body.cached !== undefined && typeof body.cached !== 'boolean') throw badRequest("'cached' must be a boolean")
  const cache = ctx.state.schemaCache
  const now = ctx.clock.now()
  if (body.cached === true) cache.hold(def, now)
  const out = apply()
  if (body.cached !== true) cache.flush(def.slug)
  const entry = cache.describe(now).find((e) => e.slug === def.slug)
  return { ...out, visibleFrom: body.cached === true && entry !== undefined ? entry.expiresAt : new Date(now).toISOString() }
}

export function addField(ctx: EmulatorContext, slug: string, body: Doc): Doc {
  const def = objectDef(ctx, slug)
  const name = body.name
  if (typeof name !== 'string' || !/^[A-Za-z_][A-Za-z0-9_]*$/.test(name)) throw badRequest("'name' must be an identifier")
  if (def.fields.some((f) => f.name === name)) throw badRequest(`Field '${name}' exists`)
  const type = body.type ?? 'text'
  if (type !== 'text' && type !== 'select') throw badRequest("'type' must be text or select")
  const options = Array.isArray(body.options) ? (body.options as unknown[]).map((v) => ({ value: String(v), label: String(v) })) : null
  const field: FieldDef = {
    name,
    id: ctx.state.ids.make(ctx.clock.now()),
    label: typeof body.label === 'string' ? body.label : name,
    type,
    required: body.required === true,
    readOnly: false,
    system: false,
    options: type === 'select' ? (options ?? []) : null,
    relation: null,
  }
  return change(ctx, def, body, () => {
    def.fields.push(field)
    return { slug, fields: def.fields.map((f) => f.name) }
  })
}

export function removeField(ctx: EmulatorContext, slug: string, body: Doc): Doc {
  const def = objectDef(ctx, slug)
  const at = def.fields.findIndex((f) => f.name === body.name)
  if (at < 0 || def.fields[at]?.system === true) throw badRequest(`No removable field '${String(body.name)}'`)
  return change(ctx, def, body, () => {
    def.fields.splice(at, 1)
    return { slug, fields: def.fields.map((f) => f.name) }
  })
}

/** POST /__emulator/objects/{slug}/fields/options {name, value, label?}: a select option added. */
export function addOption(ctx: EmulatorContext, slug: string, body: Doc): Doc {
  const def = objectDef(ctx, slug)
  const field = def.fields.find((f) => f.name === body.name)
  if (field?.type !== 'select' || field.options === null) throw badRequest(`No select field '${String(body.name)}'`)
  if (typeof body.value !== 'string' || body.value === '') throw badRequest("'value' must be a non-empty string")
  if (field.options.some((o) => o.value === body.value)) throw badRequest(`Option '${body.value}' exists`)
  const option = { value: body.value, label: typeof body.label === 'string' ? body.label : body.value }
  const options = field.options
  return change(ctx, def, body, () => {
    options.push(option)
    return { slug, field: field.name, options: options.map((o) => o.value) }
  })
}

/**
 * POST /__emulator/objects/{slug}/stages {value, label?, isFinal?}: a pipeline stage added (last by
 * order, no transitions). Pipelines are read live (spec: schema route), so the stage shows at once;
 * the pipeline field's select options (a field definition) follow the schema cache.
 */
export function addStage(ctx: EmulatorContext, slug: string, body: Doc): Doc {
  // Client stages are the fixed account list the client routes validate against.
  if (slug === 'client') throw badRequest('Client stages are fixed in the emulator; stages can be added to custom objects only')
  const def = objectDef(ctx, slug)
  if (typeof body.value !== 'string' || body.value === '') throw badRequest("'value' must be a non-empty string")
  const { pipeline } = def
  if (pipeline.stages.some((st) => st.value === body.value)) throw badRequest(`Stage '${body.value}' exists`)
  const value = body.value
  const label = typeof body.label === 'string' ? body.label : value
  const statusField = def.fields.find((f) => f.name === pipeline.fieldName)
  return change(ctx, def, body, () => {
    pipeline.stages.push({ value, label, order: Math.max(0, ...pipeline.stages.map((st) => st.order)) + 1, isFinal: body.isFinal === true })
    pipeline.transitions[value] = []
    statusField?.options?.push({ value, label })
    return { slug, stages: pipeline.stages.map((st) => st.value) }
  })
}

/** POST /__emulator/objects/{slug}/schema-cache/flush (or /__emulator/schema-cache/flush for all). */
export function flushSchemaCache(ctx: EmulatorContext, slug: string | undefined): Doc {
  if (slug !== undefined) objectDef(ctx, slug)
  ctx.state.schemaCache.flush(slug)
  return { flushed: slug ?? 'all', entries: ctx.state.schemaCache.describe(ctx.clock.now()) }
}

/**
 * POST /__emulator/objects/{slug}/enabled {enabled}: an account disables or re-enables an object.
 * A disabled object leaves discovery while its records stay readable and writable (spec, Custom
 * objects: GET /api/v1/objects).
 */
export function setEnabled(ctx: EmulatorContext, slug: string, body: Doc): Doc {
  const def = ctx.state.objectDefs.find((d) => d.slug === slug)
  if (def === undefined) throw notFound(`No object with slug '${slug}'`)
  if (typeof body.enabled !== 'boolean') throw badRequest("'enabled' must be a boolean")
  def.enabled = body.enabled
  return { slug, enabled: def.enabled }
}
