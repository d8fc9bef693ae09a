// The Postgres destination's settings (docs/postgres.md) and what the rest of the config layer
// needs of its URL: whether it can be used, the password put into it, and the values never logged.
import { z } from 'zod'
import { doc, int } from './schema-parts.js'

/** `destination`: where the mirror is replicated; no URL, no destination. */
export const DestinationSchema = z
  .strictObject({
    postgres: z
      .strictObject({
        url: z
          .string()
          .refine((s) => postgresUrlProblem(s) === undefined, {
            message: 'must be a URL such as postgres://user:password@host:5432/database (the value is not shown)',
          })
          .optional()
          .meta(
            doc(
              'A `postgres://user:password@host:5432/database` URL (standard libpq query parameters such as `sslmode` are passed on). Set, `fsm-sync run` replicates the mirror into Postgres continuously and `fsm-sync replicate` catches it up once (docs/postgres.md); unset, no destination. A secret: never logged, never echoed in a message, even when it is wrong.',
              { env: 'FSM_POSTGRES_URL' },
            ),
          ),
        password: z
          .string()
          .min(1)
          .optional()
          .meta(
            doc(
              "The password of `destination.postgres.url`'s user, as it is (no URL encoding, any character): set, it replaces the URL's own, so the URL can be written without one (`postgres://fsm@warehouse:5432/warehouse`). A secret: never logged.",
              { env: 'FSM_POSTGRES_PASSWORD' },
            ),
          ),
        schema: z
          .string()
          .regex(/^[A-Za-z_][A-Za-z0-9_]{0,62}$/, { message: 'must be a plain identifier of up to 63 letters, digits or _, e.g. fsm' })
          .default('fsm')
          .meta(
            doc("The Postgres schema the replica's tables and views are created in (created when missing). A plain identifier.", {
              env: 'FSM_POSTGRES_SCHEMA',
            }),
          ),
        lockTimeoutSeconds: int(0, 86_400)
          .default(30)
          .meta(
            doc(
              "How long a statement of the destination may wait for a lock on Postgres (its `lock_timeout`), e.g. behind an analyst's open transaction on a replica table; past it the statement fails and is retried with back-off. A wait longer than a few seconds is reported (log, `fsm-sync status`) with the session holding the lock. 0: no limit.",
              { unit: 's', env: 'FSM_POSTGRES_LOCK_TIMEOUT' },
            ),
          ),
        statementTimeoutSeconds: int(0, 86_400)
          .default(900)
          .meta(
            doc(
              "How long one statement of the destination may run on Postgres (its `statement_timeout`; a table's COPY in a load is one statement); past it, it fails and is retried. A server silent 30 s longer than this (a frozen backend, a half-open connection) has its connection cut. 0: no limit.",
              { unit: 's', env: 'FSM_POSTGRES_STATEMENT_TIMEOUT' },
            ),
          ),
        maxConnections: int(1, 1000)
          .default(10)
          .meta(
            doc(
              "The most connections the process opens to Postgres, for every account's replica together: each account's destination borrows one for a batch or a load and gives it back, so many accounts share a few (docs/postgres.md).",
              { unit: 'connections', env: 'FSM_POSTGRES_MAX_CONNECTIONS' },
            ),
          ),
      })
      .prefault({}),
  })
  .prefault({})

/** Why a Postgres URL cannot be used, without echoing it; undefined when it can. */
export function postgresUrlProblem(text: string): string | undefined {
  let url: URL
  try {
    url = new URL(text)
  } catch {
    return 'is not a URL'
  }
  if (url.protocol !== 'postgres:' && url.protocol !== 'postgresql:') return 'must start with postgres:// or postgresql://'
  if (url.hostname === '' && !url.searchParams.has('host')) return 'names no host'
  return undefined
}

/** `url` with `password` as its password, percent-encoded so that any character survives the URL. */
export function withPostgresPassword(url: string, password: string): string {
  const u = new URL(url)
  u.password = encodeURIComponent(password)
  return u.toString()
}

/**
 * The values of a Postgres URL that must never reach a log line: the URL itself and its password
 * (as written and decoded), for the logger's last-line scrub (src/log/logger.ts).
 */
export function postgresSecrets(url: string | undefined): string[] {
  if (url === undefined) return []
  const out = [url]
  try {
    const password = new URL(url).password
    if (password !== '') out.push(password, decodeURIComponent(password))
  } catch {
    // Not a URL: the whole text is the secret.
  }
  return [...new Set(out)]
}
