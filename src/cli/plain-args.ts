// The arguments of a plain invocation of a command that declares `plain` options (commands.ts), read
// without yargs: loading the parser (yargs, cliui and two copies of string-width, which set up
// Intl.Segmenter and Unicode regexes at import) is about a third of `status`'s and `query`'s start.
// Only what has one obvious reading is read here; anything else (--help, an unknown, repeated or
// negated option, a value starting with `-`, `--`) gives undefined and yargs reads it as before.
// test/unit/cli/plain-args.test.ts checks that yargs gives every invocation read here the same arguments.
import type { Args, CommandEntry } from './command.js'

export interface PlainInvocation {
  entry: CommandEntry
  args: Args
}

/** `argv` read as yargs would read it, or undefined when only yargs should read it. */
export function plainArgs(
  argv: readonly string[],
  commands: readonly CommandEntry[],
  globals: readonly string[],
  /** The commands that take `--account` (ACCOUNT_COMMANDS): a string option after the command. */
  perAccount: ReadonlySet<string> = new Set(),
): PlainInvocation | undefined {
  const positionals: string[] = []
  const options = new Map<string, string[]>()
  let entry: CommandEntry | undefined
  for (let i = 0; i < argv.length; i++) {
    const token = argv[i]!
    // yargs reads a `help` positional anywhere as asking for help.
    if (token === '' || token === 'help') return undefined
    if (!token.startsWith('-')) {
      if (entry === undefined) {
        entry = commands.find((c) => c.plain !== undefined && c.command.split(' ')[0] === token)
        if (entry === undefined) return undefined
      } else positionals.push(token)
      continue
    }
    const m = /^--([a-z][a-z-]*[a-z])(?:=(.*))?$/s.exec(token)
    if (m === null) return undefined
    const name = m[1]!
    // Before the command only the global options are known (yargs would read `--json status` as a value).
    if (entry === undefined && !globals.includes(name)) return undefined
    let value = m[2]
    if (name === 'json') {
      // yargs takes a `true` or `false` after a boolean option as its value.
      if (value !== undefined || argv[i + 1] === 'true' || argv[i + 1] === 'false') return undefined
    } else {
      if (value === undefined) {
        value = argv[++i]
        if (value === undefined) return undefined
      }
      if (value === '' || value.startsWith('-')) return undefined
    }
    options.set(name, [...(options.get(name) ?? []), value ?? ''])
  }
  const plain = entry?.plain
  if (entry === undefined || plain === undefined || positionals.length !== plain.positionals.length) return undefined

  const args: Args = { _: [entry.command.split(' ')[0]!], $0: 'fsm-sync' }
  const set = (name: string, value: unknown) => {
    args[name] = value
    const camel = name.replace(/-([a-z])/g, (_, c: string) => c.toUpperCase())
    if (camel !== name) args[camel] = value
  }
  if (plain.json === true) set('json', false)
  for (const [name, values] of options) {
    if (name === 'json') {
      if (plain.json !== true || values.length > 1) return undefined
      set('json', true)
    } else if (plain.arrays?.includes(name) === true) {
      set(name, values)
    } else if (values.length > 1) {
      return undefined
    } else if (globals.includes(name) || (name === 'account' && perAccount.has(String(args._[0])))) {
      set(name, values[0])
    } else {
      const choices = plain.choices?.[name]
      if (choices === undefined || !choices.includes(values[0]!)) return undefined
      set(name, values[0])
    }
  }
  // An array option takes every value up to the next option: `--param 1 2` is two values, so a
  // positional must not follow one (yargs would take it as a value).
  for (const name of plain.arrays ?? []) {
    for (let i = 0; i < argv.length - 1; i++) {
      if (argv[i] === `--${name}` && i + 2 < argv.length && !argv[i + 2]!.startsWith('-')) return undefined
      if (argv[i]!.startsWith(`--${name}=`) && !argv[i + 1]!.startsWith('-')) return undefined
    }
  }
  // Checks a command's builder adds between options (query: --json cannot go with another --format) stay yargs's.
  if (args.json === true && Object.keys(plain.choices ?? {}).some((name) => options.has(name))) return undefined
  plain.positionals.forEach((name, i) => set(name, positionals[i]))
  return { entry, args }
}
