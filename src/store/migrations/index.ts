// The static list of migrations, in order. Names sort in application order; never rename one that
// has shipped, only append.
import type { MigrationHooks, MigrationStatements } from './types.js'
import { core } from './0001-core.js'
import { customObjects } from './0002-custom-objects.js'
import { webhooks } from './0003-webhooks.js'
import { reference } from './0004-reference.js'
import { accountMetadata } from './0005-account-metadata.js'
import { integrations } from './0006-integrations.js'
import { clientProperties } from './0007-client-properties.js'
import { calendarChanges } from './0008-calendar-changes.js'
import { requestLedger } from './0009-request-ledger.js'
import { mirrorProbe } from './0010-mirror-probe.js'
import { secretsFile, secretsFileHooks } from './0011-secrets-file.js'
import { runOwners } from './0012-run-owners.js'
import { retention } from './0013-retention.js'
import { changeLogConsumers } from './0014-change-log-consumers.js'
import { destinationState } from './0015-destination-state.js'

export const MIGRATIONS: Readonly<Record<string, MigrationStatements>> = {
  '0001-core': core,
  '0002-custom-objects': customObjects,
  '0003-webhooks': webhooks,
  '0004-reference': reference,
  '0005-account-metadata': accountMetadata,
  '0006-integrations': integrations,
  // 0006 is the integrations' state.
  '0007-client-properties': clientProperties,
  // 0008 stores calendar-a's change feed.
  '0008-calendar-changes': calendarChanges,
  // 0009 keeps recent request start times, so a restart honours the sliding window.
  '0009-request-ledger': requestLedger,
  // 0010 is the row the readiness probe writes and syncs.
  '0010-mirror-probe': mirrorProbe,
  // 0011 moves webhook secrets out of the mirror into their own file; the inbox records skipped deliveries.
  '0011-secrets-file': secretsFile,
  // 0012 records which process owns each run, so only runs of a process that is gone are abandoned.
  '0012-run-owners': runOwners,
  // 0013 lets retention drop the bodies of old applied deliveries, then their rows.
  '0013-retention': retention,
  // 0014 records who reads change_log (a destination, a named consumer), so retention waits for them.
  '0014-change-log-consumers': changeLogConsumers,
  // 0015 gives the mirror an identity a destination records, and the destination's state for `status`.
  '0015-destination-state': destinationState,
}

/** Code run beside some migrations' statements (see MigrationHooks), by migration name. */
export const MIGRATION_HOOKS: Readonly<Record<string, MigrationHooks>> = {
  '0011-secrets-file': secretsFileHooks,
}
