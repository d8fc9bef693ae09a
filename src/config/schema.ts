// The one schema for every setting (README.md, Configuration; config/README.md). Environment
// variables and flags arrive as strings, so numbers and lists are coerced here; the config file may
// use JSON types directly.
import { z } from 'zod'
import { HELD_SHARE, INTAKE_LIMIT_DEFAULTS } from './intake-defaults.js'
import { cronProblem } from './cron-check.js'

/**
 * A stream name as written: a name, or `objects:<slug>` for one custom object. Which names exist is
 * the stream registry's to say (connectors/), which this layer does not import: loadConfig checks
 * the names against the choice its caller passes (ConfigSources.streams).
 */
export const StreamName = z.string().regex(/^[a-z_]+(?::[A-Za-z0-9_-]+)?$/, {
  message: 'must be a stream name such as clients, or objects:<slug> for one custom object',
})

// Decimal digits only: z.coerce.number() would also take "0x10" (16), "1e3", " 12 " and "" (0).
// A JSON number from the config file passes as it is.
const INT_MESSAGE = 'must be a whole number in decimal digits, e.g. 60'
/** The default longest gap between two chunks of an upstream body (http.bodyTimeoutMs). */
const DEFAULT_BODY_GAP_MS = 15_000

const int = (min: number, max: number) =>
  z.preprocess(
    (v) => (typeof v === 'string' && /^-?\d+$/.test(v) ? Number(v) : v),
    z
      .number({ error: (issue) => (issue.code === 'invalid_type' ? INT_MESSAGE : undefined) })
      .int({ error: INT_MESSAGE })
      .min(min)
      .max(max),
  )

const commaList = z.preprocess(
  (v) =>
    typeof v === 'string'
      ? v
          .split(',')
          .map((s) => s.trim())
          .filter((s) => s.length > 0)
      : v,
  z.array(z.string().min(1)),
)

const DAEMON_PATHS = ['/healthz', '/readyz', '/metrics']

/** The schedule value that switches a schedule off (config file or FSM_SCHEDULE_*). */
export const SCHEDULE_OFF = 'off'

const Cron = z
  .string()
  .min(1)
  // Trimmed, so the scheduler gets exactly what was checked (croner reads a leading space as an empty field).
  .transform((s) => (s.trim().toLowerCase() === SCHEDULE_OFF ? SCHEDULE_OFF : s.trim()))
  .superRefine((s, ctx) => {
    const problem = s === SCHEDULE_OFF ? undefined : cronProblem(s)
    if (problem !== undefined) ctx.addIssue({ code: 'custom', message: problem })
  })

/** The sweep schedule that sweeps back to back within `sync.budgetShare` (README.md, Continuous sweeping). */
export const SCHEDULE_CONTINUOUS = 'continuous'

/** `schedules.sweep`: "continuous" (the default), a cron expression, or "off". */
const SweepSchedule = z
  .string()
  .min(1)
  .transform((s) => {
    const t = s.trim()
    const lower = t.toLowerCase()
    return lower === SCHEDULE_OFF || lower === SCHEDULE_CONTINUOUS ? lower : t
  })
  .superRefine((s, ctx) => {
    const problem = s === SCHEDULE_OFF || s === SCHEDULE_CONTINUOUS ? undefined : cronProblem(s)
    if (problem !== undefined)
      ctx.addIssue({ code: 'custom', message: `${problem}; or "${SCHEDULE_CONTINUOUS}" (the default) to sweep back to back` })
  })

const SHARE_MESSAGE = 'must be a fraction of FSM_RATE_LIMIT from 0.05 to 1, e.g. 0.85 (85 % of the budget for sweeps)'

/** The retention value that keeps a table's rows forever. */
export const RETENTION_OFF = 'off'

/** A retention horizon in whole days, or "off": keep everything. */
const DAYS_MESSAGE = 'must be a whole number of days from 1 to 36500, or "off" to keep everything'
const Days = z.union([z.literal(RETENTION_OFF), z.number(DAYS_MESSAGE).int(DAYS_MESSAGE).min(1, DAYS_MESSAGE).max(36_500, DAYS_MESSAGE)], {
  error: DAYS_MESSAGE,
})

