// Counters of the webhook path, for `status` and the daemon's /metrics (which renders them).
// Plain numbers: the intake's hot path increments a field, nothing more.

export class WebhookMetrics {
  /** Answers of the intake, by outcome. */
  readonly intake = {
    stored: 0,
    duplicate: 0,
    unauthorized: 0,
    badRequest: 0,
    tooLarge: 0,
    unavailable: 0,
    methodNotAllowed: 0,
    /** 408: a body still incomplete at its deadline (webhooks.bodyTimeoutMs). */
    bodyTimeout: 0,
    /** 503: a body that would pass the bytes held at once (webhooks.maxBufferedBytes). */
    bufferFull: 0,
    /** Durable group commits (commit, then the log synced), and the deliveries they carried: the group size. */
    groupCommits: 0,
    groupedDeliveries: 0,
    /** Time the event loop spent committing groups (the sync runs off the loop), in microseconds. */
    commitMicros: 0,
    /** Time from each group's commit until its log sync returned (off the event loop), in microseconds. */
    walSyncMicros: 0,
  }
  /**
   * Work of the processor. `failed` rows stay in the inbox with their error; `deferred` wait for an
   * applier; `skipped` belong to a stream the config does not select.
   */
  readonly processor = { applied: 0, skipped: 0, failed: 0, deferred: 0, followUps: 0, followUpFailures: 0 }

  /** Flat `webhook_<group>_<name>` counters (snake_case) for a metrics endpoint. */
  snapshot(): Record<string, number> {
    const out: Record<string, number> = {}
    for (const [group, counters] of [
      ['intake', this.intake],
      ['processor', this.processor],
    ] as const) {
      for (const [name, value] of Object.entries(counters)) out[`webhook_${group}_${snake(name)}_total`] = value
    }
    return out
  }
}

const snake = (s: string): string => s.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`)
