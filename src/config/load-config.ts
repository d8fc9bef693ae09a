// Precedence: command-line flags > environment > JSON config file > defaults (docs/configuration.md).
// Every problem is collected and reported at once, each naming the key as the user wrote it.
import { readFileSync } from 'node:fs'
import type { z } from 'zod'
import { ConfigSchema, withPostgresPassword, type Config } from './schema.js'
import { ConfigError, type ConfigIssue } from './config-error.js'
import { schemaKeys } from './schema-keys.js'
import { DEFAULT_ACCOUNT_ID, apiKeyVariables, isPlainObject, resolveAccounts, type AccountConfig } from './accounts.js'

/**
 * Environment variable → the key it sets, as a path (`['schedules', 'sweep']`): each key's `env` in
 * the schema (schema.ts, KeyDoc), so a variable is declared with its key.
 */
export const ENV_KEYS: ReadonlyMap<string, readonly string[]> = new Map(
  schemaKeys().flatMap((k) => (k.doc.env === undefined ? [] : [[k.doc.env, k.path] as const])),
)

/** Every FSM_* variable fsm-sync reads. For any other, see `unknownVariable`. */
export const ENV_VARIABLES: readonly string[] = [...ENV_KEYS.keys(), 'FSM_CONFIG']

/**
 * What to do about an FSM_* variable fsm-sync does not read. A near miss of one it reads (within two
 * edits, or the same but for underscores: FSM_RATELIMIT) is refused: it would otherwise do nothing
 * and the setting would silently keep its default. A Kubernetes service-link variable is ignored: Kubernetes sets `<SERVICE>_SERVICE_HOST`,
 * `<SERVICE>_SERVICE_PORT[_<name>]`, `<SERVICE>_PORT` and `<SERVICE>_PORT_<n>_<TCP|UDP|SCTP>[_ADDR|_PORT|_PROTO]`
 * in every pod for every Service (one named `fsm` or `fsm-sync` gives FSM_* ones), and nobody can
 * unset them. Any other (a Compose interpolation variable such as a version) draws a warning.
 */
export function unknownVariable(name: string): { refuse: string } | { warn: string } | 'ignore' | undefined {
  if (!name.startsWith('FSM_') || ENV_VARIABLES.includes(name)) return undefined
  const near = nearestVariable(name)
  const serviceLink = /(_SERVICE_HOST|_SERVICE_PORT(_[A-Z0-9_]+)?|_PORT|_PORT_[0-9]+_(TCP|UDP|SCTP)(_[A-Z]+)?)$/.test(name)
  if (near !== undefined) {
    const message = `is not a variable fsm-sync reads; did you mean ${near}?`
    // A service-link variable cannot be removed from a pod, so it never stops the process.
    return serviceLink ? { warn: `${message} (ignored: it has the shape of a Kubernetes service-link variable)` } : { refuse: message }
  }
  if (serviceLink) return 'ignore'
  return { warn: `is not a variable fsm-sync reads (it reads ${ENV_VARIABLES.join(', ')}); ignored` }
}

/** The variable fsm-sync reads that `name` is a near miss of, if any. */
function nearestVariable(name: string): string | undefined {
  const bare = (n: string) => n.replace(/_/g, '')
  return ENV_VARIABLES.find((known) => bare(known) === bare(name) || editDistance(known, name) <= 2)
}

/** Levenshtein distance: insertions, deletions and substitutions. */
function editDistance(a: string, b: string): number {
  let prev = Array.from({ length: b.length + 1 }, (_, j) => j)
  for (let i = 1; i <= a.length; i++) {
    const row = [i]
    for (let j = 1; j <= b.length; j++) row[j] = Math.min(prev[j]! + 1, row[j - 1]! + 1, prev[j - 1]! + (a[i - 1] === b[j - 1] ? 0 : 1))
    prev = row
  }
  return prev[b.length]!
}

/** Command-line flag → top-level config key. The API key has no flag: argv is visible in `ps`. */
export const FLAG_KEYS = {
  'base-url': 'baseUrl',
  db: 'db',
  'rate-limit': 'rateLimit',
  'log-level': 'logLevel',
} as const satisfies Record<string, keyof Config>

export interface ConfigSources {
  flags?: Readonly<Record<string, unknown>>
  env?: Readonly<Record<string, string | undefined>>
  /** Path of the JSON config file; falls back to FSM_CONFIG. */
  file?: string | undefined
  /**
   * Settings a command supplies itself (`demo`'s fast schedules), as a config-file object: above
   * the file, below environment and flags. Nested objects merge one level deep.
   */
  overrides?: Readonly<Record<string, unknown>>
  /**
   * The streams the app declares (connectors/selection.ts, STREAM_CHOICE): each name in `streams`
   * must be one of them, and `streams` defaults to all of them. Without it, any well-formed name passes.
   */
  streams?: StreamChoice
  /** Told once per load about each FSM_* variable that is ignored with a warning (see `unknownVariable`). */
  warn?: (message: string) => void
}