export const ConfigSchema = z.strictObject({
  baseUrl: z.url({ protocol: /^https?$/, message: 'must be an http(s) URL such as https://api.example.com' }).optional(),
  apiKey: z
    .string()
    .refine((s) => s.startsWith('svc_live_') && s.length > 'svc_live_'.length, {
      // The value itself is never echoed: it is a secret even when it is wrong.
      message: 'must be an API key starting with svc_live_ (the value is not shown)',
    })
    .optional(),
  db: z.string().min(1).default('./data/fsm-mirror.db'),
  /**
   * Mode of the mirror file and its -wal/-shm, as an octal string. The mirror holds no secret, so
   * the group may read it (a warehouse user); the owner must keep read and write, and others get
   * nothing: the mirror holds the account's customer data.
   */
  dbMode: z
    .string()
    .regex(/^0?[0-7]{3}$/, { message: 'must be an octal file mode such as 0640 (owner read/write, group read) or 0600 (owner only)' })
    .transform((s) => Number.parseInt(s, 8))
    .refine((m) => (m & 0o600) === 0o600, {
      message: 'must give the owner read and write (6 in the first digit), e.g. 0640: fsm-sync writes the mirror',
    })
    .refine((m) => (m & 0o007) === 0, {
      message: 'must give others no access (0 in the last digit), e.g. 0640: the mirror holds customer data; share it through the group',
    })
    .refine((m) => (m & 0o111) === 0, { message: 'must not be executable, e.g. 0640' })
    .default(0o640),
  rateLimit: int(1, 100_000).default(60),
  webhookSecrets: commaList.default([]),
  httpHost: z.string().min(1).default('0.0.0.0'),
  httpPort: int(0, 65_535).default(8787),
  logLevel: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
  /** Streams a bare `sync` or the daemon runs; absent, all of them (loadConfig fills them in when it knows them). */
  streams: z.array(StreamName).optional(),
  http: z
    .strictObject({
      connectTimeoutMs: int(100, 600_000).default(10_000),
      headersTimeoutMs: int(100, 600_000).default(30_000),
      /**
       * Longest gap between two chunks of a body; under the deadline, or it could never fire. Unset,
       * it is 15 s or the deadline if that is shorter, so lowering the deadline alone stays valid.
       */
      bodyTimeoutMs: int(100, 600_000).optional(),
      /** Longest whole request (connect, headers and body); by default half the 60 s rate window. */
      requestDeadlineMs: int(100, 600_000).default(30_000),
      maxInFlight: int(1, 64).default(4),
    })
    .superRefine((h, ctx) => {
      if (h.bodyTimeoutMs !== undefined && h.bodyTimeoutMs > h.requestDeadlineMs) {
        ctx.addIssue({
          code: 'custom',
          path: ['bodyTimeoutMs'],
          message: `${h.bodyTimeoutMs} ms is longer than http.requestDeadlineMs (${h.requestDeadlineMs} ms), so it could never end a request: lower http.bodyTimeoutMs or raise http.requestDeadlineMs`,
        })
      }
    })
    .transform((h) => ({ ...h, bodyTimeoutMs: h.bodyTimeoutMs ?? Math.min(DEFAULT_BODY_GAP_MS, h.requestDeadlineMs) }))
    .prefault({}),
  sync: z
    .strictObject({
      /**
       * Seconds subtracted from a stored cursor, against upstream commit lag: a row committed
       * upstream just after a page was read may carry an earlier updatedAt.
       */
      lookbackSeconds: int(0, 86_400).default(5),
      pageSize: int(1, 100).default(100),
      /**
       * Share of the request budget (of the effective FSM_RATE_LIMIT) that continuous sweeping may
       * spend; the rest stays for webhook follow-ups, triggers, reconciliation and CLI commands.
       */
      budgetShare: z
        .preprocess(
          (v) => (typeof v === 'string' && /^\d*\.?\d+$/.test(v.trim()) ? Number(v) : v),
          z.number({ error: SHARE_MESSAGE }).min(0.05, { error: SHARE_MESSAGE }).max(1, { error: SHARE_MESSAGE }),
        )
        .default(0.85),
      /** Longest time a stream may go unswept under continuous sweeping, in seconds. */
      maxSweepIntervalSeconds: int(5, 86_400).default(60),
    })
    .prefault({}),
  reconcile: z
    .strictObject({
      /** Largest share of a table one reconciliation may mark deleted (a guard against outages). */
      maxDeleteShare: z.coerce.number().min(0).max(1).default(0.1),
    })
    .prefault({}),
  webhooks: z
    .strictObject({
      path: z
        .string()
        .startsWith('/')
        // The daemon's own endpoints share the listener: the webhook route would take their place.
        .refine((p) => !DAEMON_PATHS.includes(p), {
          message: `must not be ${DAEMON_PATHS.join(', ')}: the daemon serves those itself; use e.g. /webhooks`,
        })
        .default('/webhooks'),
      maxBodyBytes: int(1024, 16 * 1024 * 1024).default(1024 * 1024),
      maxBacklog: int(1, 10_000_000).default(100_000),
      rotationGraceHours: z.coerce
        .number()
        .min(0)
        .max(24 * 365)
        .default(24),
      /** Bounds against slow and hostile clients (src/webhooks/intake-limits.ts has the reasons). */
      maxConnections: int(16, 1_000_000).default(INTAKE_LIMIT_DEFAULTS.maxConnections),
      bodyTimeoutMs: int(100, 600_000).default(INTAKE_LIMIT_DEFAULTS.bodyTimeoutMs),
      maxBufferedBytes: int(1024 * 1024, 4 * 1024 * 1024 * 1024).default(INTAKE_LIMIT_DEFAULTS.maxBufferedBytes),
    })
    .superRefine((w, ctx) => {
      // A body over 64 KiB may hold only HELD_SHARE of the buffer: below that, a body under the cap
      // would always get 503 (never the 413 that tells the sender why).
      const room = Math.floor(w.maxBufferedBytes * HELD_SHARE)
      if (room < w.maxBodyBytes) {
        ctx.addIssue({
          code: 'custom',
          path: ['maxBufferedBytes'],
          message: `leaves ${room} bytes for large bodies (${HELD_SHARE * 100} % of ${w.maxBufferedBytes}), less than one body of webhooks.maxBodyBytes (${w.maxBodyBytes}): raise webhooks.maxBufferedBytes to at least ${Math.ceil(w.maxBodyBytes / HELD_SHARE)} or lower webhooks.maxBodyBytes`,
        })
      }
    })
    .prefault({}),
  retention: z
    .strictObject({
      /** Days an applied delivery keeps its body in webhook_inbox; its id stays (deliveryIdsDays). */
      deliveriesDays: Days.default(14),
      /** Days the id of an applied delivery is kept against replays, from its receipt; never less than deliveriesDays. */
      deliveryIdsDays: Days.default(30),
      runsDays: Days.default(90),
      calendarChangesDays: Days.default(90),
      /** change_log rows older than this go once every consumer (a destination, `fsm-sync consumers`) has read them. */
      changeLogDays: Days.default(30),
      /** A consumer further behind than this stops holding change_log rows back (a destination is then loaded again). */
      changeLogHoldDays: Days.default(90),
      /** Rows per delete transaction; the event loop is yielded between them (acks wait behind each). */
      batchRows: int(10, 100_000).default(500),
      /** Free pages returned to the file system per retention pass at most (4 KiB each). */
      vacuumPages: int(0, 10_000_000).default(65_536),
    })
    .prefault({}),
  destination: z
    .strictObject({
      postgres: z
        .strictObject({
          /**
           * A libpq-style connection URL (postgres://user:password@host:5432/db). A secret: never logged,
           * never echoed in a message, even when it is wrong. Unset: no destination.
           */
          url: z
            .string()
            .refine((s) => postgresUrlProblem(s) === undefined, {
              message: 'must be a URL such as postgres://user:password@host:5432/database (the value is not shown)',
            })
            .optional(),
          /** The schema the replica's tables and views are created in. */
          schema: z
            .string()
            .regex(/^[A-Za-z_][A-Za-z0-9_]{0,62}$/, { message: 'must be a plain identifier of up to 63 letters, digits or _, e.g. fsm' })
            .default('fsm'),
        })
        .prefault({}),
    })
    .prefault({}),
  schedules: z
    .strictObject({
      sweep: SweepSchedule.default(SCHEDULE_CONTINUOUS),
      reference: Cron.default('7 * * * *'),
      reconcile: Cron.default('17 3 * * *'),
      calendarA: Cron.default('23 * * * *'),
      calendarB: Cron.default('29 * * * *'),
      accounting: Cron.default('41 4 * * *'),
      deliveries: Cron.default('*/10 * * * *'),
      retention: Cron.default('53 * * * *'),
    })
    .prefault({}),
})

