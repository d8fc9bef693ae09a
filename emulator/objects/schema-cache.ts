// The five-minute custom-schema cache (spec: Custom objects, schema route "Definitions are cached
// for five minutes per instance; pipeline stages are read live"; Errors, `Unknown field(s) in
// data` "refetch the schema and retry once"; Limits, "Custom-schema cache 5 minutes").
//
// The emulator is one instance with one cache entry per slug, on the emulator clock. An entry is
// a deep copy of the object's field definitions taken when it is filled and served until five
// minutes later; the next use after that refills it from the live definition. Every v1 use of a
// definition reads through it (the schema route, `data` validation on create/PATCH/upsert, the
// list's filter-key check); the pipeline (stages, transitions) is always the live one. App writes
// (the control API's mutate, churn) see live definitions: the app owns them.
import type { FieldDef, ObjectDef } from './object-definitions.js'

export const SCHEMA_CACHE_MS = 5 * 60_000

interface Entry {
  fields: FieldDef[]
  filledMs: number
  expiresMs: number
}

export class SchemaCache {
  private readonly entries = new Map<string, Entry>()

  /** The definition as the instance serves it: cached fields, live everything else. */
  view(def: ObjectDef, nowMs: number): ObjectDef {
    return { ...def, fields: this.entry(def, nowMs).fields }
  }

  /**
   * Called before a field change the caller wants cached: an empty (or expired) entry is filled
   * with the definition as it is before the change, so the change stays invisible until that
   * entry expires, at most five minutes later.
   */
  hold(def: ObjectDef, nowMs: number): void {
    this.entry(def, nowMs)
  }

  /** Drops one slug's entry (or every entry): the next use reads the live definition. */
  flush(slug?: string): void {
    if (slug === undefined) this.entries.clear()
    else this.entries.delete(slug)
  }

  describe(nowMs: number): { slug: string; filledAt: string; expiresAt: string; fresh: boolean }[] {
    return [...this.entries.entries()].map(([slug, e]) => ({
      slug,
      filledAt: new Date(e.filledMs).toISOString(),
      expiresAt: new Date(e.expiresMs).toISOString(),
      fresh: nowMs < e.expiresMs,
    }))
  }

  private entry(def: ObjectDef, nowMs: number): Entry {
    let e = this.entries.get(def.slug)
    // `nowMs < filledMs`: the clock was frozen at an earlier instant; treat the entry as stale.
    if (e === undefined || nowMs >= e.expiresMs || nowMs < e.filledMs) {
      e = { fields: structuredClone(def.fields), filledMs: nowMs, expiresMs: nowMs + SCHEMA_CACHE_MS }
      this.entries.set(def.slug, e)
    }
    return e
  }
}