/** Which stream names exist, from the stream registry. */
export interface StreamChoice {
  readonly all: readonly string[]
  /** Why `name` names no stream (with the valid names), or undefined when it names one. */
  problem(name: string): string | undefined
}

type Origin = { kind: 'flag'; name: string } | { kind: 'env'; name: string } | { kind: 'file'; path: string } | { kind: 'override' }

/** The settings of the process and the values every account inherits (loadAccounts(sources).config). */
export function loadConfig(sources: ConfigSources = {}): Config {
  return loadAccounts(sources).config
}

export interface LoadedConfig {
  /**
   * The top-level settings: the process's (listener, log level, intake limits, destination) and what
   * every account inherits. With an `accounts` list it holds no API key and no mirror of its own.
   */
  config: Config
  /** Each account with its whole Config; without a list, the one account `default` (`config` itself). */
  accounts: AccountConfig[]
  /** Whether the config file holds an `accounts` list. */
  listed: boolean
}

/** Keys a top-level value of which no account inherits when the file lists accounts (each has its own). */
const PER_ACCOUNT_ONLY: Record<string, string> = {
  apiKey: "each account's key comes from its apiKeyFile or apiKeyEnv",
  db: "each account's mirror is <dataDir>/<id>/mirror.db, or its own db",
  webhookSecrets: 'each account verifies deliveries with the secrets in its own secrets file, beside its mirror',
}

/** The configuration with its accounts, every problem of the file, the environment and the flags reported at once. */
export function loadAccounts(sources: ConfigSources = {}): LoadedConfig {
  const env = sources.env ?? {}
  const issues: ConfigIssue[] = []
  const base: Record<string, unknown> = {}
  const origins = new Map<string, Origin>()
  let list: unknown

  const filePath = sources.file ?? env.FSM_CONFIG
  if (filePath !== undefined && filePath !== '') {
    const fromFile = readConfigFile(filePath, issues)
    for (const [k, v] of Object.entries(fromFile)) {
      if (k === 'accounts') list = v
      else base[k] = v
      origins.set(k, { kind: 'file', path: filePath })
    }
  }
  const keyVariables = apiKeyVariables(list)
  for (const name of Object.keys(env).sort()) {
    const verdict = keyVariables.has(name) ? undefined : unknownVariable(name)
    if (verdict === undefined || verdict === 'ignore') continue
    if ('refuse' in verdict) issues.push({ key: name, message: verdict.refuse })
    else sources.warn?.(`${name} ${verdict.warn}`)
  }
  for (const [k, v] of Object.entries(sources.overrides ?? {})) {
    base[k] = isPlainObject(v) && isPlainObject(base[k]) ? { ...base[k], ...v } : v
    origins.set(k, { kind: 'override' })
  }
  const listed = list !== undefined
  const skip = listed ? new Set(Object.keys(PER_ACCOUNT_ONLY)) : new Set<string>()
  const outer = (raw: Record<string, unknown>, track?: Map<string, Origin>): Record<string, unknown> => {
    const target = { ...raw }
    for (const [name, path] of ENV_KEYS) {
      const v = env[name]
      if (v === undefined || v === '' || skip.has(path[0]!)) continue
      // Only this one key comes from the environment; its siblings keep the file's values.
      setAt(target, path, v)
      track?.set(path.join('.'), { kind: 'env', name })
    }
    for (const [name, key] of Object.entries(FLAG_KEYS)) {
      const v = sources.flags?.[name]
      if (v === undefined || skip.has(key)) continue
      target[key] = v
      track?.set(key, { kind: 'flag', name })
    }
    return target
  }

  const outermost = outer(base, origins)
  const merged = listed ? Object.fromEntries(Object.entries(outermost).filter(([k]) => !(k in PER_ACCOUNT_ONLY))) : outermost
  if (listed) {
    for (const [key, why] of Object.entries(PER_ACCOUNT_ONLY)) {
      const given = [...ENV_KEYS].find(([name, path]) => path[0] === key && env[name] !== undefined && env[name] !== '')?.[0]
      const flag = Object.entries(FLAG_KEYS).find(([name, k]) => k === key && sources.flags?.[name] !== undefined)?.[0]
      const named = flag !== undefined ? `--${flag}` : (given ?? (key in base ? nameOf([key], origins) : undefined))
      // Named, never quoted: the value may be a secret.
      if (named !== undefined) sources.warn?.(`${named} is ignored: the config file lists accounts, and ${why}`)
    }
  }

  const topProblems = new Set<string>()
  const settle = (raw: Record<string, unknown>, name: (path: readonly string[]) => string, top: boolean): Config | undefined => {
    const parsed = ConfigSchema.safeParse(raw)
    if (!parsed.success) {
      for (const issue of parsed.error.issues.flatMap((i) => describeIssue(i, name))) {
        const id = `${issue.path.join('.')}\0${issue.message}`
        if (top) topProblems.add(id)
        else if (topProblems.has(id)) continue
        issues.push({ key: issue.key, message: issue.message })
      }
      return undefined
    }
    const choice = sources.streams
    if (choice !== undefined) {
      for (const [i, stream] of (parsed.data.streams ?? []).entries()) {
        const problem = choice.problem(stream)
        if (problem !== undefined && (top || !topProblems.has(`streams.${i}\0${problem}`))) {
          if (top) topProblems.add(`streams.${i}\0${problem}`)
          issues.push({ key: name(['streams', String(i)]), message: problem })
        }
      }
      parsed.data.streams ??= [...choice.all]
    }
    // The password kept apart from the URL (no encoding for the user to get right) goes into it here.
    const pg = parsed.data.destination.postgres
    if (pg.password !== undefined && pg.url === undefined && top)
      issues.push({
        key: name(['destination', 'postgres', 'password']),
        message: 'is set but destination.postgres.url (FSM_POSTGRES_URL) is not: set the URL too, e.g. postgres://user@host:5432/database',
      })
    else if (pg.password !== undefined && pg.url !== undefined) pg.url = withPostgresPassword(pg.url, pg.password)
    if (parsed.data.sharding.enabled && pg.url === undefined && top)
      issues.push({
        key: name(['sharding', 'enabled']),
        message:
          'is on but destination.postgres.url (FSM_POSTGRES_URL) is not set: the replicas coordinate through that Postgres server; set it, or turn sharding off',
      })
    return parsed.data
  }

  const config = settle(merged, (path) => nameOf(path, origins), true)
  let accounts: AccountConfig[] = []
  if (listed) {
    const dataDir = config?.dataDir ?? (typeof merged.dataDir === 'string' && merged.dataDir !== '' ? merged.dataDir : './data')
    accounts = resolveAccounts(list, {
      // Not the top-level key, mirror or secrets: an account has its own.
      base: Object.fromEntries(Object.entries(base).filter(([k]) => !(k in PER_ACCOUNT_ONLY))),
      outer: (raw) => outer(raw),
      env,
      dataDir,
      issues,
      settle: (raw, label, keyName) => settle(raw, (path) => `${label}: ${[keyName(path[0] ?? ''), ...path.slice(1)].join('.')}`, false),
    })
  } else if (config !== undefined) accounts = [{ id: DEFAULT_ACCOUNT_ID, config }]
  if (config !== undefined && issues.length === 0) return { config, accounts, listed }
  throw new ConfigError(issues)
}

