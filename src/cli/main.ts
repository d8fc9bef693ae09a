// The CLI entry: global options, one command per file, strict parsing. Exit codes: 0 success,
// 1 the command failed, 2 usage or configuration error (docs/guarantees.md, Clear errors). Results
// go to stdout, everything else (logs, errors, progress) to stderr; see output.ts for --json.
// Only what every command needs is imported here; a command's own modules, and the configuration
// and logger modules, are imported once a command is chosen (commands.ts): `--version` and `--help`
// load none of them (test/integration/cli/cold-start.test.ts).
import type { LoadedConfig } from '../config/index.js'
import { ConfigError } from '../config/config-error.js'
import type { Logger } from '../log/logger.js'
import type { Args, Command, CommandContext, Io } from './command.js'
import { ACCOUNT_COMMANDS, commands } from './commands.js'
import { plainArgs } from './plain-args.js'
import { packageInfo } from '../config/package-info.js'
import { CommandError, errorDocument, PartialResultError } from './output.js'

export const EXIT_USAGE = 2

/** The options every command takes, all strings: name and what `--help` says of it. */
export const GLOBAL_OPTIONS = {
  config: 'JSON config file (or FSM_CONFIG)',
  'base-url': 'API base address (or FSM_BASE_URL)',
  db: 'SQLite mirror file (or FSM_DB)',
  'rate-limit': 'requests per minute (or FSM_RATE_LIMIT)',
  'log-level': 'pino level (or FSM_LOG_LEVEL)',
} as const

export async function main(argv: readonly string[], io: Io = processIo()): Promise<number> {
  // `--version` alone needs no parser: the version is all it prints.
  if (argv.length === 1 && argv[0] === '--version') {
    io.stdout.write(`${packageInfo().version}\n`)
    return 0
  }
  // A plain `status` or `query` is read without yargs (plain-args.ts).
  const plain = plainArgs(argv, commands, Object.keys(GLOBAL_OPTIONS), ACCOUNT_COMMANDS)
  if (plain !== undefined) return runCommand((await plain.entry.load()).run, plain.args, io)

  let exitCode = 0
  const usageError = await parseArgs(argv, async (load, args) => {
    exitCode = await runCommand((await load()).run, args, io)
  })
  if (usageError !== undefined) {
    io.stderr.write(`fsm-sync: ${usageError}\nRun \`fsm-sync --help\` for usage.\n`)
    if (argv.includes('--json')) io.stdout.write(errorDocument(usageError, EXIT_USAGE))
    return EXIT_USAGE
  }
  return exitCode
}

/**
 * Reads `argv` with yargs and hands the chosen command (its file, loaded once) and its arguments to
 * `run`, inside yargs's handler. Returns the usage error, if any: then no command ran.
 */
export async function parseArgs(
  argv: readonly string[],
  run: (load: () => Promise<Command>, args: Args) => Promise<void>,
): Promise<string | undefined> {
  let usageError: string | undefined
  const { default: yargs } = await import('yargs')
  const parser = yargs([...argv])
    .scriptName('fsm-sync')
    .usage('$0 <command> [options]\n\nKeeps a local SQLite mirror of a field-service account.')
  for (const [name, describe] of Object.entries(GLOBAL_OPTIONS)) parser.option(name, { type: 'string', describe, global: true })
  parser
    .strict()
    .demandCommand(1, 'Name a command; `fsm-sync --help` lists them.')
    .recommendCommands()
    .version(packageInfo().version)
    .help()
    .alias('h', 'help')
    // yargs renders the help once more after a command's handler starts, to keep it for later; only
    // help that is shown is worth wrapping (about 15 ms of CPU otherwise, on every command).
    .wrap(argv.some((a) => a === '--help' || a === '-h' || a === 'help') ? Math.min(110, process.stdout.columns || 100) : null)
    .exitProcess(false)
    .fail((msg, err) => {
      // Throwing stops yargs before any handler runs; the message is reported by main (exit 2).
      usageError = msg || err?.message || 'invalid usage'
      throw new Error(usageError)
    })

  for (const entry of commands) {
    let loaded: Promise<Command> | undefined
    const load = () => (loaded ??= entry.load())
    const perAccount = ACCOUNT_COMMANDS.has(entry.command.split(' ')[0] ?? '')
    parser.command({
      command: entry.command,
      describe: entry.describe,
      // Runs only for the command chosen (its options, its --help): the one file imported.
      builder: async (y) => {
        const cmd = await load()
        const built = cmd.builder ? cmd.builder(y) : y
        return perAccount ? built.option('account', { type: 'string', describe: ACCOUNT_OPTION }) : built
      },
      handler: (args) => run(load, args),
    })
  }

  try {
    await parser.parseAsync()
  } catch (err) {
    usageError ??= (err as Error).message
  }
  return usageError
}

