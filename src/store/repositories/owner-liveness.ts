// Whether the process that owns a run is gone, so that its `running` runs may be marked
// interrupted. Pure: the clock and the pid probe are passed in.
//
// - Same host (hostname and pid namespace): a pid that no longer exists is gone, and so is one
//   that is now this very process (its pid was reused by us). A pid reused by another process
//   keeps existing but stops beating: the heartbeat bound catches it. A restarted container is
//   not this case: it gets a new pid namespace, so its earlier process counts as another host and
//   is taken for gone by the heartbeat bound (STALE_AFTER_MS, 60 s).
// - Another host (two containers on one volume): pids mean nothing here; a heartbeat older than
//   the bound is gone.

import { parseInstant } from '../../model/timestamps.js'

/** Silence after which an owner on another host (or a reused pid) is taken for gone: six missed beats of 10 s. */
export const STALE_AFTER_MS = 60_000

export interface ProcessIdentity {
  pid: number
  host: string
  /** `/proc/self/ns/pid` where readable: pids of two containers on one host are different spaces. */
  pidNamespace: string
}

export interface RunOwner extends ProcessIdentity {
  id: number
  /** Canonical UTC text. */
  startedAt: string
  heartbeatAt: string
}

export interface LivenessRules {
  now: number
  /** A heartbeat older than this means the owner is gone. */
  staleAfterMs: number
  /** Whether a pid exists on this host (`process.kill(pid, 0)` not failing with ESRCH). */
  pidExists: (pid: number) => boolean
}

export type Liveness = { gone: false } | { gone: true; reason: string }

export function ownerLiveness(owner: RunOwner | undefined, self: ProcessIdentity & { id: number }, rules: LivenessRules): Liveness {
  if (owner === undefined) return { gone: true, reason: 'no owner recorded (a run from before owners were kept, or an owner that stopped)' }
  if (owner.id === self.id) return { gone: false }
  const silentMs = rules.now - parseInstant(owner.heartbeatAt)
  if (!(silentMs <= rules.staleAfterMs)) return { gone: true, reason: `no heartbeat for ${Math.round(silentMs / 1000)} s` }
  if (owner.host !== self.host || owner.pidNamespace !== self.pidNamespace) return { gone: false }
  if (owner.pid === self.pid) return { gone: true, reason: `its pid ${owner.pid} is now this process` }
  if (!rules.pidExists(owner.pid)) return { gone: true, reason: `process ${owner.pid} no longer exists` }
  return { gone: false }
}
