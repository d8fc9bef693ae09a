// What went wrong with the destination, in words a user can act on: each error names the cause and
// the fix, and never the URL or its password. Transient failures (a restart, a dropped connection)
// are told apart from the ones that need the user (a wrong password, a missing privilege).

export type DestinationErrorKind = 'connect' | 'auth' | 'database' | 'privilege' | 'shape' | 'identity' | 'transient' | 'other'

export class DestinationError extends Error {
  constructor(
    readonly kind: DestinationErrorKind,
    message: string,
    options?: { cause?: unknown },
  ) {
    super(message, options)
    this.name = 'DestinationError'
  }
}

interface PgLikeError {
  code?: string
  message?: string
  errno?: number
  syscall?: string
  hostname?: string
  address?: string
  port?: number
}

/** Where the URL points, without its user's password: host, port and database. */
export function describeTarget(url: string): string {
  try {
    const u = new URL(url)
    const db = decodeURIComponent(u.pathname.replace(/^\//, '')) || decodeURIComponent(u.username) || 'postgres'
    const host = u.hostname || u.searchParams.get('host') || 'localhost'
    return `${host}:${u.port || '5432'}/${db}`
  } catch {
    return 'the configured server'
  }
}

/** The error as a DestinationError with the fix; the message never holds the URL's password. */
export function explainDestinationError(err: unknown, url: string, schema: string): DestinationError {
  if (err instanceof DestinationError) return err
  const e = (err ?? {}) as PgLikeError
  const target = describeTarget(url)
  const user = (() => {
    try {
      return decodeURIComponent(new URL(url).username) || 'the connecting user'
    } catch {
      return 'the connecting user'
    }
  })()
  const db = target.split('/').slice(1).join('/')
  const raw = scrub(String(e.message ?? err), url)
  switch (e.code) {
    case 'ECONNREFUSED':
      return new DestinationError(
        'connect',
        `cannot connect to Postgres at ${target} (connection refused): check that the server is running and that the host and port in FSM_POSTGRES_URL are right`,
        { cause: err },
      )
    case 'ENOTFOUND':
    case 'EAI_AGAIN':
      return new DestinationError(
        'connect',
        `cannot connect to Postgres at ${target}: the host name does not resolve; check the host in FSM_POSTGRES_URL`,
        { cause: err },
      )
    case 'ETIMEDOUT':
    case 'ECONNRESET':
    case 'EPIPE':
      return new DestinationError('transient', `the connection to Postgres at ${target} failed (${e.code}); retrying`, { cause: err })
    case '28P01':
    case '28000':
      return new DestinationError(
        'auth',
        `Postgres at ${target} refused the login of ${user} (${raw}): check the user and password in FSM_POSTGRES_URL`,
        { cause: err },
      )
    case '3D000':
      return new DestinationError(
        'database',
        `the database ${JSON.stringify(db)} does not exist on ${target.split('/')[0]}: create it (CREATE DATABASE "${db}";) or fix the database name in FSM_POSTGRES_URL`,
        { cause: err },
      )
    case '42501':
      return new DestinationError(
        'privilege',
        `${user} lacks a privilege on ${target} (${raw}): grant it, e.g. GRANT CREATE ON DATABASE "${db}" TO "${user}"; (to create the schema ${schema}) or GRANT USAGE, CREATE ON SCHEMA "${schema}" TO "${user}";, or, for tables another role owns, GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA "${schema}" TO "${user}"; as their owner (fsm-sync doctor names what is missing)`,
        { cause: err },
      )
    case '55P03':
      return new DestinationError(
        'transient',
        `Postgres at ${target}: a statement waited for a lock longer than the lock timeout (destination.postgres.lockTimeoutSeconds): another session holds a lock on the replica's tables; retrying`,
        { cause: err },
      )
    case '57014':
      return new DestinationError(
        'transient',
        /statement timeout/i.test(raw)
          ? `Postgres at ${target}: a statement ran longer than the statement timeout (destination.postgres.statementTimeoutSeconds); retrying`
          : `Postgres at ${target}: ${raw}; retrying`,
        { cause: err },
      )
    case '57P01':
    case '57P02':
    case '57P03':
    case '08000':
    case '08003':
    case '08006':
    case '40001':
    case '40P01':
    case '53300':
      return new DestinationError('transient', `Postgres at ${target}: ${raw}; retrying`, { cause: err })
  }
  if (/Connection terminated|connection timeout|Client has encountered a connection error|not queryable/i.test(raw)) {
    return new DestinationError('transient', `the connection to Postgres at ${target} was lost (${raw}); retrying`, { cause: err })
  }
  return new DestinationError('other', `Postgres at ${target}: ${raw}`, { cause: err })
}

/** The refusal of a replica another mirror feeds (its state row records the mirror): replicating this one would merge the two. */
export function otherMirrorError(schema: string, target: string, theirs: string, ours: string): DestinationError {
  const short = (id: string) => id.slice(0, 12)
  return new DestinationError(
    'identity',
    `schema ${schema} on ${target} is the replica of another mirror (id ${short(theirs)}; this mirror is ${short(ours)}): ` +
      `replicating this one into it would merge the two. Set FSM_POSTGRES_SCHEMA to another schema, or replace the replica with this mirror's data (fsm-sync replicate --reseed)`,
  )
}

/**
 * Why a database of this encoding cannot hold the replica, with the fix; undefined for UTF8. Only
 * UTF8 holds every character the account's text may have (an emoji in a note, say).
 */
export function encodingProblem(encoding: string, db: string): string | undefined {
  if (encoding === 'UTF8') return undefined
  return `the database ${JSON.stringify(db)} is encoded in ${encoding}, which cannot hold every character the account's data may have (an emoji would stop the replica): create a UTF8 database (CREATE DATABASE "${db}_utf8" ENCODING 'UTF8' TEMPLATE template0;) and point FSM_POSTGRES_URL at it`
}

/** Removes the URL and its password from a text, should a driver ever echo them. */
function scrub(text: string, url: string): string {
  let out = text.split(url).join('[Redacted]')
  try {
    const password = new URL(url).password
    if (password.length > 0) out = out.split(password).join('[Redacted]').split(decodeURIComponent(password)).join('[Redacted]')
  } catch {
    // Not a URL: nothing more to remove.
  }
  return out
}
