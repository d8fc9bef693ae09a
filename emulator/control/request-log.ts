// The request log of GET /__emulator/requests: times, key id (never the key), user agent, method,
// path, status.
// Bounded so a long churn or bench run does not grow memory without end.

export interface LoggedRequest {
  seq: number
  /** When the answer was logged (after any injected latency). */
  time: string
  /** When the request arrived: what a sliding rate-limit window counts. */
  startedAt: string
  keyId: string | null
  /** Tells apart clients sharing one key (the soak's "other client"). */
  userAgent: string | null
  method: string
  path: string
  query: string
  status: number
}

const MAX_ENTRIES = 50_000

export class RequestLog {
  private entries: LoggedRequest[] = []
  private seq = 0

  add(entry: Omit<LoggedRequest, 'seq'>): void {
    this.entries.push({ seq: ++this.seq, ...entry })
    if (this.entries.length > MAX_ENTRIES * 1.2) this.entries = this.entries.slice(-MAX_ENTRIES)
  }

  list(filter: { afterSeq?: number; method?: string; pathPrefix?: string; status?: number }): LoggedRequest[] {
    return this.entries.filter(
      (e) =>
        (filter.afterSeq === undefined || e.seq > filter.afterSeq) &&
        (filter.method === undefined || e.method === filter.method) &&
        (filter.pathPrefix === undefined || e.path.startsWith(filter.pathPrefix)) &&
        (filter.status === undefined || e.status === filter.status),
    )
  }

  clear(): void {
    this.entries = []
  }
}
