// The webhook path assembled once, its dependencies passed in: secret store, inbox,
// intake handler, processor and counters. The daemon (src/daemon) mounts `handler` at
// `config.webhooks.path`, calls `start()` once it listens, and `stop()` on shutdown.
import type { RecordStream } from '../model/streams.js'
import type { Config } from '../config/index.js'
import type { Logger } from '../log/logger.js'
import { systemClock, type Clock } from '../model/clock.js'
import type { Sqlite } from '../store/sqlite/mirror-database.js'
import type { BodyBudget } from './body-budget.js'
import type { ObjectSink } from './delivery-applier.js'
import type { FollowUpClient } from './follow-ups.js'
import { WebhookInbox, type SyncFile } from './inbox.js'
import { createIntakeHandler, type IntakeHandler } from './intake-handler.js'
import type { IntakeJournal, JournalIntake } from './intake-journal.js'
import { INTAKE_LIMIT_DEFAULTS, type IntakeLimits } from './intake-limits.js'
import { WebhookMetrics } from './metrics.js'
import { WebhookProcessor } from './processor.js'
import { deliverySelection } from './delivery-selection.js'
import { SecretStore, secretSource } from './secret-store.js'

export interface WebhookServiceOptions {
  /** The mirror's writer connection. */
  sqlite: Sqlite
  /** Where the signing secrets are kept; default: the file beside the mirror `sqlite` opened. */
  secrets?: SecretStore
  /** The intake's limits default to INTAKE_LIMIT_DEFAULTS (the config schema's defaults). */
  config: Pick<Config, 'webhookSecrets'> & { webhooks: Omit<Config['webhooks'], keyof IntakeLimits> & Partial<IntakeLimits> }
  logger: Logger
  /** The process's one clock (the daemon's, from create-app.ts). Default: the system clock. */
  clock?: Clock
  /** For follow-up GETs of `job.status_changed` (priority 'webhook'). */
  client?: FollowUpClient
  objectSink?: ObjectSink
  streams?: readonly RecordStream[]
  /** The config's `streams`: deliveries of other streams are acknowledged and skipped. Default: all. */
  selectedStreams?: readonly string[] | undefined
  /** false: store deliveries but apply none (tests of a crash between ack and apply). */
  process?: boolean
  /** How the inbox syncs its log (fs.fdatasync); the intake bench wraps it to time each sync. */
  syncFile?: SyncFile
  /** The body budget shared with other intakes (the daemon's accounts); default: one of the config's maxBufferedBytes. */
  bodyBudget?: BodyBudget
  /** Told when new deliveries are stored (the daemon's continuous sweeps plan again on it). */
  onStored?: () => void
  /** The process's intake journal, which acks for every account and relays into this inbox (intake-journal.ts). */
  journal?: { journal: IntakeJournal; accountId: string }
}

export interface WebhookService {
  handler: IntakeHandler
  inbox: WebhookInbox
  processor: WebhookProcessor
  secrets: SecretStore
  metrics: WebhookMetrics
  /** The intake's bounds; the listener serving `handler` applies the connection cap and deadlines. */
  limits: IntakeLimits
  /** Applies what a previous process left unapplied, then each new delivery after its ack. */
  start(): void
  /** Stops taking deliveries (503), commits and syncs those waiting, lets the batch in hand finish. */
  stop(): Promise<void>
}

export function createWebhookService(options: WebhookServiceOptions): WebhookService {
  const clock = options.clock ?? systemClock
  const now = () => clock.now()
  const metrics = new WebhookMetrics()
  const secrets = options.secrets ?? SecretStore.forMirror(options.sqlite.name)
  let processor: WebhookProcessor | undefined = undefined
  let port: JournalIntake | undefined = undefined
  const inbox = new WebhookInbox(options.sqlite, {
    now,
    maxBacklog: options.config.webhooks.maxBacklog,
    logger: options.logger,
    metrics,
    onStored: () => {
      processor?.wake()
      options.onStored?.()
    },
    ...(options.syncFile === undefined ? {} : { syncFile: options.syncFile }),
  })
  processor = new WebhookProcessor({
    sqlite: options.sqlite,
    inbox,
    logger: options.logger,
    clock,
    metrics,
    ...(options.client === undefined ? {} : { client: options.client }),
    ...(options.objectSink === undefined ? {} : { objectSink: options.objectSink }),
    ...(options.streams === undefined ? {} : { streams: options.streams }),
    selection: deliverySelection(options.selectedStreams),
    relayed: () => port?.relayed() ?? Promise.resolve(),
  })
  const w = options.config.webhooks
  // One fallback for callers that leave limits out (tests, the bench): the config schema's defaults.
  const limits: IntakeLimits = { ...INTAKE_LIMIT_DEFAULTS }
  for (const key of ['maxConnections', 'bodyTimeoutMs', 'maxBufferedBytes'] as const) if (w[key] !== undefined) limits[key] = w[key]
  const accepted = secretSource({
    envSecrets: options.config.webhookSecrets,
    store: secrets,
    graceHours: options.config.webhooks.rotationGraceHours,
    now,
  })
  // With an intake thread, the journal hands it the account's secrets and backlog (intake-thread.ts).
  port = options.journal?.journal.attach(options.journal.accountId, inbox, options.config.webhooks.maxBacklog, {
    maxBodyBytes: w.maxBodyBytes,
    secrets: accepted,
    backlog: () => inbox.backlog,
  })
  const handler = createIntakeHandler({
    inbox: port ?? inbox,
    secrets: accepted,
    maxBodyBytes: w.maxBodyBytes,
    bodyTimeoutMs: limits.bodyTimeoutMs,
    maxBufferedBytes: limits.maxBufferedBytes,
    ...(options.bodyBudget === undefined ? {} : { budget: options.bodyBudget }),
    logger: options.logger,
    now,
    metrics,
  })
  const p = processor
  return {
    handler,
    inbox,
    processor: p,
    secrets,
    metrics,
    limits,
    start: () => {
      if (options.process !== false) p.start()
    },
    stop: async () => {
      // The journal's deliveries for this account reach its inbox before the inbox closes.
      await port?.close()
      await inbox.close()
      await p.stop()
    },
  }
}
