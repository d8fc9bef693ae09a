// Time as a dependency: everything in src/ that waits or reads the time takes this Clock, one per
// process, built by the composition root (docs/architecture.md, Time), so tests drive hours of
// schedules, budgets and back-offs in milliseconds of real time with the FakeClock of test/support.

export interface TimerOptions {
  /** The timer alone does not keep the process running (a heartbeat, a back-off, an exit deadline). */
  background?: boolean
}

export interface Clock {
  /** Milliseconds since the epoch. */
  now(): number
  /** Runs `fn` after `ms`; returns a function that cancels it. */
  setTimer(ms: number, fn: () => void, options?: TimerOptions): () => void
  /** Resolves after `ms`; rejects with the signal's reason when it aborts first. */
  sleep(ms: number, signal?: AbortSignal): Promise<void>
}

/** Builds `sleep` from `setTimer`, so every clock aborts a sleep the same way. */
export function sleepWith(clock: Pick<Clock, 'setTimer'>, ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise<void>((resolve, reject) => {
    if (signal?.aborted === true) {
      reject(abortReason(signal))
      return
    }
    const onAbort = (): void => {
      cancel()
      reject(abortReason(signal))
    }
    const cancel = clock.setTimer(ms, () => {
      signal?.removeEventListener('abort', onAbort)
      resolve()
    })
    signal?.addEventListener('abort', onAbort, { once: true })
  })
}

export function abortReason(signal: AbortSignal | undefined): Error {
  const reason: unknown = signal?.reason
  if (reason instanceof Error) return reason
  return new DOMException('The operation was aborted', 'AbortError')
}

/** The real time: the one place in src/ that reads the system clock and arms its timers. */
export const systemClock: Clock = {
  now: () => Date.now(),
  setTimer: (ms, fn, options) => {
    const t = setTimeout(fn, Math.max(0, ms))
    if (options?.background === true) t.unref()
    return () => {
      clearTimeout(t)
    }
  },
  sleep: (ms, signal) => sleepWith(systemClock, ms, signal),
}
