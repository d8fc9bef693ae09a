// A writer connection that can be closed while its account is idle ("parked") and opens again on
// its next use, so that a process holding many mirrors keeps open only those in use (their file
// descriptors and page caches go with the connection). Every holder keeps the one `sqlite` it was
// given: statements and transactions made on it are prepared again on the new connection after a
// reopen. Why and when the daemon parks a mirror: src/store/README.md, "Idle mirrors".
import type Database from 'better-sqlite3'

type Sqlite = Database.Database
type Statement = Database.Statement

export interface MirrorParking {
  /** The connection is closed until its next use. */
  readonly parked: boolean
  /** Uses counted so far (statements run, transactions, pragmas), except those made through ifOpen. */
  readonly uses: number
  /** Reopens since the first open. */
  readonly reopens: number
  /**
   * Closes the connection now, unless a transaction or a statement's iteration is open on it: then
   * it stays open and false is returned. The next use opens it again (no migration).
   */
  park(): boolean
  /** Opens a parked connection now (a use). */
  unpark(): void
  /** Runs `fn` on the open connection without counting it as a use; undefined (not run) while parked. */
  ifOpen<T>(fn: () => T): T | undefined
  /** Called after each reopen, on the new connection, before the use that reopened it runs. */
  onReopen(hook: () => void): void
}

export interface Parkable {
  sqlite: Sqlite
  parking: MirrorParking
  /** Closes the connection for good. */
  close(): void
}

/** `reopen` opens and configures a new connection to the same file (it must exist). */
export function parkable(first: Sqlite, reopen: () => Sqlite): Parkable {
  let conn: Sqlite | undefined = first
  let generation = 0
  let uses = 0
  let reopens = 0
  let quiet = 0
  let closed = false
  const hooks: (() => void)[] = []
  // Functions registered on the connection live with it: each reopen registers them again.
  const functions: ((c: Sqlite) => void)[] = []

  const current = (): Sqlite => {
    if (conn !== undefined) return conn
    if (closed) throw new TypeError('The database connection is not open')
    conn = reopen()
    for (const f of functions) f(conn)
    generation++
    reopens++
    for (const h of hooks) h()
    return conn
  }
  const use = (): Sqlite => {
    if (quiet === 0) uses++
    return current()
  }

  const connection: Connection = {
    use,
    get generation() {
      return generation
    },
  }
  /** The statement of `sql` on the current connection, prepared again after a reopen. */
  const statement = (sql: string): Statement => new ParkableStatement(connection, sql) as unknown as Statement

  /** A transaction function that runs on the current connection (made again after a reopen). */
  const transaction = (fn: (...args: unknown[]) => unknown) => {
    type Tx = Database.Transaction<(...args: unknown[]) => unknown>
    let tx: Tx = use().transaction(fn)
    let made = generation
    const fresh = (): Tx => {
      const c = use()
      if (made !== generation) {
        tx = c.transaction(fn)
        made = generation
      }
      return tx
    }
    const run = (variant: 'default' | 'deferred' | 'immediate' | 'exclusive') =>
      function (this: unknown, ...args: unknown[]) {
        return fresh()[variant].apply(this, args)
      }
    return Object.assign(run('default'), {
      default: run('default'),
      deferred: run('deferred'),
      immediate: run('immediate'),
      exclusive: run('exclusive'),
    })
  }

  const sqlite = new Proxy(first, {
    get(_, key) {
      switch (key) {
        case 'prepare':
          return statement
        case 'transaction':
          return transaction
        case 'function':
        case 'aggregate':
          return (...args: unknown[]) => {
            const register = (c: Sqlite) => (c[key] as (...a: unknown[]) => unknown)(...args)
            register(use())
            functions.push(register)
            return sqlite
          }
        case 'close':
          return () => {
            close()
            return sqlite
          }
        // Reading these neither opens nor counts: a parked connection is neither open nor in a transaction.
        case 'open':
          return conn?.open ?? false
        case 'inTransaction':
          return conn?.inTransaction ?? false
        case 'name':
          return first.name
        case 'memory':
          return first.memory
        case 'readonly':
          return first.readonly
      }
      const c = use()
      const value: unknown = Reflect.get(c, key, c)
      return typeof value === 'function' ? (value as (...a: unknown[]) => unknown).bind(c) : value
    },
  })

  const close = () => {
    closed = true
    if (conn?.open === true) conn.close()
    conn = undefined
  }

  const parking: MirrorParking = {
    get parked() {
      return conn === undefined && !closed
    },
    get uses() {
      return uses
    },
    get reopens() {
      return reopens
    },
    park() {
      if (conn === undefined) return !closed
      if (conn.inTransaction) return false
      try {
        // Refused (TypeError "connection is busy") while a statement's iteration is open.
        conn.close()
      } catch {
        return false
      }
      conn = undefined
      return true
    },
    unpark() {
      use()
    },
    ifOpen<T>(fn: () => T): T | undefined {
      if (conn === undefined) return undefined
      quiet++
      try {
        return fn()
      } finally {
        quiet--
      }
    },
    onReopen(hook) {
      hooks.push(hook)
    },
  }
  return { sqlite, parking, close }
}

interface Connection {
  use(): Sqlite
  readonly generation: number
}

type Methods = Record<string, (...a: unknown[]) => unknown>

/**
 * A statement prepared again on a new connection after a reopen, with the modes set on it. A class,
 * not closures: a mirror's repositories hold hundreds of statements, and a process many mirrors.
 */
class ParkableStatement {
  #stmt: Statement
  #made: number
  #modes: [string, unknown[]][] = []

  constructor(
    private readonly connection: Connection,
    readonly source: string,
  ) {
    this.#stmt = connection.use().prepare(source)
    this.#made = connection.generation
  }

  #fresh(): Methods {
    const c = this.connection.use()
    if (this.#made !== this.connection.generation) {
      this.#stmt = c.prepare(this.source)
      for (const [m, args] of this.#modes) (this.#stmt as unknown as Methods)[m]!(...args)
      this.#made = this.connection.generation
    }
    return this.#stmt as unknown as Methods
  }

  #mode(m: string, args: unknown[]): this {
    this.#fresh()[m]!(...args)
    this.#modes.push([m, args])
    return this
  }

  run(...args: unknown[]) {
    return this.#fresh().run!(...args)
  }
  get(...args: unknown[]) {
    return this.#fresh().get!(...args)
  }
  all(...args: unknown[]) {
    return this.#fresh().all!(...args)
  }
  iterate(...args: unknown[]) {
    return this.#fresh().iterate!(...args)
  }
  columns(...args: unknown[]) {
    return this.#fresh().columns!(...args)
  }
  pluck(...args: unknown[]) {
    return this.#mode('pluck', args)
  }
  expand(...args: unknown[]) {
    return this.#mode('expand', args)
  }
  raw(...args: unknown[]) {
    return this.#mode('raw', args)
  }
  safeIntegers(...args: unknown[]) {
    return this.#mode('safeIntegers', args)
  }
  bind(...args: unknown[]) {
    return this.#mode('bind', args)
  }
  get reader(): boolean {
    return (this.#fresh() as unknown as Statement).reader
  }
  get readonly(): boolean {
    return (this.#fresh() as unknown as Statement).readonly
  }
  get busy(): boolean {
    return (this.#fresh() as unknown as Statement).busy
  }
  get database(): Sqlite {
    return (this.#fresh() as unknown as Statement).database
  }
}
