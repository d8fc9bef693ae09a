// `fsm-sync emulator`: the local emulated account (emulator/README.md). The emulator parses its own
// flags (it shares no code with the product), so the parsed options are handed back to it as argv.
// The CLI's global options (--config, --db, ...) configure fsm-sync, not the emulator: its help hides
// them and passing one is a usage error; its own --rate-limit replaces the global one.
import type { Command } from './command.js'

const PASSED = ['port', 'seed', 'accounts', 'rows', 'key', 'clients', 'jobs', 'invoices', 'records', 'rate-limit'] as const
/** Global options of main.ts that mean nothing to the emulator. */
const NOT_FOR_THE_EMULATOR = ['config', 'base-url', 'db', 'log-level'] as const

export const emulatorCommand: Command = {
  builder: (y) =>
    y
      .hide('version')
      .hide('config')
      .hide('base-url')
      .hide('db')
      .hide('log-level')
      .option('port', { type: 'number', describe: 'port to listen on (0: a free one)', default: 4010 })
      .option('seed', {
        type: 'number',
        describe: 'seed of the generated data (and of the printed key: the same seed, the same key)',
        default: 1,
      })
      .option('accounts', {
        type: 'number',
        describe: 'independent accounts on the one port, acct-001 and on, each with its own key and data (seeds --seed, --seed + 1, ...)',
      })
      .option('rows', { type: 'number', describe: 'about this many records per account (the counts below win)' })
      .option('key', { type: 'string', describe: "the (first) account's key instead of the seed's: svc_live_ and letters, digits, _ or -" })
      .option('clients', { type: 'number', describe: 'clients to generate' })
      .option('jobs', { type: 'number', describe: 'jobs to generate' })
      .option('invoices', { type: 'number', describe: 'invoices to generate' })
      .option('records', { type: 'number', describe: 'records per custom object' })
      .option('rate-limit', { type: 'string', describe: 'requests per key per sliding minute, or off (default 60)' })
      .option('allow-http-webhooks', {
        type: 'boolean',
        describe: 'also deliver webhooks to http://127.0.0.1 and http://localhost receivers (the API itself takes only https://)',
      })
      .option('json', {
        type: 'boolean',
        describe: 'print one JSON document (url, and each account with its id, seed and key) instead of export lines',
      })
      .check((argv) => {
        const given = NOT_FOR_THE_EMULATOR.filter((name) => argv[name] !== undefined)
        if (given.length > 0)
          throw new Error(
            `${given.map((n) => `--${n}`).join(', ')}: not an emulator option (the emulator keeps its data in memory); see \`fsm-sync emulator --help\``,
          )
        return true
      }),
  run: async (args) => {
    const { runEmulatorCli } = await import('../../emulator/cli.js')
    const argv: string[] = []
    for (const name of PASSED) {
      const value = args[name]
      if (typeof value === 'number' || typeof value === 'string') argv.push(`--${name}`, String(value))
    }
    if (args['allow-http-webhooks'] === true) argv.push('--allow-http-webhooks')
    if (args.json === true) argv.push('--json')
    return runEmulatorCli(argv)
  },
}
