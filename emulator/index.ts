// The emulator: a stateful, faithful local fake of the whole upstream API, written from the
// API's specification, with a control API under /__emulator/. One server carries one or many
// independent accounts (account.ts): the API key of a request names its account, as in the
// service; /__emulator/accounts/<id>/... is an account's control API. See emulator/README.md.
import http from 'node:http'
import type { AddressInfo } from 'node:net'
import type { Counts } from './data/state.js'
import { accountId, EmulatorAccount } from './account.js'
import { hashOf } from './auth/key-store.js'
import { countsForRows } from './data/seed.js'
import { sendJson } from './http/respond.js'

export interface EmulatorOptions {
  port?: number
  host?: string
  /** The first account's seed; account i (0-based) is seeded with `seed + i`. */
  seed?: number
  counts?: Partial<Counts>
  /** About this many records per account (clients, jobs, visits, invoices and custom records scale together); `counts` wins. */
  rows?: number
  /** Independent accounts on the one server (default 1). */
  accounts?: number
  /** The first account's key (`svc_live_...`); by default a key derived from the seed and account id. */
  apiKey?: string
  rateLimit?: number | false
  allowHttpWebhooks?: boolean
  /** Client list rows carry `jobCount` and `jobTotalAmount` (spec: Client, "when job aggregation is enabled"). */
  jobAggregation?: boolean
  now?: () => number
}

export interface AccountHandle {
  /** `acct-001`, `acct-002`, ... */
  id: string
  seed: number
  /** The base URL: the same for every account (the key picks the account). */
  url: string
  apiKey: string
  /** This account's control API root, `<url>/__emulator/accounts/<id>` (the first account's is also `<url>/__emulator`). */
  controlUrl: string
  /** A control API call (`path` after `/__emulator`); resolves to the answer's `data`, throws on an error status. */
  control<T = unknown>(method: 'GET' | 'POST', path: string, body?: unknown): Promise<T>
}

export interface EmulatorHandle {
  url: string
  /** The first account's key. */
  apiKey: string
  accounts: AccountHandle[]
  close(): Promise<void>
}

const CONTROL = '/__emulator/'
const ACCOUNTS = '/__emulator/accounts'

/** The credentials a request may carry, in the order the API reads them. */
function credentials(req: http.IncomingMessage): string[] {
  const out: string[] = []
  const x = req.headers['x-api-key']
  if (typeof x === 'string') out.push(x.trim())
  const m = /^Bearer\s+(.*)$/i.exec(req.headers.authorization?.trim() ?? '')
  if (m !== null) out.push((m[1] ?? '').trim())
  return out
}

async function controlCall<T>(url: string, method: string, body: unknown): Promise<T> {
  const res = await fetch(url, {
    method,
    ...(body === undefined ? {} : { body: JSON.stringify(body), headers: { 'content-type': 'application/json' } }),
  })
  const doc = (await res.json()) as { data: T }
  if (res.status >= 300) throw new Error(`control ${method} ${url} answered ${res.status}: ${JSON.stringify(doc)}`)
  return doc.data
}

export async function startEmulator(options: EmulatorOptions = {}): Promise<EmulatorHandle> {
  const now = options.now ?? Date.now
  const seed = options.seed ?? 1
  const n = options.accounts ?? 1
  if (!Number.isInteger(n) || n < 1) throw new Error(`accounts must be a positive integer, got ${n}`)
  const counts = { ...(options.rows === undefined ? {} : countsForRows(options.rows)), ...options.counts }
  const ctxOptions = {
    rateLimit: options.rateLimit ?? 60,
    allowHttpWebhooks: options.allowHttpWebhooks ?? false,
    jobAggregation: options.jobAggregation ?? false,
  }
  /** Hash of every key and token issued -> its account's index. */
  const owners = new Map<string, number>()
  const accounts: EmulatorAccount[] = []
  const byId = new Map<string, EmulatorAccount>()
  for (let i = 0; i < n; i++) {
    const id = accountId(i)
    const account = new EmulatorAccount({
      id,
      seed: seed + i,
      counts,
      apiKey: i === 0 ? (options.apiKey ?? null) : null,
      options: ctxOptions,
      now,
      onIssue: (credential) => {
        const hash = hashOf(credential)
        const owner = owners.get(hash)
        if (owner !== undefined && owner !== i) throw new Error(`the key of ${id} is already the key of ${accountId(owner)}`)
        owners.set(hash, i)
      },
    })
    accounts.push(account)
    byId.set(id, account)
  }
  const first = accounts[0]!
  const accountOf = (req: http.IncomingMessage): EmulatorAccount => {
    if (n === 1) return first
    for (const credential of credentials(req)) {
      const owner = owners.get(hashOf(credential))
      if (owner !== undefined) return accounts[owner]!
    }
    // An unknown key (or none): the first account answers 401 as it always did.
    return first
  }
  let baseUrl = ''
  const list = () =>
    accounts.map((a) => ({ id: a.id, seed: a.ctx.state.seed, apiKey: a.apiKey, controlUrl: `${baseUrl}${ACCOUNTS}/${a.id}` }))
  const handle = async (req: http.IncomingMessage, res: http.ServerResponse): Promise<void> => {
    const url = new URL(req.url ?? '/', 'http://emulator.local')
    const path = url.pathname
    if (!path.startsWith(CONTROL)) return accountOf(req).handleApi(req, res, url)
    if (path === ACCOUNTS || path === `${ACCOUNTS}/`) return sendJson(res, 200, { success: true, data: list() }, now())
    if (!path.startsWith(`${ACCOUNTS}/`)) return first.handleControl(req, res, url)
    const [id = '', ...rest] = path.slice(ACCOUNTS.length + 1).split('/')
    const account = byId.get(id)
    if (account === undefined) {
      const body = { success: false, message: `No account '${id}' (ids: ${accounts[0]!.id}...${accounts[n - 1]!.id})`, code: 'NOT_FOUND' }
      return sendJson(res, 404, body, now())
    }
    url.pathname = `${CONTROL}${rest.join('/')}`
    return account.handleControl(req, res, url)
  }
  const server = http.createServer({ noDelay: true, keepAlive: true }, (req, res) => void handle(req, res))
  server.keepAliveTimeout = 65_000
  const host = options.host ?? '127.0.0.1'
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject)
    server.listen(options.port ?? 0, host, resolve)
  })
  const { port } = server.address() as AddressInfo
  baseUrl = `http://${host.includes(':') ? `[${host}]` : host}:${port}`
  for (const a of accounts) a.ctx.baseUrl = baseUrl
  const handles = list().map((a): AccountHandle => ({
    ...a,
    url: baseUrl,
    control: <T>(method: string, p: string, body?: unknown) => controlCall<T>(`${a.controlUrl}${p}`, method, body),
  }))
  return {
    url: baseUrl,
    apiKey: first.apiKey,
    accounts: handles,
    close: async () => {
      for (const a of accounts) a.stop()
      server.closeAllConnections()
      await new Promise<void>((resolve) => server.close(() => resolve()))
    },
  }
}
