// Typed errors of the upstream client. Each carries its data and a string-literal `code`; messages
// say what failed and what to do, and never contain the API key.

export type ApiErrorKind = 'unauthorized' | 'forbidden' | 'not-found' | 'conflict' | 'rate-limited' | 'client' | 'server'

export interface ApiErrorData {
  status: number
  /** The API's own `code` (UNAUTHORIZED, FORBIDDEN, ...), when the body carried one. */
  apiCode: string | undefined
  /** The API's `message` (or `error` string), when the body carried one. */
  apiMessage: string | undefined
  /** Method and templated path, e.g. `GET /api/v1/jobs/{id}`. */
  route: string
  /** Method and actual path without the query, e.g. `GET /api/v1/jobs/65f0...`. */
  target: string
  /** True when a later attempt may succeed (429, 5xx). */
  retryable: boolean
}

/**
 * Ours, one per class, so a caller (or a log reader) tells the failures apart by `code` alone. The
 * upstream's own code from the body is `apiCode`, never `code`.
 */
export type ApiErrorCode = 'API_ERROR' | 'API_UNAUTHORIZED' | 'API_FORBIDDEN' | 'API_NOT_FOUND' | 'API_CONFLICT' | 'API_RATE_LIMITED'

/** A failure answer with no class of its own (another 4xx, or a 5xx). */
export class ApiError extends Error {
  readonly code: ApiErrorCode = 'API_ERROR'
  readonly kind: ApiErrorKind
  readonly status: number
  readonly apiCode: string | undefined
  readonly apiMessage: string | undefined
  readonly route: string
  readonly target: string
  readonly retryable: boolean

  constructor(data: ApiErrorData, options: { cause: unknown; message?: string; kind?: ApiErrorKind }) {
    super(options.message ?? defaultMessage(data), { cause: options.cause })
    this.name = new.target.name
    this.kind = options.kind ?? (data.status >= 500 ? 'server' : 'client')
    this.status = data.status
    this.apiCode = data.apiCode
    this.apiMessage = data.apiMessage
    this.route = data.route
    this.target = data.target
    this.retryable = data.retryable
  }
}

export class UnauthorizedError extends ApiError {
  override readonly code = 'API_UNAUTHORIZED' as const

  constructor(data: ApiErrorData, options: { cause: unknown }) {
    super(data, {
      ...options,
      kind: 'unauthorized',
      message: `FSM_API_KEY was rejected (${statusLabel(data)}) on ${data.target}: the key is invalid, revoked or expired; create a new one in the account settings`,
    })
  }
}

export class ForbiddenError extends ApiError {
  override readonly code = 'API_FORBIDDEN' as const
  /** The scope named by `Missing required scope: <scope>`, when the message had that form. */
  readonly missingScope: string | undefined

  constructor(data: ApiErrorData, options: { cause: unknown }) {
    const missingScope = parseMissingScope(data.apiMessage)
    const what = missingScope === undefined ? 'a required scope' : `the scope ${missingScope}`
    super(data, {
      ...options,
      kind: 'forbidden',
      message: `FSM_API_KEY lacks ${what} (${statusLabel(data)}) on ${data.target}: add it to the key or create a key that has it${suffix(data.apiMessage)}`,
    })
    this.missingScope = missingScope
  }
}

export class NotFoundError extends ApiError {
  override readonly code = 'API_NOT_FOUND' as const

  constructor(data: ApiErrorData, options: { cause: unknown }) {
    super(data, { ...options, kind: 'not-found', message: `Not found (${statusLabel(data)}) on ${data.target}${suffix(data.apiMessage)}` })
  }
}

export class ConflictError extends ApiError {
  override readonly code = 'API_CONFLICT' as const

  constructor(data: ApiErrorData, options: { cause: unknown }) {
    super(data, { ...options, kind: 'conflict', message: `Conflict (${statusLabel(data)}) on ${data.target}${suffix(data.apiMessage)}` })
  }
}

export class RateLimitedError extends ApiError {
  override readonly code = 'API_RATE_LIMITED' as const
  /** How long the server asked us to wait (or the backoff used when it named none). */
  readonly retryAfterMs: number

  constructor(data: ApiErrorData, options: { cause: unknown; retryAfterMs: number }) {
    super(data, {
      cause: options.cause,
      kind: 'rate-limited',
      message: `Rate limited (${statusLabel(data)}) on ${data.target} after every retry; the key's budget is spent, possibly by another client (retry after ${Math.ceil(options.retryAfterMs / 1000)} s)`,
    })
    this.retryAfterMs = options.retryAfterMs
  }
}

