// The `accounts` list of the config file: one Config per account, each the top-level settings with
// the account's own overrides, key and mirror (docs/configuration.md, Many accounts). Keys never sit
// in the list: each comes from a file (apiKeyFile) or a variable (apiKeyEnv), and no message quotes one.
import { readFileSync } from 'node:fs'
import path from 'node:path'
import { isDeepStrictEqual } from 'node:util'
import type { Config } from './schema.js'
import type { ConfigIssue } from './config-error.js'

/** What an account id looks like: it names the account's folder, log lines, metrics and rows. */
export const ACCOUNT_ID_PATTERN = /^[a-z0-9][a-z0-9_-]{0,39}$/

/** The id of the one account of a configuration without an `accounts` list. */
export const DEFAULT_ACCOUNT_ID = 'default'

/** One account: its id and its whole Config, ready for anything that takes one account's Config. */
export interface AccountConfig {
  readonly id: string
  readonly config: Config
}

/** Which ids a new list adds, removes and changes (any difference of the resolved Config, the key's value included). */
export interface AccountsDiff {
  added: string[]
  removed: string[]
  changed: string[]
}

/** Compares two resolved account lists by id; each list in its own order, ids unique. */
export function diffAccounts(before: readonly AccountConfig[], after: readonly AccountConfig[]): AccountsDiff {
  const old = new Map(before.map((a) => [a.id, a.config]))
  const now = new Set(after.map((a) => a.id))
  return {
    added: after.filter((a) => !old.has(a.id)).map((a) => a.id),
    removed: before.filter((a) => !now.has(a.id)).map((a) => a.id),
    changed: after.filter((a) => old.has(a.id) && !isDeepStrictEqual(old.get(a.id), a.config)).map((a) => a.id),
  }
}

/** Keys of an account entry that are not settings of the account's Config. */
const ENTRY_KEYS = new Set(['id', 'apiKeyFile', 'apiKeyEnv'])

const PROCESS_MESSAGE =
  'is a process setting (one listener, log and warehouse server for every account): set it at the top level of the config file, not in an account'

/** Keys of the process, refused in an account entry, and the nested ones of `webhooks` (the intake's limits). */
const PROCESS_KEYS = new Set(['httpHost', 'httpPort', 'logLevel', 'dataDir', 'destination', 'accounts', 'metrics'])
// `path` too: one listener serves every account, each at `<webhooks.path>/<id>` (src/webhooks/account-paths.ts).
const PROCESS_WEBHOOK_KEYS = new Set(['path', 'maxConnections', 'bodyTimeoutMs', 'maxBufferedBytes'])

const SECRET_MESSAGES: Record<string, string> = {
  apiKey:
    'must not sit in the accounts list: put the key in a file named by apiKeyFile (a mounted secret) or in a variable named by apiKeyEnv',
  webhookSecrets:
    'must not sit in the accounts list: each account keeps its webhook secrets in its own secrets file beside its mirror (`fsm-sync webhooks register` writes it)',
}

const VARIABLE_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/

/** The variables the list names in apiKeyEnv: they are read on purpose, so never "unknown". */
export function apiKeyVariables(list: unknown): Set<string> {
  const names = new Set<string>()
  if (Array.isArray(list))
    for (const entry of list) if (isPlainObject(entry) && typeof entry.apiKeyEnv === 'string') names.add(entry.apiKeyEnv)
  return names
}

export interface AccountsContext {
  /** The top-level settings as written in the file (and overrides), before environment and flags. */
  base: Readonly<Record<string, unknown>>
  /** Puts the environment's and flags' values over `raw` (they win over an account's own values too). */
  outer: (raw: Record<string, unknown>) => Record<string, unknown>
  env: Readonly<Record<string, string | undefined>>
  dataDir: string
  /** Parses one account's raw settings, reporting each problem under `label`; undefined when refused. */
  settle: (raw: Record<string, unknown>, label: string, keyName: (key: string) => string) => Config | undefined
  issues: ConfigIssue[]
}

/** Each entry of the list resolved, or problems in `ctx.issues` (every entry is checked). */
export function resolveAccounts(list: unknown, ctx: AccountsContext): AccountConfig[] {
  if (!Array.isArray(list)) {
    ctx.issues.push({
      key: 'accounts',
      message: 'must be a list of accounts, e.g. [{ "id": "north", "apiKeyFile": "/run/secrets/north" }]',
    })
    return []
  }
  const seen = new Map<string, number>()
  const out: AccountConfig[] = []
  list.forEach((entry, i) => {
    const resolved = resolveEntry(entry, i, seen, ctx)
    if (resolved !== undefined) out.push(resolved)
  })
  return out
}

