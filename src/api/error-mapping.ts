// From a failed answer or a thrown transport error to one of the typed errors (pure).
import {
  ApiError,
  ConflictError,
  ForbiddenError,
  NetworkError,
  NotFoundError,
  RateLimitedError,
  UnauthorizedError,
  type ApiErrorData,
} from './errors.js'
import { FailureBodySchema } from './response-schemas.js'

export interface RouteInfo {
  route: string
  target: string
}

/**
 * Maps a non-2xx answer. `body` is the parsed JSON body, or the raw text when it was not JSON;
 * `location` is the answer's Location header, named when the answer is a redirect.
 */
export function apiErrorFor(
  status: number,
  body: unknown,
  where: RouteInfo,
  retryAfterMs?: number,
  location?: string | string[],
): ApiError {
  const parsed = FailureBodySchema.safeParse(body)
  const failure = parsed.success ? parsed.data : undefined
  const errorText = typeof failure?.error === 'string' ? failure.error : undefined
  const raw = typeof body === 'string' ? body.slice(0, 200) : undefined
  const data: ApiErrorData = {
    status,
    apiCode: failure?.code,
    apiMessage: failure?.message ?? errorText ?? (raw === undefined || raw === '' ? undefined : raw),
    route: where.route,
    target: where.target,
    retryable: status === 429 || status >= 500,
  }
  const options = { cause: body }
  // The client follows no redirect (a key sent on to another host would leak): say where it pointed.
  if (status >= 300 && status < 400) return new ApiError(data, { ...options, message: redirectMessage(data, location) })
  switch (status) {
    case 401:
      return new UnauthorizedError(data, options)
    case 403:
      return new ForbiddenError(data, options)
    case 404:
      return new NotFoundError(data, options)
    case 409:
      return new ConflictError(data, options)
    case 429:
      return new RateLimitedError(data, { ...options, retryAfterMs: retryAfterMs ?? 0 })
    default:
      return new ApiError(data, options)
  }
}

function redirectMessage(data: ApiErrorData, location: string | string[] | undefined): string {
  const to = Array.isArray(location) ? location[0] : location
  const where = to === undefined || to === '' ? 'with no Location header' : `to ${to}`
  return `Redirected (${data.status}) on ${data.target} ${where}: fsm-sync does not follow redirects; set FSM_BASE_URL to the address the API answers on now`
}

// Failures to set up a connection: the request was never sent, so even a create may be repeated.
const CONNECT_CODES = new Set(['ECONNREFUSED', 'ENOTFOUND', 'EAI_AGAIN', 'EHOSTUNREACH', 'ENETUNREACH', 'UND_ERR_CONNECT_TIMEOUT'])

export function errorCodeOf(err: unknown): string {
  for (let e: unknown = err, depth = 0; e instanceof Error && depth < 4; e = e.cause, depth++) {
    const code = (e as { code?: unknown }).code
    if (typeof code === 'string' && code !== '') return code
  }
  return err instanceof Error ? err.name : 'UNKNOWN'
}

export function networkErrorFor(err: unknown, where: RouteInfo): NetworkError {
  const errorCode = errorCodeOf(err)
  return new NetworkError({ ...where, errorCode, reachedServer: !CONNECT_CODES.has(errorCode) }, { cause: err })
}
