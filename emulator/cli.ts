// `fsm-sync emulator`: parses its own flags (node:util parseArgs), starts the emulator, prints the
// base URL and a `*`-scoped key, and runs until SIGINT/SIGTERM.
import { parseArgs } from 'node:util'
import { startEmulator, type EmulatorOptions } from './index.js'

const USAGE =
  'usage: emulator [--port N] [--seed N] [--clients N] [--jobs N] [--invoices N] [--records N] [--rate-limit N|off] [--allow-http-webhooks]'

function int(name: string, v: string | undefined): number | undefined {
  if (v === undefined) return undefined
  const n = Number(v)
  if (!Number.isInteger(n) || n < 0) throw new Error(`--${name} must be a non-negative integer, got '${v}'`)
  return n
}

export function parseEmulatorArgs(argv: string[]): EmulatorOptions {
  const { values } = parseArgs({
    args: argv,
    strict: true,
    allowPositionals: false,
    options: {
      port: { type: 'string' },
      seed: { type: 'string' },
      clients: { type: 'string' },
      jobs: { type: 'string' },
      invoices: { type: 'string' },
      records: { type: 'string' },
      'rate-limit': { type: 'string' },
      'allow-http-webhooks': { type: 'boolean' },
    },
  })
  const counts: NonNullable<EmulatorOptions['counts']> = {}
  for (const [flag, key] of [
    ['clients', 'clients'],
    ['jobs', 'jobs'],
    ['invoices', 'invoices'],
    ['records', 'customRecords'],
  ] as const) {
    const n = int(flag, values[flag])
    if (n !== undefined) counts[key] = n
  }
  const options: EmulatorOptions = { counts }
  const port = int('port', values.port)
  if (port !== undefined) options.port = port
  const seed = int('seed', values.seed)
  if (seed !== undefined) options.seed = seed
  const rl = values['rate-limit']
  if (rl !== undefined) options.rateLimit = rl === 'off' || rl === 'false' || rl === '0' ? false : (int('rate-limit', rl) ?? 60)
  if (values['allow-http-webhooks'] === true) options.allowHttpWebhooks = true
  return options
}

export async function runEmulatorCli(argv: string[]): Promise<number> {
  let options: EmulatorOptions
  try {
    options = parseEmulatorArgs(argv)
  } catch (err) {
    process.stderr.write(`${err instanceof Error ? err.message : String(err)}\n${USAGE}\n`)
    return 2
  }
  const emu = await startEmulator(options)
  process.stdout.write(`emulator listening on ${emu.url}\n`)
  process.stdout.write(`FSM_BASE_URL=${emu.url}\nFSM_API_KEY=${emu.apiKey}\n`)
  process.stdout.write(`control API: ${emu.url}/__emulator/info (see emulator/README.md); Ctrl-C to stop\n`)
  await new Promise<void>((resolve) => {
    const stop = (): void => {
      process.off('SIGINT', stop)
      process.off('SIGTERM', stop)
      resolve()
    }
    process.on('SIGINT', stop)
    process.on('SIGTERM', stop)
  })
  await emu.close()
  return 0
}
