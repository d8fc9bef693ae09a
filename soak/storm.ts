// "Another client sharing the key": a loop that spends the same API key as fast as the upstream
// lets it, so the daemon sees 429s and headers showing someone else's use. It sends its own
// user agent, which is how the request log tells its requests from the daemon's.
import { setTimeout as delay } from 'node:timers/promises'
import { request } from 'undici'

export const STORM_AGENT = 'soak-storm (another client sharing the key)'

export interface StormCounts {
  requests: number
  limited: number
  failed: number
}

export function startStorm(url: string, apiKey: string, ratePerSecond: number): { stop(): Promise<StormCounts> } {
  const counts: StormCounts = { requests: 0, limited: 0, failed: 0 }
  let stopped = false
  const loop = (async () => {
    while (!stopped) {
      counts.requests++
      try {
        const res = await request(`${url}/api/v1/clients?limit=1`, { headers: { 'x-api-key': apiKey, 'user-agent': STORM_AGENT } })
        await res.body.dump()
        if (res.statusCode === 429) counts.limited++
      } catch {
        counts.failed++
      }
      await delay(1000 / ratePerSecond)
    }
  })()
  return {
    stop: async () => {
      stopped = true
      await loop
      return counts
    },
  }
}
