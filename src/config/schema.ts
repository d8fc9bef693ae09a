// The one schema for every setting (docs/configuration.md; config/README.md). Environment
// variables and flags arrive as strings, so numbers and lists are coerced here; the config file may
// use JSON types directly.
import { z } from 'zod'
import { HELD_SHARE, INTAKE_LIMIT_DEFAULTS } from './intake-defaults.js'
import { cronProblem } from './cron-check.js'
import { DestinationSchema } from './postgres-settings.js'
import { doc, int } from './schema-parts.js'
import { ShardingSchema } from './sharding-settings.js'
export { postgresSecrets, postgresUrlProblem, withPostgresPassword } from './postgres-settings.js'

/**
 * A stream name as written: a name, or `objects:<slug>` for one custom object. Which names exist is
 * the stream registry's to say (connectors/), which this layer does not import: loadConfig checks
 * the names against the choice its caller passes (ConfigSources.streams).
 */
export const StreamName = z.string().regex(/^[a-z_]+(?::[A-Za-z0-9_-]+)?$/, {
  message: 'must be a stream name such as clients, or objects:<slug> for one custom object',
})

/** The default longest gap between two chunks of an upstream body (http.bodyTimeoutMs). */
const DEFAULT_BODY_GAP_MS = 15_000

/** The smallest `sync.pageSize`: see PAGE_SIZE_MESSAGE. */
const MIN_PAGE_SIZE = 5
// Stepping through rows that share an updatedAt asks for pages overlapping the last row read
// (src/api/keyset/next-step.ts, nextStep): a page of one row brings nothing new, a page of two
// makes one row of progress a request. Five leaves room for both.
const PAGE_SIZE_MESSAGE = `must be a whole number from ${MIN_PAGE_SIZE} to 100: a sweep steps through rows sharing an updatedAt with pages that overlap the last row read, so smaller pages stall it`

/** A list: a JSON array in the config file, comma-separated in a variable. */
const commaSeparated = <T extends z.ZodType>(item: T) =>
  z.preprocess(
    (v) =>
      typeof v === 'string'
        ? v
            .split(',')
            .map((s) => s.trim())
            .filter((s) => s.length > 0)
        : v,
    z.array(item),
  )

const commaList = commaSeparated(z.string().min(1))

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
  .meta({ allowed: 'cron, 5 fields or 6 with seconds first (not `@daily`), or `"off"`' })

/** The sweep schedule that sweeps back to back within `sync.budgetShare` (docs/sweeping.md, Continuous sweeping). */
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
  .meta({ allowed: '`"continuous"`, cron (5 fields or 6 with seconds first), or `"off"`' })

const SHARE_MESSAGE = 'must be a fraction of FSM_RATE_LIMIT from 0.05 to 1, e.g. 0.85 (85 % of the budget for sweeps)'

/** The retention value that keeps a table's rows forever. */
export const RETENTION_OFF = 'off'

/** A retention horizon in whole days, or "off": keep everything. */
const DAYS_MESSAGE = 'must be a whole number of days from 1 to 36500, or "off" to keep everything'
const Days = z.union([z.literal(RETENTION_OFF), z.number(DAYS_MESSAGE).int(DAYS_MESSAGE).min(1, DAYS_MESSAGE).max(36_500, DAYS_MESSAGE)], {
  error: DAYS_MESSAGE,
})

export type { KeyDoc } from './schema-parts.js'