const ACCOUNT_OPTION = 'the id of the account to work on (required when the config file lists several)'

async function runCommand(run: Command['run'], args: Args, io: Io): Promise<number> {
  const [{ loadAccounts, postgresSecrets }, { createLogger, SecretValues }, { STREAM_CHOICE }, { chooseAccount }] = await Promise.all([
    import('../config/index.js'),
    import('../log/logger.js'),
    import('../../connectors/selection.js'),
    import('./account-choice.js'),
  ])
  const perAccount = ACCOUNT_COMMANDS.has(String(args._[0]))
  let loaded: LoadedConfig | undefined
  let logger: Logger | undefined
  // Every account's key and secrets, also those a reload reads later (`run`: a new account, a
  // rotated key): a line about one must not show another's either.
  const secrets = new SecretValues()
  const load = () => {
    const l = loadAccounts({
      flags: args,
      env: io.env,
      file: args.config as string | undefined,
      streams: STREAM_CHOICE,
      warn: (message) => io.stderr.write(`fsm-sync: warning: ${message}\n`),
    })
    const all = [l.config, ...l.accounts.map((a) => a.config)]
    secrets.add(
      all.flatMap((c) => [
        ...(c.apiKey ? [c.apiKey] : []),
        ...c.webhookSecrets,
        ...postgresSecrets(c.destination.postgres.url),
        ...(c.sharding.secretsKey ? [c.sharding.secretsKey] : []),
      ]),
    )
    return l
  }
  const ctx: CommandContext = {
    io,
    accounts: (options) => (options?.fresh === true ? load() : (loaded ??= load())),
    account: () => chooseAccount(ctx.accounts(), args.account),
    config: () => (perAccount ? ctx.account().config : ctx.accounts().config),
    logger: () => {
      if (logger !== undefined) return logger
      const { config: top, listed } = ctx.accounts()
      const base = createLogger({ level: top.logLevel, secrets })
      const named = typeof args.account === 'string' && listed ? args.account : undefined
      return (logger = named === undefined ? base : base.child({ account: named }))
    },
  }
  try {
    return await run(args, ctx)
  } catch (err) {
    const json = args.json === true
    if (err instanceof ConfigError) {
      io.stderr.write(`fsm-sync: invalid configuration:\n${err.issues.map((i) => `  ${i.key}: ${i.message}\n`).join('')}`)
      if (json) io.stdout.write(errorDocument('invalid configuration', EXIT_USAGE, err.issues))
      return EXIT_USAGE
    }
    const message = (err as Error).message
    const code = err instanceof CommandError ? err.exitCode : 1
    io.stderr.write(`fsm-sync: ${message}\n`)
    // A partial result already closed into one document (query --json) gets no second one.
    if (json && !(err instanceof PartialResultError)) io.stdout.write(errorDocument(message, code))
    return code
  } finally {
    logger?.flush()
  }
}

function processIo(): Io {
  return { stdout: process.stdout, stderr: process.stderr, env: process.env }
}
