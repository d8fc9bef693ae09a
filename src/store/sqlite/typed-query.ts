// Typed queries run synchronously. kysely builds a query against the mirror's schema
// (mirror-schema.ts) and infers the shape of its rows; the compiled SQL and parameters then run as
// a better-sqlite3 statement on the caller's connection, so a query can sit inside a synchronous
// transaction with the record writer's statements (kysely's own execution is async and would leave
// the transaction between two awaits). The builder has no connection: it only compiles (kysely's
// DummyDriver), so one serves every mirror. kysely loads when the first query is built, not when a
// module imports this one: a command whose reads are plain statements (`status`) never loads it.
import { createRequire } from 'node:module'
import type { Compilable, CompiledQuery, Kysely } from 'kysely'
import type * as KyselyModule from 'kysely'
import type { Sqlite } from './mirror-database.js'
import type { MirrorSchema } from './mirror-schema.js'

let builder: Kysely<MirrorSchema> | undefined

function load(): Kysely<MirrorSchema> {
  // Synchronous on purpose (queries run inside synchronous transactions): kysely's CommonJS build.
  const k = createRequire(import.meta.url)('kysely') as typeof KyselyModule
  return new k.Kysely<MirrorSchema>({
    dialect: {
      createAdapter: () => new k.SqliteAdapter(),
      createDriver: () => new k.DummyDriver(),
      createIntrospector: (db) => new k.SqliteIntrospector(db),
      createQueryCompiler: () => new k.SqliteQueryCompiler(),
    },
  })
}

/** Builds queries on the mirror's tables; compile-only, so never `.execute()` one (use `rows`/`run` below). */
export const mirrorQuery: Kysely<MirrorSchema> = new Proxy(Object.create(null) as Kysely<MirrorSchema>, {
  // Built on the first use, then every property is the builder's own (methods bound to it).
  get: (_, key): unknown => {
    builder ??= load()
    const value: unknown = Reflect.get(builder, key, builder)
    return typeof value === 'function' ? (value as (...args: unknown[]) => unknown).bind(builder) : value
  },
})

/** The row type kysely inferred for a query. */
export type RowOf<Q> = Q extends Compilable<infer O> ? O : never

function compiled(query: Compilable): CompiledQuery {
  return query.compile()
}

/** Every row of a query that returns rows (a SELECT, or a write with RETURNING). */
export function rows<Q extends Compilable>(sqlite: Sqlite, query: Q): RowOf<Q>[] {
  const { sql, parameters } = compiled(query)
  // The boundary's one cast: the statement is the compiled query, so its rows have the query's type.
  return sqlite.prepare(sql).all(...parameters) as RowOf<Q>[]
}

/** The first row of a query that returns rows, or undefined when it returns none. */
export function firstRow<Q extends Compilable>(sqlite: Sqlite, query: Q): RowOf<Q> | undefined {
  const { sql, parameters } = compiled(query)
  // As in `rows`: the statement is the compiled query.
  return sqlite.prepare(sql).get(...parameters) as RowOf<Q> | undefined
}

/** Runs a write without RETURNING; returns the rows it changed. */
export function run(sqlite: Sqlite, query: Compilable): number {
  const { sql, parameters } = compiled(query)
  return sqlite.prepare(sql).run(...parameters).changes
}
