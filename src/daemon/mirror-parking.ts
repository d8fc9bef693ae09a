// Which idle mirrors to close (park) now: the pure rule behind mirror-parker.ts. A mirror quiet for
// `idleMs` is parked; while more are open than the budget allows (derived from the process's file
// descriptor limit, descriptor-budget.ts), the quiet ones are parked too, longest quiet first. A
// busy mirror is never parked. src/store/README.md, "Idle mirrors".

export interface MirrorState {
  id: string
  open: boolean
  busy: boolean
  /** Clock ms since when it has been neither busy nor used. */
  quietSince: number
}

export interface ParkingPolicy {
  /** Quiet this long, a mirror is parked whatever the budget. */
  idleMs: number
  /** Open mirrors the process may hold; past it, quiet mirrors are parked sooner. */
  maxOpen: number
}

/** The ids to park now, longest quiet first. */
export function mirrorsToPark(mirrors: readonly MirrorState[], now: number, policy: ParkingPolicy): string[] {
  const quiet = mirrors.filter((m) => m.open && !m.busy).sort((a, b) => a.quietSince - b.quietSince)
  let open = mirrors.filter((m) => m.open).length
  const park: string[] = []
  for (const m of quiet) {
    if (now - m.quietSince < policy.idleMs && open <= policy.maxOpen) break
    park.push(m.id)
    open--
  }
  return park
}

/** Follows each mirror's use between two looks: a use or a busy look restarts its quiet time. */
export class QuietTracker {
  readonly #seen = new Map<string, { uses: number; quietSince: number }>()

  look(id: string, activity: { open: boolean; busy: boolean; uses: number }, now: number): MirrorState {
    const last = this.#seen.get(id)
    const quietSince = last === undefined || activity.busy || last.uses !== activity.uses ? now : last.quietSince
    this.#seen.set(id, { uses: activity.uses, quietSince })
    return { id, open: activity.open, busy: activity.busy, quietSince }
  }

  /** Forgets the accounts not in `ids` (removed). */
  keep(ids: ReadonlySet<string>): void {
    for (const id of this.#seen.keys()) if (!ids.has(id)) this.#seen.delete(id)
  }
}
