// The shape every command file exports, and the context a command runs with. Commands parse and
// print; the work itself lives in daemon/, sync/, store/ and webhooks/.
import type { Argv } from 'yargs'
import type { AccountConfig, Config, LoadedConfig } from '../config/index.js'
import type { Logger } from '../log/logger.js'

export interface Io {
  stdout: NodeJS.WritableStream & { isTTY?: boolean }
  stderr: NodeJS.WritableStream
  env: Readonly<Record<string, string | undefined>>
}

export interface CommandContext {
  io: Io
  /**
   * Validated configuration; loading it reports bad settings and exits 2 before the command runs.
   * For a command of ACCOUNT_COMMANDS, the chosen account's Config (`account()`); for the others,
   * the top-level one (the process's settings).
   */
  config: () => Config
  /**
   * The account `--account ID` names, or the only one: a usage error (exit 2) naming the valid ids
   * when the file lists several and none is named, or when the id is not one of them.
   */
  account: () => AccountConfig
  /**
   * The configuration with its accounts (the same load as config(); `default` alone without a list);
   * `fresh` reads file and environment again.
   */
  accounts: (options?: { fresh?: boolean }) => LoadedConfig
  logger: () => Logger
}

export type Args = Record<string, unknown> & { _: (string | number)[] }

/** What a command's file exports: its options and what it does. */
export interface Command {
  builder?: (y: Argv) => Argv
  run: (args: Args, ctx: CommandContext) => Promise<number>
}

/** A command as commands.ts lists it: what `--help` shows, and its file, imported only when it runs. */
export interface CommandEntry {
  /** yargs command string, e.g. `sync` or `trigger <integration>`. */
  command: string
  describe: string
  load: () => Promise<Command>
}
