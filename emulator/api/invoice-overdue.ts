// Automatic `overdue` (spec: States, Invoice status: "`unpaid` or `partial` | due date passes |
// not fully paid | `overdue` (set automatically)"). The service does it in the background; the
// emulator does it lazily but exactly: before every request (API and control) and every churn
// tick, each live `unpaid`/`partial` invoice whose due date has passed on the emulator clock moves
// to `overdue`, so no reader can observe a state in which the move is late.
//
// A due date (YYYY-MM-DD) passes at 00:00 UTC the day after it. The move is a web-app write: it
// bumps `updatedAt` to that instant (as a job running at the moment the date passes would), or to
// the current time when the invoice was written after that instant without being moved yet, so
// `updatedAt` never goes backwards and `since` lists see the change. It emits no webhook: the
// `invoice.*` events come from v1 writes only and `invoice.overdue` is not subscribable (spec:
// Events); the `since` sweep is the reconciliation path.
//
// The move happens once per due date: the table says the status "may also be set by PUT", so a PUT
// back to `unpaid` after the move sticks until the due date changes (a background job that flipped
// it back on every run would overrule the value sent).
import type { EmulatorContext } from '../context.js'
import type { Collection } from '../core/collection.js'
import { shape } from '../data/docs.js'
import type { InvoiceInternal } from '../data/state.js'

const DAY_MS = 86_400_000
const DUE_DATE = /^\d{4}-\d{2}-\d{2}$/

/** Statuses the due date moves on (a paid or already overdue invoice stays as it is). */
const MOVES_FROM = new Set(['unpaid', 'partial'])

/** The instant a due date has passed (00:00 UTC the next day), or null without a usable date. */
export function overdueAtMs(dueDate: unknown): number | null {
  if (typeof dueDate !== 'string' || !DUE_DATE.test(dueDate)) return null
  const ms = Date.parse(`${dueDate}T00:00:00.000Z`)
  return Number.isNaN(ms) ? null : ms + DAY_MS
}

export class OverdueSweep {
  private seen: Collection<InvoiceInternal> | null = null
  private seenRevision = -1
  /** The earliest pending due instant seen by the last scan: nothing can move before it. */
  private nextMs = Number.POSITIVE_INFINITY
  /** Invoice id -> the due date it was (or was seen) overdue for: that date moves it no more. */
  private readonly movedFor = new Map<string, string>()

  /** Moves what is due; cheap (two comparisons) when nothing was written and nothing is due. */
  run(ctx: EmulatorContext): number {
    const coll = ctx.state.invoices
    const now = ctx.clock.now()
    if (coll === this.seen && coll.revision === this.seenRevision && now < this.nextMs) return 0
    let moved = 0
    let next = Number.POSITIVE_INFINITY
    for (const rec of coll.all()) {
      if (rec.deleted) continue
      const id = String(rec.doc.id)
      const dueDate = rec.doc.dueDate
      if (rec.doc.status === 'overdue' && typeof dueDate === 'string') this.movedFor.set(id, dueDate)
      if (!MOVES_FROM.has(rec.doc.status as string) || this.movedFor.get(id) === dueDate) continue
      const at = overdueAtMs(dueDate)
      if (at === null) continue
      if (at > now) {
        next = Math.min(next, at)
        continue
      }
      coll.write(rec, shape('invoice', { ...rec.doc, status: 'overdue' }), rec.updatedMs < at ? at : Math.max(now, rec.updatedMs))
      this.movedFor.set(id, dueDate as string)
      moved++
    }
    if (moved > 0) ctx.counters.bump('writes.invoices.overdue', moved)
    this.seen = coll
    this.seenRevision = coll.revision
    this.nextMs = next
    return moved
  }
}
