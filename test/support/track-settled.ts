// Whether a promise has settled, read without awaiting it (a test of what waits for what).

/** Tracks whether a promise has settled, without awaiting it. */
export function track<T>(p: Promise<T>): { settled: () => boolean; value: Promise<T> } {
  let settled = false
  void p.then(
    () => (settled = true),
    () => (settled = true),
  )
  return { settled: () => settled, value: p }
}
