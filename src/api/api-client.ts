// The upstream client: one undici Pool with keep-alive, every attempt through the governor, the
// spec's retry rules, typed errors and a validated envelope. I/O lives here; the decisions it makes
// (retry, error mapping, header forms, budget) are pure functions in their own files.
import { Pool } from 'undici'
import type { IncomingHttpHeaders } from 'undici/types/header.js'
import type { Logger } from '../log/logger.js'
import { abortReason, systemClock, type Clock } from '../model/clock.js'
import { apiErrorFor, networkErrorFor, type RouteInfo } from './error-mapping.js'
import { MalformedResponseError, RequestDeadlineError } from './errors.js'
import { readRateLimitHeaders } from './rate-limit-headers.js'
import type { BudgetShare, Priority, RequestGovernor } from './governor/index.js'
import { EnvelopeSchema, type Envelope } from './response-schemas.js'
import { DEFAULT_RETRY_POLICY, retryDecision, type AttemptOutcome, type HttpMethod, type RetryPolicy } from './retry-policy.js'
import { authHeader, queryString, templatePath, type Query } from './routes.js'

export interface Timeouts {
  connectMs: number
  headersMs: number
  /** Longest gap between two chunks of the body. */
  bodyMs: number
  /** Longest whole attempt: connect, headers and the entire body. */
  deadlineMs: number
}

export interface ResponseEvent {
  route: string
  /** HTTP status, or 0 when the attempt failed below HTTP. */
  status: number
  attempt: number
  durationMs: number
}

export interface ApiClientOptions {
  /** Origin plus an optional path prefix, e.g. `https://fsm.example.com/proxy`. */
  baseUrl: string
  apiKey: string
  governor: RequestGovernor
  logger: Logger
  clock?: Clock
  timeouts?: Partial<Timeouts>
  userAgent?: string
  /** Sockets in the pool. Default 8. */
  connections?: number
  /**
   * Use the process's pool of the origin, shared by every client that asks (the accounts of a
   * daemon): at most SHARED_CONNECTIONS sockets to it, whatever the number of accounts.
   */
  sharedPool?: boolean
  retryPolicy?: RetryPolicy
  onResponse?: (event: ResponseEvent) => void
}

export interface CallOptions {
  priority: Priority
  signal?: AbortSignal | undefined
  /**
   * Told each time an attempt starts (it got its slot), retries included: the one place where a
   * run's request count is taken, so a request that fails after retries still counts them all.
   */
  onAttempt?: (() => void) | undefined
  /** What the request is for (a run's kind and stream), shown while it waits for the budget. */
  who?: string | undefined
  /** A share of the budget the attempts wait in before the governor (the continuous sweeps'). */
  share?: Pick<BudgetShare, 'acquire'> | undefined
}

export interface RequestOptions extends CallOptions {
  query?: Query | undefined
  body?: unknown
}

export interface ApiResponse {
  status: number
  route: string
  body: Envelope
  data: unknown
  meta: Record<string, unknown> | undefined
  headers: IncomingHttpHeaders
  /** The upstream `Date` header, when sent (custom-object bookmarks). */
  date: string | undefined
  attempts: number
}

/** Sockets of a shared pool (ApiClientOptions.sharedPool) to one origin, for all its clients. */
export const SHARED_CONNECTIONS = 64

/** The shared pools by origin and connect timeout (the only pool-wide setting a client chooses), with their users. */
const sharedPools = new Map<string, { pool: Pool; users: number }>()

function poolOptions(timeouts: Timeouts, connections: number): Pool.Options {
  return {
    connections,
    keepAliveTimeout: 30_000,
    connect: { timeout: timeouts.connectMs },
    headersTimeout: timeouts.headersMs,
    bodyTimeout: timeouts.bodyMs,
  }
}

const DEFAULT_TIMEOUTS: Timeouts = { connectMs: 10_000, headersMs: 30_000, bodyMs: 15_000, deadlineMs: 30_000 }

type Attempt = { ok: true; response: ApiResponse } | { ok: false; error: Error; outcome: AttemptOutcome }

export class ApiClient {
  readonly #pool: Pool
  /** The key of its shared pool, while it uses one. */
  #shared: string | undefined
  readonly #prefix: string
  readonly #apiKey: string
  readonly #governor: RequestGovernor
  readonly #log: Logger
  readonly #clock: Clock
  readonly #timeouts: Timeouts
  readonly #userAgent: string
  readonly #retry: RetryPolicy
  readonly #onResponse: ((event: ResponseEvent) => void) | undefined
  readonly #counts = new Map<string, number>()
  readonly #formsLogged = new Set<string>()

