// The mirror's identity: a random id created once by a migration (0015), the same for the life of
// the mirror file. A destination records it in its replica and refuses to be fed by another mirror.
import type { Sqlite } from '../sqlite/mirror-database.js'

/** The mirror's id. */
export function mirrorId(sqlite: Sqlite): string {
  // The one row the migration inserted; mirror_id is TEXT NOT NULL.
  return sqlite.prepare(`SELECT mirror_id FROM mirror_identity WHERE id = 1`).pluck().get() as string
}
