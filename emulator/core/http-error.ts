// A failure answer. Bodies follow spec "Errors": endpoint errors are {success, message, error}
// (message first, error second, optionally a code); auth, scope and rate-limit errors are
// {success, code, message}.

export type ErrorCode =
  | 'UNAUTHORIZED'
  | 'FORBIDDEN'
  | 'RATE_LIMITED'
  | 'INTERNAL_ERROR'
  | 'INTEGRATION_NOT_CONNECTED'
  | 'NOT_FOUND'
  | 'CONFLICT'
  | 'VALIDATION_ERROR'

export class HttpError extends Error {
  constructor(
    readonly status: number,
    message: string,
    readonly code?: ErrorCode,
    readonly headers: Record<string, string> = {},
    /** 'auth' bodies carry no `error` key (spec: Errors, Bodies). */
    readonly shape: 'endpoint' | 'auth' = 'endpoint',
  ) {
    super(message)
    this.name = 'HttpError'
  }

  body(): Record<string, unknown> {
    if (this.shape === 'auth') return { success: false, code: this.code ?? 'UNAUTHORIZED', message: this.message }
    return { success: false, message: this.message, error: this.message, ...(this.code === undefined ? {} : { code: this.code }) }
  }
}

export const badRequest = (message: string, code?: ErrorCode): HttpError => new HttpError(400, message, code)
export const notFound = (message = 'Resource not found'): HttpError => new HttpError(404, message, 'NOT_FOUND')
export const conflict = (message: string): HttpError => new HttpError(409, message, 'CONFLICT')
export const unauthorized = (message: string): HttpError => new HttpError(401, message, 'UNAUTHORIZED', {}, 'auth')
export const forbidden = (scope: string): HttpError => new HttpError(403, `Missing required scope: ${scope}`, 'FORBIDDEN', {}, 'auth')
