// Every command of the Commands table (docs/commands.md), one file each. Here only what `fsm-sync --help`
// shows of them: a command's file, with its options and the code it runs (DuckDB, pg, the daemon),
// is imported when that command is chosen, so no command pays for another's modules. `plain`: the
// options a plain invocation is read with without loading yargs (plain-args.ts).
import type { CommandEntry } from './command.js'

/**
 * The commands that read or write one account, by their first word: each takes `--account ID`
 * (main.ts adds the option and resolves it; docs/commands.md, Many accounts).
 */
export const ACCOUNT_COMMANDS: ReadonlySet<string> = new Set([
  'sync',
  'reconcile',
  'trigger',
  'status',
  'query',
  'schema',
  'export',
  'replicate',
  'consumers',
  'webhooks',
  'doctor',
])

export const commands: readonly CommandEntry[] = [
  {
    command: 'run',
    describe: 'The daemon: continuous (or scheduled) sweeps, reconciliation and triggers, webhook intake, health and metrics',
    load: async () => (await import('./run.js')).runCommand,
  },
  {
    command: 'sync',
    describe: "One incremental pass over the named streams (the config's streams by default: all of them), then exit",
    load: async () => (await import('./sync.js')).syncCommand,
  },
  {
    command: 'reconcile',
    describe: 'Find records deleted upstream (which lists never show) and mark them deleted',
    load: async () => (await import('./reconcile.js')).reconcileCommand,
  },
  {
    command: 'replicate',
    describe: 'Bring the Postgres destination (FSM_POSTGRES_URL) up to the mirror and exit',
    load: async () => (await import('./replicate.js')).replicateCommand,
  },
  {
    command: 'consumers <action> [name] [seq]',
    describe: 'list | add NAME | ack NAME SEQ | remove NAME: readers of change_log that retention waits for',
    load: async () => (await import('./consumers.js')).consumersCommand,
  },
  {
    command: 'status',
    describe:
      'Per stream: table, rows, last success, last sweep, staleness, cursor, last error; inbox backlog; request budget; schedules off',
    load: async () => (await import('./status.js')).statusCommand,
    plain: { positionals: [], json: true },
  },
  {
    command: 'query <sql>',
    describe: 'Run one read-only SQL statement against the mirror; rows stream out as they are read',
    load: async () => (await import('./query.js')).queryCommand,
    plain: { positionals: ['sql'], json: true, arrays: ['param'], choices: { format: ['table', 'json', 'csv'] } },
  },
  {
    command: 'schema',
    describe: 'Every table of the mirror: columns, SQLite types and kinds, keys, meaning and upstream field; --json for JSON Schemas',
    load: async () => (await import('./schema.js')).schemaCommand,
  },
  {
    command: 'export',
    describe: 'Write a consistent snapshot of the mirror (or the changes after a change_log seq) as Parquet, CSV or JSONL files',
    load: async () => (await import('./export.js')).exportCommand,
  },
  {
    command: 'trigger <integration>',
    describe: "Call an integration's sync trigger and record the result",
    load: async () => (await import('./trigger.js')).triggerCommand,
  },
  {
    command: 'webhooks <action>',
    describe: 'register --url URL | list | deliveries [--status S]',
    load: async () => (await import('./webhooks.js')).webhooksCommand,
  },
  {
    command: 'doctor',
    describe: 'Check configuration, reachability, the key and its scopes, and the mirror',
    load: async () => (await import('./doctor.js')).doctorCommand,
  },
  {
    command: 'accounts',
    describe:
      'Every account of the config file with its state: last sweep, staleness, last error, budget use, webhook intake, destination lag',
    load: async () => (await import('./accounts.js')).accountsCommand,
  },
  {
    command: 'replicas',
    describe:
      'The replicas sharing the accounts (from the coordination tables in FSM_POSTGRES_URL): state, heartbeat, accounts held; accounts waiting for an owner',
    load: async () => (await import('./replicas.js')).replicasCommand,
  },
  {
    command: 'healthcheck',
    describe: "Exit 0 when the configured daemon's /healthz (or /readyz) answers OK, 1 with the reason otherwise (the image's HEALTHCHECK)",
    load: async () => (await import('./healthcheck.js')).healthcheckCommand,
  },
  {
    command: 'emulator',
    describe: 'Start the local emulated account (or --accounts N of them) and print the export lines of its base URL and key',
    load: async () => (await import('./emulator.js')).emulatorCommand,
  },
  {
    command: 'demo',
    describe:
      'Run the daemon against an emulated, changing account (webhooks included), print example queries, keep the mirror live until Ctrl-C',
    load: async () => (await import('./demo.js')).demoCommand,
  },
]
