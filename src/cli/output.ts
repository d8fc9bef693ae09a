// What a command prints, shared by every command that has a result: a text rendering for people, or
// with `--json` one JSON document for scripts. Either way the result is the only thing on stdout;
// logs and messages go to stderr, and the exit code is the same with or without `--json`. A
// command that fails before it has a result throws a CommandError: main.ts writes its message to
// stderr and, with `--json`, an `{"error": ...}` document to stdout, so stdout always parses.
import type { Argv } from 'yargs'
import type { Io } from './command.js'

export function jsonOption<T>(y: Argv<T>): Argv<T & { json: boolean }> {
  return y.option('json', {
    type: 'boolean',
    default: false,
    describe: 'print the result as one JSON document on stdout (logs and messages stay on stderr; same exit code)',
  })
}

export const wantsJson = (args: Readonly<Record<string, unknown>>): boolean => args.json === true

/** Writes `result` as JSON with --json, else the text `render` makes of it. */
export function printResult<T>(args: Readonly<Record<string, unknown>>, io: Io, result: T, render: (result: T) => string): void {
  io.stdout.write(wantsJson(args) ? jsonDocument(result) : render(result))
}

export function jsonDocument(value: unknown): string {
  return JSON.stringify(value, null, 2) + '\n'
}

/** A command that cannot produce its result: `message` says what failed and what to do. */
export class CommandError extends Error {
  constructor(
    message: string,
    readonly exitCode: number = 1,
  ) {
    super(message)
    this.name = 'CommandError'
  }
}

/**
 * A command that failed after part of its result was on stdout, the result then closed into one valid
 * document (`query`'s JSON array): main adds no error document after it.
 */
export class PartialResultError extends CommandError {}

/** The document `--json` puts on stdout when a command fails without a result. */
export function errorDocument(message: string, exitCode: number, issues?: readonly { key: string; message: string }[]): string {
  return jsonDocument({ error: { message, exitCode, ...(issues === undefined ? {} : { issues }) } })
}