  constructor(options: ApiClientOptions) {
    const url = new URL(options.baseUrl)
    this.#prefix = url.pathname.replace(/\/+$/, '')
    this.#timeouts = { ...DEFAULT_TIMEOUTS, ...options.timeouts }
    if (options.sharedPool === true) {
      this.#shared = `${url.origin} ${this.#timeouts.connectMs}`
      let entry = sharedPools.get(this.#shared)
      if (entry === undefined || entry.pool.closed || entry.pool.destroyed) {
        entry = { pool: new Pool(url.origin, poolOptions(this.#timeouts, SHARED_CONNECTIONS)), users: 0 }
        sharedPools.set(this.#shared, entry)
      }
      entry.users++
      this.#pool = entry.pool
    } else this.#pool = new Pool(url.origin, poolOptions(this.#timeouts, options.connections ?? 8))
    this.#apiKey = options.apiKey
    this.#governor = options.governor
    this.#log = options.logger.child({ component: 'api' })
    this.#clock = options.clock ?? systemClock
    this.#userAgent = options.userAgent ?? 'fsm-sync'
    this.#retry = options.retryPolicy ?? DEFAULT_RETRY_POLICY
    this.#onResponse = options.onResponse
  }

  get(path: string, query: Query | undefined, options: CallOptions): Promise<ApiResponse> {
    return this.request('GET', path, { ...options, query })
  }

  post(path: string, body: unknown, options: CallOptions): Promise<ApiResponse> {
    return this.request('POST', path, { ...options, body })
  }

  put(path: string, body: unknown, options: CallOptions): Promise<ApiResponse> {
    return this.request('PUT', path, { ...options, body })
  }

  patch(path: string, body: unknown, options: CallOptions): Promise<ApiResponse> {
    return this.request('PATCH', path, { ...options, body })
  }

  delete(path: string, options: CallOptions): Promise<ApiResponse> {
    return this.request('DELETE', path, options)
  }

  async request(method: HttpMethod, path: string, options: RequestOptions): Promise<ApiResponse> {
    const apiPath = path.startsWith('/') ? path : `/${path}`
    const where: RouteInfo = { route: `${method} ${templatePath(apiPath)}`, target: `${method} ${apiPath}` }
    const fullPath = this.#prefix + apiPath + queryString(options.query)
    const body = options.body === undefined ? undefined : JSON.stringify(options.body)
    for (let attempt = 1; ; attempt++) {
      const slot = await (options.share ?? this.#governor).acquire(options.priority, options.signal, options.who)
      options.onAttempt?.()
      let result: Attempt
      try {
        result = await this.#attempt(method, apiPath, fullPath, body, where, attempt, slot.startedAt, options.signal)
      } finally {
        slot.release()
      }
      if (result.ok) return result.response
      const decision = retryDecision(attempt, result.outcome, method, this.#retry)
      if (!decision.retry) {
        if (result.outcome.kind === 'status' && result.outcome.status >= 500 && method === 'POST') {
          this.#log.warn({ route: where.route, status: result.outcome.status }, 'create not retried: it may have been applied')
        }
        throw result.error
      }
      const status = result.outcome.kind === 'status' ? result.outcome.status : 0
      this.#log.warn({ route: where.route, status, attempt, retryInMs: decision.delayMs, reason: decision.reason }, 'retrying')
      // A 429 already paused the whole governor; other failures wait here without holding a slot.
      if (status !== 429) await this.#clock.sleep(decision.delayMs, options.signal)
    }
  }

  /** Answers counted by `route status` (status 0: failed below HTTP). */
  stats(): Record<string, number> {
    return Object.fromEntries(this.#counts)
  }

  /** Closes the pool's sockets; idempotent. */
  close(): Promise<void> {
    if (this.#shared !== undefined) {
      // A shared pool closes with its last user.
      const key = this.#shared
      const entry = sharedPools.get(key)
      this.#shared = undefined
      if (entry === undefined || entry.pool !== this.#pool || --entry.users > 0) return Promise.resolve()
      sharedPools.delete(key)
    }
    if (this.#pool.closed || this.#pool.destroyed) return Promise.resolve()
    return this.#pool.close()
  }

  async #attempt(
    method: HttpMethod,
    apiPath: string,
    fullPath: string,
    body: string | undefined,
    where: RouteInfo,
    attempt: number,
    startedAt: number,
    signal: AbortSignal | undefined,
  ): Promise<Attempt> {
    const headers: Record<string, string> = {
      accept: 'application/json',
      'user-agent': this.#userAgent,
      ...authHeader(apiPath, this.#apiKey),
    }
    if (body !== undefined) headers['content-type'] = 'application/json'
    let status: number
    let responseHeaders: IncomingHttpHeaders
    let text: string
    const deadline = attemptDeadline(this.#timeouts.deadlineMs, signal)
    try {
      const res = await this.#pool.request({
        method,
        path: fullPath,
        headers,
        body: body ?? null,
        signal: deadline.signal,
        headersTimeout: this.#timeouts.headersMs,
        bodyTimeout: this.#timeouts.bodyMs,
      })
      status = res.statusCode
      responseHeaders = res.headers
      text = await res.body.text()
    } catch (err) {
      if (signal?.aborted === true) throw abortReason(signal)
      this.#count(where.route, 0, attempt, startedAt)
      const error = deadline.passed()
        ? new RequestDeadlineError({ ...where, deadlineMs: this.#timeouts.deadlineMs }, { cause: err })
        : networkErrorFor(err, where)
      return { ok: false, error, outcome: { kind: 'network', reachedServer: error.reachedServer } }
    } finally {
      deadline.dispose()
    }
    this.#count(where.route, status, attempt, startedAt)
    const retryAfterMs = this.#rateLimit(status, responseHeaders, startedAt, attempt)
    if (status < 200 || status >= 300) {
      const parsed = parseJson(text)
      const error = apiErrorFor(status, parsed.ok ? parsed.value : text, where, retryAfterMs, responseHeaders.location)
      return { ok: false, error, outcome: { kind: 'status', status, retryAfterMs } }
    }
    return { ok: true, response: this.#envelope(status, text, responseHeaders, where, attempt) }
  }

  // Feeds the budget and, on 429, pauses the governor; returns the wait the server asked for.
  #rateLimit(status: number, headers: IncomingHttpHeaders, startedAt: number, attempt: number): number | undefined {
    const now = this.#clock.now()
    const rl = readRateLimitHeaders(headers, now)
    if (rl.retryAfter !== undefined) this.#logFormOnce(rl.retryAfter.header, rl.retryAfter.form)
    if (status === 429 || rl.remaining !== undefined || rl.limit !== undefined) {
      this.#governor.observe({ startedAt, at: now, status, limitHeader: rl.limit, remainingHeader: rl.remaining })
    }
    if (status !== 429) return rl.retryAfter?.waitMs
    const fallback = this.#retry.delaysMs[Math.min(attempt, this.#retry.delaysMs.length) - 1] ?? 1_000
    const waitMs = Math.min(this.#retry.maxDelayMs, rl.retryAfter?.waitMs ?? fallback)
    this.#governor.pause(now + waitMs)
    this.#log.warn({ waitMs, limit: rl.limit, remaining: rl.remaining }, 'rate limited: governor paused')
    return waitMs
  }

  #envelope(status: number, text: string, headers: IncomingHttpHeaders, where: RouteInfo, attempt: number): ApiResponse {
    const malformed = (detail: string, cause: unknown): MalformedResponseError =>
      new MalformedResponseError({ ...where, status, detail }, { cause })
    const parsed = parseJson(text)
    if (!parsed.ok) throw malformed('the body is not JSON', parsed.error)
    const envelope = EnvelopeSchema.safeParse(parsed.value)
    if (!envelope.success) {
      const detail = envelope.error.issues.map((i) => `${i.path.join('.') || 'body'}: ${i.message}`).join('; ')
      throw malformed(`not the API envelope (${detail})`, envelope.error)
    }
    if (!envelope.data.success) throw apiErrorFor(status, envelope.data, where)
    const date = headers.date
    return {
      status,
      route: where.route,
      body: envelope.data,
      data: envelope.data.data,
      meta: envelope.data.meta ?? undefined,
      headers,
      date: typeof date === 'string' ? date : undefined,
      attempts: attempt,
    }
  }

  #count(route: string, status: number, attempt: number, startedAt: number): void {
    const key = `${route} ${status}`
    this.#counts.set(key, (this.#counts.get(key) ?? 0) + 1)
    this.#onResponse?.({ route, status, attempt, durationMs: this.#clock.now() - startedAt })
  }

  #logFormOnce(header: string, form: string): void {
    const key = `${header}:${form}`
    if (this.#formsLogged.has(key)) return
    this.#formsLogged.add(key)
    this.#log.info({ header, form }, 'rate-limit header form seen')
  }
}

/**
 * One attempt's signal: the caller's abort, or the deadline passing. Aborting the request makes
 * undici destroy its socket, so a trickling answer does not keep a connection. Real time, like
 * undici's own timeouts: it bounds socket I/O, which an injected clock does not drive.
 */
function attemptDeadline(ms: number, caller: AbortSignal | undefined): { signal: AbortSignal; passed(): boolean; dispose(): void } {
  const controller = new AbortController()
  let passed = false
  const timer = setTimeout(() => {
    passed = true
    controller.abort(new Error(`request deadline of ${ms} ms passed`))
  }, ms)
  const onAbort = (): void => controller.abort(caller?.reason)
  if (caller?.aborted === true) onAbort()
  else caller?.addEventListener('abort', onAbort, { once: true })
  return {
    signal: controller.signal,
    passed: () => passed,
    dispose: () => {
      clearTimeout(timer)
      caller?.removeEventListener('abort', onAbort)
    },
  }
}

function parseJson(text: string): { ok: true; value: unknown } | { ok: false; error: unknown } {
  try {
    return { ok: true, value: JSON.parse(text) as unknown }
  } catch (error) {
    return { ok: false, error }
  }
}
