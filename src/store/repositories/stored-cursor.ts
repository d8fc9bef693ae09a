// A cursor read back from sync_state is data from disk, not from this release's own hands: a row
// corrupted, written by an older release in another shape, or edited by hand. It is parsed with the
// schema of its kind; what does not parse is reported, never thrown, so that a bad row costs one
// restart of its stream instead of failing every run after it.
import type { z } from 'zod'

export type StoredCursor<T> = { ok: true; cursor: T | undefined } | { ok: false; problem: string }

/** `text`: the stored JSON (null: no cursor yet). Pure. */
export function parseStoredCursor<T>(text: string | null, schema: z.ZodType<T>): StoredCursor<T> {
  if (text === null) return { ok: true, cursor: undefined }
  let value: unknown
  try {
    value = JSON.parse(text)
  } catch (err) {
    return { ok: false, problem: `not JSON (${err instanceof Error ? err.message : String(err)})` }
  }
  const parsed = schema.safeParse(value)
  if (parsed.success) return { ok: true, cursor: parsed.data }
  const issues = parsed.error.issues.map((i) => `${i.path.length === 0 ? 'the cursor' : i.path.join('.')}: ${i.message}`)
  return { ok: false, problem: issues.join('; ') }
}
