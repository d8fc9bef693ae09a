// The upstream client's public surface, for the sync engine, the daemon and the CLI.
export {
  ApiClient,
  type ApiClientOptions,
  type ApiResponse,
  type CallOptions,
  type RequestOptions,
  type ResponseEvent,
  type Timeouts,
} from './api-client.js'
export { customObjectCursor, type CustomObjectOptions, type CustomObjectPage } from './custom-object-cursor.js'
export {
  ApiError,
  ConflictError,
  ForbiddenError,
  MalformedResponseError,
  NetworkError,
  NotFoundError,
  PagingStalledError,
  RateLimitedError,
  RequestDeadlineError,
  UnauthorizedError,
  type ApiErrorKind,
  type UpstreamError,
} from './errors.js'
export { pageWalk, type PageWalkOptions, type WalkPage } from './page-walk.js'
export { parseResetHeader, readRateLimitHeaders } from './rate-limit-headers.js'
export {
  FencedError,
  isFenced,
  PRIORITIES,
  RequestGovernor,
  type GovernorOptions,
  type GovernorState,
  type Priority,
  type RequestGovernorOptions,
  type Slot,
} from './governor/index.js'
export type { CursorMeta, Envelope, KeysetRow, ListMeta, Row } from './response-schemas.js'
export {
  DEFAULT_RETRY_POLICY,
  retryDecision,
  type AttemptOutcome,
  type HttpMethod,
  type RetryDecision,
  type RetryPolicy,
} from './retry-policy.js'
export type { Query, QueryValue } from './routes.js'
export { stallLimit, updatedAtKeyset, type KeysetCursor, type KeysetOptions, type KeysetPage, type PageSource } from './keyset/index.js'
