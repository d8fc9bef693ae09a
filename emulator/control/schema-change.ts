// Runtime schema changes of a custom object (POST /__emulator/objects/{slug}/fields[/remove]):
// accounts change their fields at runtime (spec: Custom object definition), and a mirror must
// follow. Existing records keep their data; a removed field's values stay in stored data.
import type { Doc } from '../core/collection.js'
import { badRequest, notFound } from '../core/http-error.js'
import type { EmulatorContext } from '../context.js'
import type { FieldDef, ObjectDef } from '../objects/object-definitions.js'

function objectDef(ctx: EmulatorContext, slug: string): ObjectDef {
  const def = slug === 'client' ? ctx.state.clientSchema : ctx.state.objectDefs.find((d) => d.slug === slug)
  if (def === undefined) throw notFound(`No object with slug '${slug}'`)
  return def
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
    name, id: ctx.state.ids.make(ctx.clock.now()), label: typeof body.label === 'string' ? body.label : name, type, required: body.required === true,
    readOnly: false, system: false, options: type === 'select' ? (options ?? []) : null, relation: null,
  }
  def.fields.push(field)
  return { slug, fields: def.fields.map((f) => f.name) }
}

export function removeField(ctx: EmulatorContext, slug: string, body: Doc): Doc {
  const def = objectDef(ctx, slug)
  const at = def.fields.findIndex((f) => f.name === body.name)
  if (at < 0 || def.fields[at]?.system === true) throw badRequest(`No removable field '${String(body.name)}'`)
  def.fields.splice(at, 1)
  return { slug, fields: def.fields.map((f) => f.name) }
}

/** POST /__emulator/objects/{slug}/fields/options {name, value, label?}: a select option added. */
export function addOption(ctx: EmulatorContext, slug: string, body: Doc): Doc {
  const def = objectDef(ctx, slug)
  const field = def.fields.find((f) => f.name === body.name)
  if (field?.type !== 'select' || field.options === null) throw badRequest(`No select field '${String(body.name)}'`)
  if (typeof body.value !== 'string' || body.value === '') throw badRequest("'value' must be a non-empty string")
  if (field.options.some((o) => o.value === body.value)) throw badRequest(`Option '${body.value}' exists`)
  field.options.push({ value: body.value, label: typeof body.label === 'string' ? body.label : body.value })
  return { slug, field: field.name, options: field.options.map((o) => o.value) }
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
