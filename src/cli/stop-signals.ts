// The signals that stop a command cleanly. A one-shot command stops on SIGHUP too: a closed terminal
// or a container runtime may send it, and by default it ends the process with no clean stop. The
// daemon (`run`) reloads its accounts on SIGHUP instead (RELOAD_SIGNAL) and stops on the others. A
// SIGHUP ignored by the parent (`nohup`) cannot be honoured here: Node restores every signal's
// default action when it starts (`/proc/self/status` shows SIGHUP not ignored).
import type { Clock } from '../model/clock.js'

export const STOP_SIGNALS = ['SIGTERM', 'SIGINT', 'SIGHUP'] as const
/** What stops the daemon; SIGHUP reloads it. */
export const DAEMON_STOP_SIGNALS = ['SIGTERM', 'SIGINT'] as const
export const RELOAD_SIGNAL = 'SIGHUP'

export interface StopBudget {
  /** The daemon's clock: the budget is counted on it. */
  clock: Clock
  budgetMs: number
  /** Called once when `stop` has not ended within the budget, or at a second stop signal (it ends the process). */
  overrun: () => void
  /** Where a second stop signal comes from. Default: this process. */
  signals?: Pick<NodeJS.EventEmitter, 'once' | 'off'>
  /** Which signals are a second stop signal. Default: STOP_SIGNALS. */
  names?: readonly NodeJS.Signals[]
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
  const names = budget.names ?? STOP_SIGNALS
  for (const s of names) signals.once(s, force)
  try {
    await stop()
  } finally {
    cancel()
    for (const s of names) signals.off(s, force)
  }
}