/** Why a Postgres URL cannot be used, without echoing it; undefined when it can. */
export function postgresUrlProblem(text: string): string | undefined {
  let url: URL
  try {
    url = new URL(text)
  } catch {
    return 'is not a URL'
  }
  if (url.protocol !== 'postgres:' && url.protocol !== 'postgresql:') return 'must start with postgres:// or postgresql://'
  if (url.hostname === '' && !url.searchParams.has('host')) return 'names no host'
  return undefined
}

/**
 * The values of a Postgres URL that must never reach a log line: the URL itself and its password
 * (as written and decoded), for the logger's last-line scrub (src/log/logger.ts).
 */
export function postgresSecrets(url: string | undefined): string[] {
  if (url === undefined) return []
  const out = [url]
  try {
    const password = new URL(url).password
    if (password !== '') out.push(password, decodeURIComponent(password))
  } catch {
    // Not a URL: the whole text is the secret.
  }
  return [...new Set(out)]
}

export type Config = z.infer<typeof ConfigSchema>
export type ConfigInput = z.input<typeof ConfigSchema>
export type ScheduleName = keyof Config['schedules']

/** Names of the schedules set to "off", in config order. */
export function schedulesOff(schedules: Config['schedules']): ScheduleName[] {
  return (Object.keys(schedules) as ScheduleName[]).filter((k) => schedules[k] === SCHEDULE_OFF)
}
