// `fsm-sync emulator`: the local emulated account (emulator/README.md). The emulator parses its own
// flags (it shares no code with the product), so the parsed options are handed back to it as argv.
import type { Command } from './command.js'

const PASSED = ['port', 'seed', 'clients', 'jobs', 'invoices', 'records', 'rate-limit'] as const

export const emulatorCommand: Command = {
  command: 'emulator',
  describe: 'Start the local emulated account and print its base URL and a key',
  builder: (y) =>
    y
      .option('port', { type: 'number', describe: 'port to listen on (0: a free one)', default: 4010 })
      .option('seed', { type: 'number', describe: 'seed of the generated data', default: 1 })
      .option('clients', { type: 'number', describe: 'clients to generate' })
      .option('jobs', { type: 'number', describe: 'jobs to generate' })
      .option('invoices', { type: 'number', describe: 'invoices to generate' })
      .option('records', { type: 'number', describe: 'records per custom object' })
      .option('allow-http-webhooks', { type: 'boolean', describe: 'allow http://127.0.0.1 webhook receivers' }),
  run: async (args) => {
    const { runEmulatorCli } = await import('../../emulator/cli.js')
    const argv: string[] = []
    for (const name of PASSED) {
      const value = args[name]
      if (typeof value === 'number' || typeof value === 'string') argv.push(`--${name}`, String(value))
    }
    if (args['allow-http-webhooks'] === true) argv.push('--allow-http-webhooks')
    return runEmulatorCli(argv)
  },
}