/** The request failed below HTTP: refused, reset, timed out. */
export class NetworkError extends Error {
  readonly code: 'NETWORK_ERROR' | 'REQUEST_DEADLINE' = 'NETWORK_ERROR'
  readonly route: string
  readonly target: string
  /** The system or undici error code, e.g. ECONNRESET, UND_ERR_HEADERS_TIMEOUT. */
  readonly errorCode: string
  /** False only when the request provably never reached the server (connection not made). */
  readonly reachedServer: boolean
  readonly retryable = true

  constructor(
    data: { route: string; target: string; errorCode: string; reachedServer: boolean; message?: string },
    options: { cause: unknown },
  ) {
    super(
      data.message ?? `Network error (${data.errorCode}) on ${data.target}: the upstream could not be reached or did not answer in time`,
      options,
    )
    this.name = new.target.name
    this.route = data.route
    this.target = data.target
    this.errorCode = data.errorCode
    this.reachedServer = data.reachedServer
  }
}

/**
 * The whole exchange (connect, headers, body) outlasted the request deadline: a body trickled a byte
 * at a time never trips the idle-gap body timeout. A network failure for the retry policy.
 */
export class RequestDeadlineError extends NetworkError {
  override readonly code = 'REQUEST_DEADLINE' as const
  readonly deadlineMs: number

  constructor(data: { route: string; target: string; deadlineMs: number }, options: { cause: unknown }) {
    super(
      {
        ...data,
        errorCode: 'REQUEST_DEADLINE',
        reachedServer: true,
        message:
          // Neutral on purpose: whether it is tried again depends on the method and the attempt
          // (a POST never is, nor a GET's last try), which the retry policy decides after this.
          `Request deadline of ${data.deadlineMs} ms passed on ${data.target}: the upstream did not finish its answer (connect, headers and body) in time. ` +
          'Raise http.requestDeadlineMs only if the upstream is known to be this slow',
      },
      options,
    )
    this.deadlineMs = data.deadlineMs
  }
}

/** A response that is not the documented envelope (not JSON, no boolean `success`, bad rows). */
export class MalformedResponseError extends Error {
  readonly code = 'MALFORMED_RESPONSE' as const
  readonly route: string
  readonly target: string
  readonly status: number
  readonly detail: string

  constructor(data: { route: string; target: string; status: number; detail: string }, options: { cause: unknown }) {
    super(`Malformed response (${data.status}) on ${data.target}: ${data.detail}`, options)
    this.name = 'MalformedResponseError'
    this.route = data.route
    this.target = data.target
    this.status = data.status
    this.detail = data.detail
  }
}

/**
 * A list walk that stopped moving: the route answered, but the walk received nothing it had not
 * already received and its cursor did not move (a route that ignores `page` inside a tie). The
 * walk ends instead of spending the request budget; what it delivered before stays committed.
 */
export class PagingStalledError extends Error {
  readonly code = 'PAGING_STALLED' as const
  readonly route: string
  readonly target: string
  /** Requests the walk made since it last moved. */
  readonly requests: number
  readonly detail: string

  constructor(data: { route: string; target: string; requests: number; detail: string }, options: { cause: unknown }) {
    super(
      `Paging stalled on ${data.target}: ${data.detail}. The walk stopped after ${data.requests} requests without progress; ` +
        'its cursor stays where the last stored page left it, so nothing is skipped and the next run tries again. ' +
        'The upstream list does not page as documented: report it to the API provider if it persists',
      options,
    )
    this.name = 'PagingStalledError'
    this.route = data.route
    this.target = data.target
    this.requests = data.requests
    this.detail = data.detail
  }
}

export type UpstreamError = ApiError | NetworkError | MalformedResponseError | PagingStalledError

export function parseMissingScope(message: string | undefined): string | undefined {
  const match = /Missing required scope:\s*([^\s,;]+)/i.exec(message ?? '')
  return match?.[1]?.replace(/[.'"]+$/, '')
}

function statusLabel(data: ApiErrorData): string {
  return data.apiCode === undefined ? String(data.status) : `${data.status} ${data.apiCode}`
}

function suffix(message: string | undefined): string {
  return message === undefined || message === '' ? '' : `: ${message}`
}

function defaultMessage(data: ApiErrorData): string {
  const what = data.status >= 500 ? 'Upstream server error' : 'Request rejected'
  return `${what} (${statusLabel(data)}) on ${data.target}${suffix(data.apiMessage)}`
}
