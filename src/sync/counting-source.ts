// Wraps the client for one run: counts the requests the run spent (attempts, retries included) and
// remembers when the latest request started, which is the moment a list page was observed.
import type { ApiResponse, CallOptions } from '../api/api-client.js'
import type { Query } from '../api/routes.js'
import type { PageSource } from '../api/updated-at-keyset.js'

export interface Upstream {
  get(path: string, query: Query | undefined, options: CallOptions): Promise<ApiResponse>
}

export class CountingSource implements PageSource {
  requests = 0
  lastStartedAt = 0

  constructor(
    private readonly upstream: Upstream,
    private readonly now: () => number,
  ) {}

  async get(path: string, query: Query | undefined, options: CallOptions): Promise<ApiResponse> {
    this.lastStartedAt = this.now()
    try {
      const res = await this.upstream.get(path, query, options)
      this.requests += res.attempts
      return res
    } catch (err) {
      this.requests += attemptsOf(err)
      throw err
    }
  }
}

function attemptsOf(err: unknown): number {
  const n = (err as { attempts?: unknown }).attempts
  return typeof n === 'number' && n > 0 ? n : 1
}
