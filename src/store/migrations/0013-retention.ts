// Retention of the webhook inbox (src/store/repositories/retention.ts). An applied delivery first loses its body
// and keeps a compact row (its id guards against a replay, since nothing upstream signs a time),
// then the row goes too. `body_dropped_at` tells the two apart, and each index below holds one of
// the two kinds of row only, so each pass reads its oldest rows by range instead of walking past
// the other kind (at 10 deliveries/s, millions of compact rows sit in front of the bodies).
import type { MigrationStatements } from './types.js'

export const retention: MigrationStatements = [
  `ALTER TABLE webhook_inbox ADD COLUMN body_dropped_at TEXT`,
  `CREATE INDEX webhook_inbox_bodies ON webhook_inbox (received_at) WHERE body_dropped_at IS NULL`,
  `CREATE INDEX webhook_inbox_compact ON webhook_inbox (received_at) WHERE body_dropped_at IS NOT NULL`,
]
