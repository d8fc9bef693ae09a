// Wraps the client for one run: counts the requests the run spent and remembers when the latest
// request started, which is the moment a list page was observed. Both are taken where an attempt
// starts (the client's onAttempt, once the governor granted its slot), so retries and a request
// that finally fails count in full, and a call that waited minutes in the queue (reconcile
// priority) is not taken for older than it is.
import type { ApiResponse, CallOptions } from '../api/api-client.js'
import type { Query } from '../api/routes.js'
import type { PageSource } from '../api/keyset/index.js'

export interface Upstream {
  get(path: string, query: Query | undefined, options: CallOptions): Promise<ApiResponse>
}

export class CountingSource implements PageSource {
  requests = 0
  lastStartedAt = 0
  /** What its requests are for (the run's kind and stream, set by tracked-run.ts), shown while they wait for the budget. */
  who: string | undefined

  constructor(
    private readonly upstream: Upstream,
    private readonly now: () => number,
  ) {}

  get(path: string, query: Query | undefined, options: CallOptions): Promise<ApiResponse> {
    return this.upstream.get(path, query, this.counted(options))
  }

  /** Counts a request made ahead for this run (a first page read before the run began, first-pages.ts): its attempts, the last one's start. */
  countStarted(startedAt: number, attempts: number): void {
    this.requests += attempts
    this.lastStartedAt = startedAt
  }

  /** The options of a call made on the client directly (a POST): its attempts count for this run. */
  counted<T extends CallOptions>(options: T): T {
    const outer = options.onAttempt
    return {
      ...options,
      who: options.who ?? this.who,
      onAttempt: () => {
        this.requests++
        this.lastStartedAt = this.now()
        outer?.()
      },
    }
  }
}
