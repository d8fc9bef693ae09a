// A plain `status` or `query` is read without yargs (src/cli/plain-args.ts): every invocation it
// reads must get exactly the arguments yargs hands the command's handler, and anything it is not sure
// of is left to yargs. Checked against the real parser (main.ts, parseArgs) with every command's options.
import fc from 'fast-check'
import { describe, expect, test } from 'vitest'
import type { Args } from '../../../src/cli/command.js'
import { ACCOUNT_COMMANDS, commands } from '../../../src/cli/commands.js'
import { GLOBAL_OPTIONS, parseArgs } from '../../../src/cli/main.js'
import { plainArgs } from '../../../src/cli/plain-args.js'

async function yargsArgs(argv: string[]): Promise<{ error: string | undefined; args: Args | undefined }> {
  let args: Args | undefined
  const error = await parseArgs(argv, (_load, a) => {
    args = a
    return Promise.resolve()
  })
  return { error, args }
}

const plain = (argv: string[]) => plainArgs(argv, commands, Object.keys(GLOBAL_OPTIONS), ACCOUNT_COMMANDS)

const COMMANDS = ['status', 'query', 'schema', 'help', 'statu']
const OPTIONS = [
  '--json',
  '--json=true',
  '--no-json',
  '--db',
  '--db=',
  '--db=x.db',
  '--config',
  '--base-url',
  '--rate-limit',
  '--rate-limit=60',
  '--log-level',
  '--param',
  '--param=1',
  '--param=a=b',
  '--format',
  '--format=csv',
  '--format=xml',
  '--account',
  '--account=north',
  '--bogus',
  '-h',
  '--help',
  '--version',
  '--',
  '-x',
]
const VALUES = ['x.db', '', '1', '-1', '007', '0x10', '1e3', 'true', 'select 1', 'select ?', 'a=b', 'table', 'json', 'csv', 'status', ' ']

const WELL_FORMED = ['--db', '--config', '--base-url', '--rate-limit', '--log-level', '--param', '--format', '--account']
const WELL_FORMED_VALUES = ['x.db', '60', 'debug', '1', 'n=2', 'table', 'json', 'csv', 'select ?', 'north']

/** Mostly well-formed invocations (a command, then options with values, a positional), some not. */
const invocation = fc
  .tuple(
    fc.array(fc.constantFrom('--db', '--config', '--json'), { maxLength: 1 }),
    fc.constantFrom(...COMMANDS),
    fc.array(
      fc.oneof(
        { weight: 4, arbitrary: fc.tuple(fc.constantFrom(...WELL_FORMED), fc.constantFrom(...WELL_FORMED_VALUES)) },
        { weight: 1, arbitrary: fc.constantFrom(['--json'], ['select 1']) },
        {
          weight: 1,
          arbitrary: fc.oneof(fc.constantFrom(...OPTIONS), fc.constantFrom(...VALUES), fc.constantFrom(...COMMANDS)).map((t) => [t]),
        },
      ),
      { maxLength: 5 },
    ),
  )
  .map(([before, command, rest]) => [...before.flatMap((o) => [o, 'x.db']), command, ...rest.flat()])

describe('plain invocations read without yargs', () => {
  test.each([
    [['status']],
    [['status', '--json']],
    [['--db', 'x.db', 'status', '--rate-limit', '60']],
    [['query', 'select 1']],
    [['query', 'select ? + :n', '--param', '1', '--param=n=2', '--format', 'csv', '--db=x.db']],
    [['query', '--json', 'select 1', '--log-level', 'debug', '--config', 'c.json', '--base-url', 'http://127.0.0.1:1']],
    [['status', '--account', 'north']],
    [['query', 'select 1', '--account=north', '--json']],
  ])('%j: the arguments yargs gives', async (argv) => {
    const read = plain(argv)
    expect(read).toBeDefined()
    const y = await yargsArgs(argv)
    expect(y.error).toBeUndefined()
    expect(read!.args).toStrictEqual(y.args)
    expect(read!.entry.command.split(' ')[0]).toBe(argv.find((a) => COMMANDS.includes(a)))
  })

  test.each([
    [['status', '--help']],
    [['status', 'extra']],
    [['query']],
    [['query', 'select ?', '--param', '1', '2']],
    [['query', '--param=1', 'select ?']],
    [['query', 'select 1', '--json', '--format', 'csv']],
    [['query', 'select 1', '--format', 'xml']],
    [['--json', 'status']],
    [['status', '--db', '--json']],
    [['status', '--json', '--json']],
    [['status', '--db', 'a', '--db', 'b']],
    [['schema']],
    [['status', '--']],
  ])('%j: left to yargs', (argv) => {
    expect(plain(argv)).toBeUndefined()
  })

  test('any invocation read without yargs: yargs accepts it and gives the same arguments', async () => {
    let read = 0
    await fc.assert(
      fc.asyncProperty(invocation, async (argv) => {
        const p = plain(argv)
        if (p === undefined) return
        read++
        const y = await yargsArgs(argv)
        expect(y.error).toBeUndefined()
        expect(p.args).toStrictEqual(y.args)
      }),
      { numRuns: 1000 },
    )
    // Not vacuous: a good share of the invocations tried were read without yargs.
    expect(read).toBeGreaterThan(40)
  })
})
