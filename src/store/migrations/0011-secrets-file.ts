// Webhook signing secrets leave the mirror for their own 0600 file beside it (secrets-file.ts): the
// mirror is shared with warehouse readers, and a secret there lets any of them forge deliveries.
// Also: the inbox records deliveries acknowledged but skipped because their stream is not selected.
//
// Order, so that a kill at any point loses and duplicates nothing: the rows are first merged into
// the secrets file, durably (each secret once, so a re-run adds nothing); only then is the table
// dropped. With secure_delete on for the drop, SQLite zeroes the pages it frees (the zeroed pages
// reach the file through the -wal like any write), and the log frames of earlier versions are
// removed by a checkpoint that truncates the -wal (after the commit, outside any transaction). A
// reader holding the log may keep that checkpoint from finishing: a marker in webhook_state keeps
// it pending until an open that can. Until then the mirror stays 0600 (mirror-database.ts).
import type { Sqlite } from '../sqlite/mirror-database.js'
import { mergeIntoSecretsFile, secretsPathFor, type SecretEntry } from '../repositories/secrets-file.js'
import type { MigrationHooks, MigrationStatements } from './types.js'

const SCRUB_KEY = 'secrets-scrub'

export const secretsFile: MigrationStatements = [
  // Only a mirror that held secrets needs the scrub (a new one would checkpoint for nothing).
  `INSERT INTO webhook_state (key, value, updated_at)
   SELECT '${SCRUB_KEY}', 'pending', strftime('%Y-%m-%dT%H:%M:%fZ', 'now') WHERE EXISTS (SELECT 1 FROM webhook_secrets)
   ON CONFLICT(key) DO NOTHING`,
  `DROP TABLE IF EXISTS webhook_secrets`,
  // Set with processed_at when a delivery was acknowledged and kept but not applied: why.
  `ALTER TABLE webhook_inbox ADD COLUMN skipped TEXT`,
]

interface LegacyRow {
  endpoint_id: string
  url: string
  secret: string
  created_at: string
  superseded_at: string | null
}

/** secure_delete as it was before the migration turned it on, per writer connection. */
const secureDeleteBefore = new WeakMap<Sqlite, number>()

export const secretsFileHooks: MigrationHooks = {
  before(sqlite) {
    // Zeroes what the drop frees, instead of leaving the bytes in free pages. Only the drop needs it:
    // afterMigrations turns it back, or every later delete (retention's) would zero pages too.
    if (!secureDeleteBefore.has(sqlite)) secureDeleteBefore.set(sqlite, sqlite.pragma('secure_delete', { simple: true }) as number)
    sqlite.pragma('secure_delete = ON')
    const table = sqlite.prepare(`SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'webhook_secrets'`).get()
    if (table === undefined) return
    const rows = sqlite
      .prepare(`SELECT endpoint_id, url, secret, created_at, superseded_at FROM webhook_secrets ORDER BY id`)
      .all() as LegacyRow[]
    if (rows.length === 0) return
    const entries: SecretEntry[] = rows.map((r) => ({
      endpointId: r.endpoint_id,
      url: r.url,
      secret: r.secret,
      createdAt: r.created_at,
      supersededAt: r.superseded_at,
    }))
    mergeIntoSecretsFile(secretsPathFor(sqlite.name), entries)
  },
  afterMigrations(sqlite) {
    const previous = secureDeleteBefore.get(sqlite)
    if (previous !== undefined) {
      secureDeleteBefore.delete(sqlite)
      sqlite.pragma(`secure_delete = ${previous}`)
    }
    if (!scrubPending(sqlite)) return
    // TRUNCATE waits (busy_timeout) for readers of older snapshots, then empties the -wal file.
    const [result] = sqlite.pragma('wal_checkpoint(TRUNCATE)') as { busy: number; log: number; checkpointed: number }[]
    if (result !== undefined && result.busy !== 0) return
    sqlite.prepare(`DELETE FROM webhook_state WHERE key = ?`).run(SCRUB_KEY)
  },
}

/**
 * What of the secrets may still be in the mirror's files: the old table (migration not applied
 * yet), a scrub still pending (the -wal may hold them), or nothing. Safe on any mirror, new or old.
 */
export function secretsLeftInMirror(sqlite: Sqlite): 'table' | 'log' | undefined {
  const table = sqlite.prepare(`SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?`)
  if (table.get('webhook_secrets') !== undefined) return 'table'
  if (table.get('webhook_state') !== undefined && scrubPending(sqlite)) return 'log'
  return undefined
}

function scrubPending(sqlite: Sqlite): boolean {
  return sqlite.prepare(`SELECT 1 FROM webhook_state WHERE key = ?`).get(SCRUB_KEY) !== undefined
}
