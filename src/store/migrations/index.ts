// The static list of migrations, in order. Names sort in application order; never rename one that
// has shipped, only append.
import type { MigrationStatements } from './types.js'
import { core } from './0001-core.js'
import { customObjects } from './0002-custom-objects.js'
import { webhooks } from './0003-webhooks.js'
import { reference } from './0004-reference.js'
import { accountMetadata } from './0005-account-metadata.js'
import { integrations } from './0006-integrations.js'
import { clientProperties } from './0007-client-properties.js'
import { calendarChanges } from './0008-calendar-changes.js'
import { requestLedger } from './0009-request-ledger.js'
import { retention } from './0012-retention.js'

export const MIGRATIONS: Readonly<Record<string, MigrationStatements>> = {
  '0001-core': core,
  '0002-custom-objects': customObjects,
  '0003-webhooks': webhooks,
  '0004-reference': reference,
  '0005-account-metadata': accountMetadata,
  '0006-integrations': integrations,
  // 0006 is the integrations' state (issue 7).
  '0007-client-properties': clientProperties,
  // 0008 stores calendar-a's change feed (issue 7).
  '0008-calendar-changes': calendarChanges,
  // 0009 keeps recent request start times, so a restart honours the sliding window (issue 8).
  '0009-request-ledger': requestLedger,
  // 0012 lets retention drop the bodies of old applied deliveries, then their rows.
  '0012-retention': retention,
}