export const ConfigSchema = z.strictObject({
  baseUrl: z
    .url({ protocol: /^https?$/, message: 'must be an http(s) URL such as https://api.example.com' })
    .optional()
    .meta(
      doc("The API's base address; a path prefix in it is kept. Required by every command that calls the API.", { env: 'FSM_BASE_URL' }),
    ),
  apiKey: z
    .string()
    .refine((s) => s.startsWith('svc_live_') && s.length > 'svc_live_'.length, {
      // The value itself is never echoed: it is a secret even when it is wrong.
      message: 'must be an API key starting with svc_live_ (the value is not shown)',
    })
    .optional()
    .meta(
      doc(
        "The account's API key (`svc_live_...`). A secret: keep it in the environment or a secret store rather than this file. No command prints it, no log line holds it (its value is scrubbed from every line), and a bad one is named, never echoed.",
        { env: 'FSM_API_KEY', allowed: 'text starting with `svc_live_`' },
      ),
    ),
  db: z
    .string()
    .min(1)
    .default('./data/fsm-mirror.db')
    .meta(
      doc(
        'The SQLite mirror file; its folder is created when missing. Webhook signing secrets are kept beside it in `<name>.secrets.json` (mode 0600), never in the mirror.',
        { env: 'FSM_DB' },
      ),
    ),
  dataDir: z
    .string()
    .min(1)
    .default('./data')
    .meta(
      doc(
        "The folder of the mirrors of the `accounts` list: an account's mirror is `<dataDir>/<id>/mirror.db` unless it sets `db` (docs/configuration.md, Many accounts). Without `accounts`, `db` alone names the mirror.",
        { env: 'FSM_DATA_DIR' },
      ),
    ),
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
    .default(0o640)
    .meta(
      doc(
        'Octal file mode of the mirror and its `-wal`/`-shm`, set at every start. The mirror holds no secret, so by default its group may read it (a warehouse user in the file\'s group); it holds the account\'s customer data, so others get nothing (last digit `0`). The owner must keep read and write (first digit `6`). `"0600"` for owner only.',
        { env: 'FSM_DB_MODE', shownDefault: '`"0640"`', allowed: 'octal mode, as text' },
      ),
    ),
  rateLimit: int(1, 100_000)
    .default(60)
    .meta(
      doc("The API key's request budget per sliding 60-second window, shared by every process on the mirror.", {
        env: 'FSM_RATE_LIMIT',
        unit: 'requests',
      }),
    ),
  webhookSecrets: commaList
    .default([])
    .meta(
      doc(
        'Webhook signing secrets, comma-separated in the environment; the first is current, the rest are still accepted (rotation). Secrets: keep them in the environment; `fsm-sync webhooks register` keeps its own in the secrets file instead. Never printed or logged.',
        { env: 'FSM_WEBHOOK_SECRETS' },
      ),
    ),
  httpHost: z
    .string()
    .min(1)
    .default('0.0.0.0')
    .meta(doc('Address the daemon listens on for webhooks, `/healthz`, `/readyz` and `/metrics`.', { env: 'FSM_HTTP_HOST' })),
  httpPort: int(0, 65_535)
    .default(8787)
    .meta(doc('Port of that listener; `0` takes a free one.', { env: 'FSM_HTTP_PORT' })),
  logLevel: z
    .enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'])
    .default('info')
    .meta(
      doc(
        "pino level. Logs are JSON lines on stderr (stdout is for a command's result); an error's stack trace is logged at `debug` or `trace` only.",
        { env: 'FSM_LOG_LEVEL' },
      ),
    ),
  streams: commaSeparated(StreamName)
    .optional()
    .meta(
      doc(
        "Streams a bare `sync` and the daemon run, comma-separated in the environment (`sync --stream` overrides it for one run, `run --stream` for the daemon). `objects` is every custom object; `objects:<slug>` is one of them (custom-object discovery still runs, so `custom_object_types` lists them all, but only the named object's records are read). Webhook deliveries of other streams are acknowledged and recorded as skipped, not applied, and the failed-delivery check sweeps only these.",
        { env: 'FSM_STREAMS', shownDefault: 'every stream' },
      ),
    ),
  http: z
    .strictObject({
      connectTimeoutMs: int(100, 600_000)
        .default(10_000)
        .meta(doc('Time to open a connection to the API; past it the attempt fails and a GET is retried.', { unit: 'ms' })),
      headersTimeoutMs: int(100, 600_000)
        .default(30_000)
        .meta(doc("Time from sending a request to the answer's headers.", { unit: 'ms' })),
      // Unset, it is 15 s or the deadline if that is shorter, so lowering the deadline alone stays valid.
      bodyTimeoutMs: int(100, 600_000)
        .optional()
        .meta(
          doc(
            "Longest gap between two chunks of an answer's body; the connection is closed past it. At most `http.requestDeadlineMs` (a longer gap could never fire before the deadline): a larger value is refused at start.",
            { unit: 'ms', shownDefault: '`15000`, or `http.requestDeadlineMs` when that is shorter' },
          ),
        ),
      requestDeadlineMs: int(100, 600_000)
        .default(30_000)
        .meta(
          doc(
            'Longest one request may take in all: connect, headers and the whole body (half the 60 s rate window by default), since `bodyTimeoutMs` alone would never end a body trickled slowly. Past it the request is aborted and its connection closed; a GET is retried like a network error, a POST is not (it may have been applied).',
            { unit: 'ms' },
          ),
        ),
      maxInFlight: int(1, 64)
        .default(4)
        .meta(
          doc('Requests to the API in flight at once (the request budget still bounds how many start per minute).', { unit: 'requests' }),
        ),
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
      lookbackSeconds: int(0, 86_400)
        .default(5)
        .meta(
          doc(
            'Upstream commit lag allowed for: rows read within this many seconds of their `updatedAt` are read once more by the next sweep (a row committed upstream just after a page was read may carry an earlier `updatedAt`).',
            { unit: 's' },
          ),
        ),
      pageSize: int(MIN_PAGE_SIZE, 100, PAGE_SIZE_MESSAGE)
        .default(100)
        .meta(
          doc(
            `Rows per list request (the API's maximum is 100; at least ${MIN_PAGE_SIZE}: a sweep steps through rows sharing an \`updatedAt\` with overlapping pages).`,
            {
              unit: 'rows',
            },
          ),
        ),
      budgetShare: z
        .preprocess(
          (v) => (typeof v === 'string' && /^\d*\.?\d+$/.test(v.trim()) ? Number(v) : v),
          z.number({ error: SHARE_MESSAGE }).min(0.05, { error: SHARE_MESSAGE }).max(1, { error: SHARE_MESSAGE }),
        )
        .default(0.85)
        .meta(
          doc(
            'Share of the request budget (of the effective `rateLimit`) that continuous sweeping may start in any sliding minute: 51 of 60 by default. The rest is left for webhook follow-ups, triggers, reconciliation, reference data and CLI commands run beside the daemon. It follows the adaptive budget: when another client spends the key, the share shrinks with it. Only for `schedules.sweep` `"continuous"`.',
            { unit: 'fraction' },
          ),
        ),
      maxSweepIntervalSeconds: int(5, 86_400)
        .default(60)
        .meta(
          doc(
            'Longest time a stream waits between two continuous sweeps while the budget allows a round of every stream within it; busy streams are swept more often, and a stream whose sweeps find nothing rests longer each time, up to this bound: an idle account costs about one request per stream per bound (docs/sweeping.md, Continuous sweeping).',
            { unit: 's' },
          ),
        ),
    })
    .prefault({}),
  reconcile: z
    .strictObject({
      maxDeleteShare: z.coerce
        .number()
        .min(0)
        .max(1)
        .default(0.1)
        .meta(
          doc(
            'Largest share of a table one reconciliation may mark deleted; past it nothing is marked and the run is recorded as `guarded` (an outage must not look like a mass deletion).',
            { unit: 'fraction' },
          ),
        ),
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
        .default('/webhooks')
        .meta(
          doc("Path of the daemon's webhook intake; not `/healthz`, `/readyz` or `/metrics`, which the daemon serves itself.", {
            allowed: 'a path starting with `/`',
          }),
        ),
      maxBodyBytes: int(1024, 16 * 1024 * 1024)
        .default(1024 * 1024)
        .meta(doc('Largest delivery body taken; 413 past it, with or without `Content-Length`.', { unit: 'bytes' })),
      maxBacklog: int(1, 10_000_000)
        .default(100_000)
        .meta(
          doc(
            'Deliveries stored but not applied yet; past it new ones get 503. Past half of it the processor stops yielding to the intake, so acks slow down first.',
            { unit: 'deliveries' },
          ),
        ),
      rotationGraceHours: z.coerce
        .number()
        .min(0)
        .max(24 * 365)
        .default(24)
        .meta(
          doc(
            'After `fsm-sync webhooks register` rotates the secret, how long the previous one stays accepted, so deliveries already signed with it still verify.',
            { unit: 'hours' },
          ),
        ),
      // Bounds against slow and hostile clients (src/webhooks/intake-limits.ts has the reasons).
      maxConnections: int(16, 1_000_000)
        .default(INTAKE_LIMIT_DEFAULTS.maxConnections)
        .meta(
          doc(
            "Connections the daemon's listener keeps open at once (webhooks, `/healthz`, `/readyz`, `/metrics` alike); past it a new connection is closed on arrival (`fsm_webhook_intake_connections_dropped_total`). Keep it above the connections your sender and load balancer open. The probes share this cap (a connection cannot be told apart before its request line is read): a flood that fills it also fails `/healthz` and the image's `HEALTHCHECK` until it ends, which marks the container unhealthy but loses nothing acknowledged.",
            { unit: 'connections' },
          ),
        ),
      bodyTimeoutMs: int(100, 600_000)
        .default(INTAKE_LIMIT_DEFAULTS.bodyTimeoutMs)
        .meta(
          doc(
            'Time a request body has to arrive once its headers have: 408 and the connection closed past it (`fsm_webhook_intake_body_timeout_total`). A delivery of a few KB takes milliseconds. Headers get 10 s, a whole request this plus 5 s, idle keep-alive connections 65 s (longer than a 60 s load-balancer idle timeout); those are not configurable.',
            { unit: 'ms' },
          ),
        ),
      maxBufferedBytes: int(1024 * 1024, 4 * 1024 * 1024 * 1024)
        .default(INTAKE_LIMIT_DEFAULTS.maxBufferedBytes)
        .meta(
          doc(
            'Request body bytes held in memory at once, across all connections, counted as they arrive (a `Content-Length` alone reserves nothing): the request whose next bytes would pass it is answered 503 and the rest of its body is not read (`fsm_webhook_intake_buffer_full_total`). Bodies still incomplete, and bodies over 64 KiB, may fill only three quarters of it; the read that completes a body of up to 64 KiB may use the rest, so the few-KB deliveries of the real sender still fit while others trickle. Three quarters of it must hold one body of `webhooks.maxBodyBytes` (else a body under the cap could only ever get 503): refused at start otherwise.',
            { unit: 'bytes' },
          ),
        ),
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
      deliveriesDays: Days.default(14).meta(
        doc(
          'Days after receipt an applied delivery keeps its body in `webhook_inbox`; then `raw` becomes `\'\'` (`raw_bytes` NULL, `body_dropped_at` set) and a compact row stays. Deliveries not applied yet or kept with an error are never touched. `"off"`: keep every body (and so every row).',
          { unit: 'days' },
        ),
      ),
      deliveryIdsDays: Days.default(30).meta(
        doc(
          'Days after receipt the compact row (the delivery id) is deleted; until then a replay of that delivery is a duplicate. Never less than `deliveriesDays`. `"off"`: keep the ids for good.',
          { unit: 'days' },
        ),
      ),
      runsDays: Days.default(90).meta(
        doc(
          'Days after it ended a `sync_runs` row is deleted (the last run of each stream stays). A quiet sweep (successful, no row changed) goes after one day already: continuous sweeping writes about one a second. `"off"`: keep all but the quiet sweeps, which go after a day regardless.',
          { unit: 'days' },
        ),
      ),
      calendarChangesDays: Days.default(90).meta(
        doc('Days after it was fetched a `calendar_changes` row is deleted. `"off"`: keep all.', { unit: 'days' }),
      ),
      changeLogDays: Days.default(30).meta(
        doc(
          'Days after it was written a `change_log` row may be deleted, once every registered consumer (the Postgres destination, `fsm-sync consumers`) has read it. `"off"`: keep all.',
          { unit: 'days' },
        ),
      ),
      changeLogHoldDays: Days.default(90).meta(
        doc(
          'A consumer further behind than this many days stops holding `change_log` rows back (a destination is then loaded again from a snapshot).',
          { unit: 'days' },
        ),
      ),
      batchRows: int(10, 100_000)
        .default(500)
        .meta(
          doc('Rows per delete transaction (each holds the event loop a few milliseconds); webhook acks run between two.', {
            unit: 'rows',
          }),
        ),
      vacuumPages: int(0, 10_000_000)
        .default(65_536)
        .meta(
          doc(
            'Free pages (4 KiB each) one retention pass gives back to the file system at most (256 MiB); `0`: none, the file keeps its size and reuses them.',
            {
              unit: 'pages',
            },
          ),
        ),
    })
    .prefault({}),
  metrics: z
    .strictObject({
      perAccount: z
        .enum(['summary', 'full'])
        .optional()
        .meta(
          doc(
            "The series each account has on the daemon's /metrics (docs/metrics.md, Series per account): `summary`, a few per account (state, staleness, runs by outcome, budget, webhook intake and backlog, destination lag), the per-stream and per-route families summed over the accounts without `account`; `full`, every family per account (some 270 series each).",
            { shownDefault: '`full` without an `accounts` list, `summary` with one' },
          ),
        ),
    })
    .prefault({}),
  destination: DestinationSchema,
  sharding: ShardingSchema,
  schedules: z
    .strictObject({
      sweep: SweepSchedule.default(SCHEDULE_CONTINUOUS).meta(
        doc(
          '`"continuous"`: sweep the record streams and custom objects back to back within `sync.budgetShare` (docs/sweeping.md, Continuous sweeping); a cron expression (e.g. `"*/5 * * * *"`) to sweep them all at start and at each tick instead; `"off"` to never sweep on its own.',
          { env: 'FSM_SCHEDULE_SWEEP' },
        ),
      ),
      reference: Cron.default('7 * * * *').meta(
        doc(
          'When reference data, webhook endpoints and API keys are read. With several accounts in one process, each account runs this and every other scheduled job at its own offset after each tick, the same every time (from a hash of its id, within the time to the next tick and at most an hour), so that the accounts do not all run it in the same minute (docs/accounts.md).',
          { env: 'FSM_SCHEDULE_REFERENCE' },
        ),
      ),
      reconcile: Cron.default('17 3 * * *').meta(
        doc('When deletions are reconciled (docs/sweeping.md, How the sync stays exact).', { env: 'FSM_SCHEDULE_RECONCILE' }),
      ),
      calendarA: Cron.default('23 * * * *').meta(
        doc('When calendar-a is triggered and its status and change feed read.', { env: 'FSM_SCHEDULE_CALENDAR_A' }),
      ),
      calendarB: Cron.default('29 * * * *').meta(doc('When calendar-b is triggered.', { env: 'FSM_SCHEDULE_CALENDAR_B' })),
      accounting: Cron.default('41 4 * * *').meta(doc('When the accounting integration is triggered.', { env: 'FSM_SCHEDULE_ACCOUNTING' })),
      deliveries: Cron.default('*/10 * * * *').meta(
        doc('When failed webhook deliveries are read, and the streams they concern swept.', { env: 'FSM_SCHEDULE_DELIVERIES' }),
      ),
      retention: Cron.default('53 * * * *').meta(
        doc('When the retention pass runs (docs/webhooks.md, Retention).', { env: 'FSM_SCHEDULE_RETENTION' }),
      ),
    })
    .prefault({}),
})

export type Config = z.infer<typeof ConfigSchema>
export type ConfigInput = z.input<typeof ConfigSchema>
export type ScheduleName = keyof Config['schedules']

/** Names of the schedules set to "off", in config order. */
export function schedulesOff(schedules: Config['schedules']): ScheduleName[] {
  return (Object.keys(schedules) as ScheduleName[]).filter((k) => schedules[k] === SCHEDULE_OFF)
}
