// The webhook intake's limits as settings: their defaults and the rule that ties the body budget to
// the body cap. The config schema takes its defaults from here, and the intake (src/webhooks/) reads
// the same constants, so the two cannot drift; the reasons for each bound live in intake-limits.ts
// and body-budget.ts.

export interface IntakeLimits {
  /** Connections open at once; past it node:http closes new ones as they arrive. */
  maxConnections: number
  /** The longest a request body may take to arrive once its headers have: 408 past it. */
  bodyTimeoutMs: number
  /** Body bytes held in memory at once across all requests: 503 to the request that would pass it. */
  maxBufferedBytes: number
}

/**
 * Defaults. 1024 connections: well above a sender's usual handful and the intake bench's 256. 10 s
 * for a body: a delivery is a few KB and arrives in milliseconds, so only a stalled or hostile client
 * needs more. 32 MiB of bodies: a thousand deliveries of 32 KB, or 24 bodies at the 1 MiB cap.
 */
export const INTAKE_LIMIT_DEFAULTS: IntakeLimits = { maxConnections: 1024, bodyTimeoutMs: 10_000, maxBufferedBytes: 32 * 1024 * 1024 }

/** The share of the body budget that incomplete bodies, and bodies over 64 KiB, may hold. */
export const HELD_SHARE = 0.75
