// Time as a dependency: everything in src/api that waits or reads the time takes a Clock, so tests
// drive hours of governor time in milliseconds of real time.

export interface Clock {
  /** Milliseconds since the epoch. */
  now(): number
  /** Runs `fn` after `ms`; returns a function that cancels it. */
  setTimer(ms: number, fn: () => void): () => void
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

export const systemClock: Clock = {
  now: () => Date.now(),
  setTimer: (ms, fn) => {
    const t = setTimeout(fn, Math.max(0, ms))
    return () => {
      clearTimeout(t)
    }
  },
  sleep: (ms, signal) => sleepWith(systemClock, ms, signal),
}