function readConfigFile(path: string, issues: ConfigIssue[]): Record<string, unknown> {
  let text: string
  try {
    text = readFileSync(path, 'utf8')
  } catch (err) {
    const reason = (err as NodeJS.ErrnoException).code === 'ENOENT' ? 'no such file' : String(err)
    issues.push({ key: '--config', message: `cannot read ${path}: ${reason}` })
    return {}
  }
  let value: unknown
  try {
    value = JSON.parse(text)
  } catch (err) {
    issues.push({ key: '--config', message: `${path} is not valid JSON: ${(err as Error).message}` })
    return {}
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    issues.push({ key: '--config', message: `${path} must hold a JSON object` })
    return {}
  }
  return value as Record<string, unknown>
}

/** Sets `path` in `target`, copying each object on the way so that the file's objects stay as read. */
function setAt(target: Record<string, unknown>, path: readonly string[], value: unknown): void {
  const [head, ...rest] = path
  if (head === undefined) return
  if (rest.length === 0) {
    target[head] = value
    return
  }
  const child = isPlainObject(target[head]) ? { ...target[head] } : {}
  setAt(child, rest, value)
  target[head] = child
}

function describeIssue(issue: z.core.$ZodIssue, name: (path: readonly string[]) => string): (ConfigIssue & { path: string[] })[] {
  const path = issue.path.map(String)
  if (issue.code === 'unrecognized_keys') {
    return issue.keys.map((k) => ({
      path: [...path, k],
      key: name([...path, k]),
      message: 'is not a known setting (see config/example.json)',
    }))
  }
  return [{ path, key: name(path), message: issue.message }]
}

/** The name the user wrote: `--rate-limit`, `FSM_RATE_LIMIT`, or `sync.lookbackSeconds (in FILE)`. */
function nameOf(path: readonly string[], origins: ReadonlyMap<string, Origin>): string {
  // The longest part of the path with an origin: a nested key from its own variable
  // (FSM_SCHEDULE_SWEEP) is named by that variable, the rest of its object by the file.
  let origin: Origin | undefined
  for (let n = path.length; n > 0 && origin === undefined; n--) origin = origins.get(path.slice(0, n).join('.'))
  const dotted = path.join('.')
  if (origin === undefined) return dotted
  switch (origin.kind) {
    case 'flag':
      return `--${origin.name}`
    case 'env':
      return origin.name
    case 'file':
      return `${dotted} (in ${origin.path})`
    case 'override':
      return dotted
  }
}
