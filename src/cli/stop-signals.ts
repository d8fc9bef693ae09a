// The signals that stop a command cleanly. SIGHUP too: a closed terminal or a container runtime may
// send it, and by default it ends the process with no clean stop. A SIGHUP ignored by the parent
// (`nohup`) cannot be honoured here: Node restores every signal's default action when it starts, so
// the ignore is gone before this code runs (`/proc/self/status` shows SIGHUP not ignored); keeping a
// daemon past a logout takes `setsid` or a service manager.
import type { Clock } from '../model/clock.js'

export const STOP_SIGNALS = ['SIGTERM', 'SIGINT', 'SIGHUP'] as const

export interface StopBudget {
  /** The daemon's clock: the budget is counted on it. */
  clock: Clock
  budgetMs: number
  /** Called once when `stop` has not ended within the budget, or at a second stop signal (it ends the process). */
  overrun: () => void
  /** Where a second stop signal comes from. Default: this process. */
  signals?: Pick<NodeJS.EventEmitter, 'once' | 'off'>
}

/** Runs `stop`; past the budget, or at a second stop signal, calls `overrun` without waiting for it. */
export async function stopWithin(stop: () => Promise<void>, budget: StopBudget): Promise<void> {
  let overran = false
  const force = () => {
    if (overran) return
    overran = true
    budget.overrun()
  }
  // In the background: should everything else be closed, the budget alone keeps nothing running.
  const cancel = budget.clock.setTimer(budget.budgetMs, force, { background: true })
  const signals = budget.signals ?? process
  for (const s of STOP_SIGNALS) signals.once(s, force)
  try {
    await stop()
  } finally {
    cancel()
    for (const s of STOP_SIGNALS) signals.off(s, force)
  }
}
