// custom_object_types: discovery item, schema fields and pipeline per slug, and the view built from
// them. A schema change rebuilds the view in the same transaction that stores the schema.
import type { DiscoveryItem, ObjectSchema } from '../../model/custom-objects.js'
import { quoteIdentifier } from '../../model/sql-names.js'
import { viewName, viewStatements } from './custom-object-views.js'
import type { Sqlite } from '../sqlite/mirror-database.js'

export interface StoredType {
  slug: string
  fields: string | null
  pipeline: string | null
  disabledAt: string | null
}

/** A type whose view the mirror holds, as the catalog describes it. */
export interface TypeWithView {
  slug: string
  nameSingular: string | null
  /** The schema's fields as stored (JSON text of an array), or null before a schema was read. */
  fields: string | null
  disabledAt: string | null
}

export class CustomObjectTypes {
  constructor(private readonly sqlite: Sqlite) {}

  /**
   * The types whose view was built (a type with no schema read yet has none), in slug order; none
   * on a mirror without custom_object_types (a file from before custom objects).
   */
  withViews(): TypeWithView[] {
    const table = this.sqlite.prepare(`SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'custom_object_types'`).get()
    if (table === undefined) return []
    const types = this.sqlite
      .prepare(`SELECT slug, name_singular AS nameSingular, fields, disabled_at AS disabledAt FROM custom_object_types ORDER BY slug`)
      .all() as TypeWithView[]
    const views = new Set(
      (this.sqlite.prepare(`SELECT name FROM sqlite_master WHERE type = 'view'`).pluck().all() as string[]).map((n) => n.toLowerCase()),
    )
    return types.filter((t) => views.has(viewName(t.slug).toLowerCase()))
  }

  /** Each type's slug and stored fields, in slug order (what the destination builds its views from). */
  fields(): { slug: string; fields: string | null }[] {
    return this.sqlite.prepare(`SELECT slug, fields FROM custom_object_types ORDER BY slug`).all() as {
      slug: string
      fields: string | null
    }[]
  }

  all(): StoredType[] {
    return (
      this.sqlite.prepare('SELECT slug, fields, pipeline, disabled_at FROM custom_object_types ORDER BY slug').all() as {
        slug: string
        fields: string | null
        pipeline: string | null
        disabled_at: string | null
      }[]
    ).map((r) => ({ slug: r.slug, fields: r.fields, pipeline: r.pipeline, disabledAt: r.disabled_at }))
  }

  /**
   * Stores a discovered type and its schema; returns true when the schema changed (the view was
   * rebuilt). A type seen again after being disabled is enabled again.
   */
  store(item: DiscoveryItem, schema: ObjectSchema, now: string): boolean {
    // The fields as the schema gave them (options, relation, flags): a select option added shows here.
    const fields = JSON.stringify(Array.isArray(schema.raw.fields) ? schema.raw.fields : schema.fields)
    const pipeline = JSON.stringify(schema.pipeline)
    const current = this.sqlite
      .prepare('SELECT fields, pipeline, disabled_at, view_name FROM custom_object_types WHERE slug = ?')
      .get(item.slug) as
      { fields: string | null; pipeline: string | null; disabled_at: string | null; view_name: string | null } | undefined
    const changed = current === undefined || current.fields !== fields || current.pipeline !== pipeline
    const view = viewName(item.slug)
    const raw = item.raw
    this.sqlite.transaction(() => {
      this.sqlite
        .prepare(
          `INSERT INTO custom_object_types (slug, name_singular, name_plural, is_child_object, parent_object_slug, schema_url, fields, pipeline, disabled_at, view_name, raw, synced_at)
           VALUES (@slug, @nameSingular, @namePlural, @isChild, @parent, @schemaUrl, @fields, @pipeline, NULL, @view, @raw, @now)
           ON CONFLICT(slug) DO UPDATE SET name_singular = excluded.name_singular, name_plural = excluded.name_plural,
             is_child_object = excluded.is_child_object, parent_object_slug = excluded.parent_object_slug, schema_url = excluded.schema_url,
             fields = excluded.fields, pipeline = excluded.pipeline, disabled_at = NULL, view_name = excluded.view_name,
             raw = excluded.raw, synced_at = excluded.synced_at`,
        )
        .run({
          slug: item.slug,
          nameSingular: typeof raw.nameSingular === 'string' ? raw.nameSingular : null,
          namePlural: typeof raw.namePlural === 'string' ? raw.namePlural : null,
          isChild: typeof raw.isChildObject === 'boolean' ? (raw.isChildObject ? 1 : 0) : null,
          parent: typeof raw.parentObjectSlug === 'string' ? raw.parentObjectSlug : null,
          schemaUrl: typeof raw.schemaUrl === 'string' ? raw.schemaUrl : null,
          fields,
          pipeline,
          view,
          raw: JSON.stringify({ discovery: raw, schema: schema.raw }),
          now,
        })
      // A view named by an older rule (custom-object-views.ts, viewName) goes, unless another object's view has that name now.
      const old = current?.view_name
      if (old !== undefined && old !== null && old !== view) {
        const claimed = this.sqlite.prepare('SELECT 1 FROM custom_object_types WHERE view_name = ? AND slug <> ?').get(old, item.slug)
        if (claimed === undefined) this.sqlite.exec(`DROP VIEW IF EXISTS ${quoteIdentifier(old)}`)
      }
      if (changed || old !== view || !this.viewExists(view)) for (const s of viewStatements(item.slug, schema.fields)) this.sqlite.exec(s)
    })()
    return changed
  }

  /** A slug gone from discovery is disabled, not deleted: its records stay readable upstream. */
  disable(slug: string, now: string): boolean {
    return (
      this.sqlite.prepare('UPDATE custom_object_types SET disabled_at = ? WHERE slug = ? AND disabled_at IS NULL').run(now, slug).changes >
      0
    )
  }

  private viewExists(name: string): boolean {
    return this.sqlite.prepare(`SELECT 1 FROM sqlite_master WHERE type = 'view' AND name = ?`).get(name) !== undefined
  }
}