function resolveEntry(entry: unknown, i: number, seen: Map<string, number>, ctx: AccountsContext): AccountConfig | undefined {
  if (!isPlainObject(entry)) {
    ctx.issues.push({ key: `accounts[${i}]`, message: 'must be an object such as { "id": "north", "apiKeyFile": "/run/secrets/north" }' })
    return undefined
  }
  const id = entry.id
  const validId = typeof id === 'string' && ACCOUNT_ID_PATTERN.test(id)
  const label = validId ? `accounts[${i}] (id "${id}")` : `accounts[${i}]`
  const problem = (key: string, message: string) => ctx.issues.push({ key: `${label}: ${key}`, message })
  const before = ctx.issues.length

  if (!validId)
    problem(
      'id',
      id === undefined
        ? 'is missing: every account needs an id such as "north"'
        : 'must be 1 to 40 lowercase letters, digits, "_" or "-", starting with a letter or digit, e.g. "north"',
    )
  else if (seen.has(id)) problem('id', `"${id}" is also the id of accounts[${seen.get(id)}]: ids must be unique`)
  else seen.set(id, i)

  const overrides: Record<string, unknown> = {}
  for (const [key, value] of Object.entries(entry)) {
    if (ENTRY_KEYS.has(key)) continue
    if (key in SECRET_MESSAGES) problem(key, SECRET_MESSAGES[key]!)
    else if (PROCESS_KEYS.has(key)) problem(key, PROCESS_MESSAGE)
    else if (key === 'webhooks' && isPlainObject(value)) {
      for (const nested of Object.keys(value)) if (PROCESS_WEBHOOK_KEYS.has(nested)) problem(`webhooks.${nested}`, PROCESS_MESSAGE)
      overrides[key] = Object.fromEntries(Object.entries(value).filter(([k]) => !PROCESS_WEBHOOK_KEYS.has(k)))
    } else overrides[key] = value
  }
  const key = readKey(entry, ctx.env, problem)

  // One level deep, as command overrides merge: an account's `schedules` keeps the other schedules.
  const raw: Record<string, unknown> = { ...ctx.base }
  for (const [k, v] of Object.entries(overrides)) raw[k] = isPlainObject(v) && isPlainObject(raw[k]) ? { ...raw[k], ...v } : v
  const merged = ctx.outer(raw)
  if (validId) merged.db = typeof overrides.db === 'string' ? overrides.db : path.join(ctx.dataDir, id, 'mirror.db')
  if (key !== undefined) merged.apiKey = key.value
  const keySource = key?.source ?? 'apiKeyFile'
  const config = ctx.settle(merged, label, (k) => (k === 'apiKey' ? keySource : k))
  if (config === undefined || ctx.issues.length > before || !validId) return undefined
  return { id, config }
}

type Problem = (key: string, message: string) => void

/** The account's key from its file or variable; undefined (and a problem) when there is none. */
function readKey(
  entry: Record<string, unknown>,
  env: Readonly<Record<string, string | undefined>>,
  problem: Problem,
): { value: string; source: 'apiKeyFile' | 'apiKeyEnv' } | undefined {
  const { apiKeyFile: file, apiKeyEnv: variable } = entry
  if (file !== undefined && variable !== undefined) {
    problem('apiKeyFile', 'and apiKeyEnv are both set: give one of them')
    return undefined
  }
  if (file === undefined && variable === undefined) {
    // An inline key has been told already, with the same advice.
    if (entry.apiKey !== undefined) return undefined
    problem('apiKeyFile', 'is missing: give apiKeyFile (a file holding the key) or apiKeyEnv (the name of a variable holding it)')
    return undefined
  }
  if (variable !== undefined) {
    if (typeof variable !== 'string' || !VARIABLE_NAME.test(variable)) {
      problem('apiKeyEnv', 'must be the name of an environment variable, e.g. "NORTH_API_KEY"')
      return undefined
    }
    const value = env[variable]?.trim()
    if (value === undefined || value === '') {
      problem('apiKeyEnv', `the variable ${variable} is ${value === undefined ? 'not set' : 'empty'}: set it to the account's API key`)
      return undefined
    }
    return { value, source: 'apiKeyEnv' }
  }
  if (typeof file !== 'string' || file === '') {
    problem('apiKeyFile', 'must be the path of a file holding the API key, e.g. "/run/secrets/north"')
    return undefined
  }
  let text: string
  try {
    text = readFileSync(file, 'utf8')
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code
    const reason =
      code === 'ENOENT'
        ? 'no such file'
        : code === 'EACCES' || code === 'EPERM'
          ? 'not readable by the user fsm-sync runs as'
          : code === 'EISDIR'
            ? 'it is a folder, not a file'
            : `error ${code ?? 'unknown'}`
    problem('apiKeyFile', `cannot read the key file ${file}: ${reason}`)
    return undefined
  }
  // A key file usually ends with a newline (echo, kubectl create secret --from-file); it is no part of the key.
  const value = text.trim()
  if (value === '') {
    problem('apiKeyFile', `the key file ${file} is empty: write the account's API key in it`)
    return undefined
  }
  return { value, source: 'apiKeyFile' }
}

export function isPlainObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v)
}
