// Custom-record writes (spec: Custom objects, POST / PATCH / upsert PUT; Custom-object stage).
// The stage mirrors into `data[pipeline.fieldName]` and back; `suppress_automation` skips the
// outbound `object.*` events and nothing else; `object.stage_changed` fires only when the
// top-level `status` was in the write body (and the stage moved).
import type { Doc, StoredRecord } from '../core/collection.js'
import { badRequest } from '../core/http-error.js'
import { iso } from '../core/iso-time.js'
import { emit, type EmulatorContext, type Origin } from '../context.js'
import { shape } from '../data/docs.js'
import type { ObjectRecordInternal } from '../data/state.js'
import { checkRequired, validateData, type Locale } from './data-validation.js'
import type { ObjectDef } from './object-definitions.js'
import { firstStage, nextDisplayId, serviceOwnedData } from './record-data.js'

export type ObjectRecord = StoredRecord<ObjectRecordInternal>

export interface RecordWrite {
  /** Validated data patch (already coerced). */
  data: Doc
  /** The stage chosen by the body's top-level keys, if any. */
  stage: string | undefined
  linkedRecords: unknown[] | null | undefined
  suppress: boolean
  statusInBody: boolean
}

function stageValue(v: unknown): string {
  if (typeof v !== 'string') throw badRequest("'status'/'stage' must be a string")
  return v
}

/** Reads the write body. On create only `status` sets the stage; on PATCH/upsert `stage` wins over `status`. */
export function parseRecordWrite(
  ctx: EmulatorContext,
  def: ObjectDef,
  body: unknown,
  mode: 'create' | 'update' | 'upsert',
  locale: Locale,
): RecordWrite {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) throw badRequest('Request body must be a JSON object')
  const b = body as Doc
  if (mode === 'create' && b.data === undefined) throw badRequest("'data' is required")
  const data = b.data === undefined ? {} : validateData(ctx.state, def, b.data, locale)
  let stage: string | undefined
  if (mode === 'create') stage = b.status === undefined ? undefined : stageValue(b.status)
  else if (b.stage !== undefined) stage = stageValue(b.stage)
  else if (b.status !== undefined) stage = stageValue(b.status)
  const suppress = b.suppress_automation === true
  let linkedRecords: unknown[] | null | undefined
  if (b.linkedRecords !== undefined)
    linkedRecords = Array.isArray(b.linkedRecords) ? b.linkedRecords : b.linkedRecords === null ? null : [b.linkedRecords]
  return { data, stage, linkedRecords, suppress, statusInBody: b.status !== undefined }
}

function statusFromData(def: ObjectDef, data: Doc): string | undefined {
  const v = data[def.pipeline.fieldName]
  return typeof v === 'string' ? v : undefined
}

export function createRecord(ctx: EmulatorContext, def: ObjectDef, w: RecordWrite, origin: Origin, locale: Locale): ObjectRecord {
  const { state } = ctx
  const coll = state.objects.get(def.slug)
  if (coll === undefined) throw new RangeError(def.slug)
  checkRequired(def, w.data, locale)
  // A new record without status/stage starts in the pipeline's first stage by order.
  const stage = w.stage ?? statusFromData(def, w.data) ?? firstStage(def)
  const now = ctx.clock.now()
  const id = state.ids.make(now)
  const data = { ...serviceOwnedData(state, def, w.data, stage), ...nextDisplayId(state, def) }
  const rec = coll.insert(id, shape('record', { id, object: def.slug, stage, data, createdAt: iso(now), updatedAt: iso(now) }), now, now, {
    linkedRecords: w.linkedRecords ?? null,
  })
  ctx.counters.bump(`writes.objects.${origin}`)
  if (!w.suppress) emit(ctx, origin, 'object.created', rec.doc)
  return rec
}

export function updateRecord(
  ctx: EmulatorContext,
  def: ObjectDef,
  rec: ObjectRecord,
  w: RecordWrite,
  origin: Origin,
  locale: Locale,
): void {
  const coll = ctx.state.objects.get(def.slug)
  if (coll === undefined) throw new RangeError(def.slug)
  // Merge: omitted keys kept, null sets null, keys cannot be removed.
  const merged: Doc = { ...(rec.doc.data as Doc), ...w.data }
  checkRequired(def, merged, locale)
  const previous = String(rec.doc.stage)
  const dataStatus = w.data[def.pipeline.fieldName]
  const stage = w.stage ?? (typeof dataStatus === 'string' ? dataStatus : previous)
  if (w.linkedRecords !== undefined) rec.internal.linkedRecords = w.linkedRecords
  // A status-only update drops the stored linkedRecords (spec: Custom objects, `linkedRecords`).
  else if (w.stage !== undefined && Object.keys(w.data).length === 0) rec.internal.linkedRecords = null
  coll.write(rec, shape('record', { ...rec.doc, stage, data: serviceOwnedData(ctx.state, def, merged, stage) }), ctx.clock.now())
  ctx.counters.bump(`writes.objects.${origin}`)
  if (w.suppress) return
  emit(ctx, origin, 'object.updated', rec.doc)
  if (w.statusInBody && stage !== previous)
    emit(ctx, origin, 'object.stage_changed', { ...rec.doc, transition: { from: previous, to: stage } })
}

/** In-app deletion (the API has no delete): soft, emits `object.deleted` carrying only the id. */
export function deleteRecord(ctx: EmulatorContext, def: ObjectDef, rec: ObjectRecord, origin: Origin): void {
  ctx.state.objects.get(def.slug)?.softDelete(rec, ctx.clock.now())
  ctx.counters.bump(`writes.objects.${origin}`)
  emit(ctx, origin, 'object.deleted', { id: rec.id })
}
