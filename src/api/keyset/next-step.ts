// How the keyset walk steps through rows sharing one updatedAt, and when it gives up (README.md
// in this folder, "Ties" and "Stalls"). Pure.

/** The next request inside the rows at one `since`: `page`, `limit` and the offset they make. */
export interface Step {
  page: number
  limit: number
  offset: number
}

/**
 * The step that reads the most rows not read yet, when the first `read` rows at a `since` have
 * been read: page 1 (no overlap needed: nothing before it can shift), or a later page whose offset
 * ((page - 1) * limit) falls inside the rows read, so that it overlaps them by at least one row.
 */
export function nextStep(read: number, maxLimit: number): Step {
  let best: Step = { page: 1, limit: maxLimit, offset: 0 }
  let bestFresh = maxLimit - read
  for (let pagesBefore = 1; pagesBefore < read; pagesBefore++) {
    const limit = Math.min(maxLimit, Math.floor((read - 1) / pagesBefore))
    if (limit - 1 <= bestFresh) break
    const offset = pagesBefore * limit
    const fresh = limit - (read - offset)
    if (fresh > bestFresh) [best, bestFresh] = [{ page: pagesBefore + 1, limit, offset }, fresh]
  }
  return best
}

/**
 * Requests a walk may make without moving its cursor or delivering a row before it is declared
 * stalled. A healthy walk can spend two passes over the tie at its cursor delivering nothing: a
 * resumed walk first re-reads the pages of ids its cursor already holds, and a tie read again after
 * it moved may deliver nothing. Ten more requests are margin. For a tie within one page that is 12
 * requests: a stuck walk stops within seconds, not after a window's budget.
 */
export function stallLimit(idsAtCursor: number, pageSize: number): number {
  return 10 + 2 * Math.ceil(idsAtCursor / Math.max(1, pageSize))
}
