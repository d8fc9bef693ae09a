// `fsm-sync emulator`: parses its own flags (node:util parseArgs), starts the emulator, prints what
// a shell needs to reach it (`export` lines, or one JSON document with --json) and runs until
// SIGINT/SIGTERM. Every stdout line of the text form is valid shell: comments and exports.
import { parseArgs } from 'node:util'
import { startEmulator, type AccountHandle, type EmulatorHandle, type EmulatorOptions } from './index.js'

const USAGE =
  'usage: emulator [--port N] [--seed N] [--accounts N] [--rows N] [--key svc_live_...] [--clients N] [--jobs N] [--invoices N] [--records N] [--rate-limit N|off] [--allow-http-webhooks] [--json]'

/** What a key given with --key may hold: it goes into a header and, unquoted, into a shell line. */
const KEY = /^svc_live_[A-Za-z0-9_-]+$/

export interface EmulatorCliOptions extends EmulatorOptions {
  json: boolean
}

function int(name: string, v: string | undefined): number | undefined {
  if (v === undefined) return undefined
  const n = Number(v)
  if (!Number.isInteger(n) || n < 0) throw new Error(`--${name} must be a non-negative integer, got '${v}'`)
  return n
}

export function parseEmulatorArgs(argv: string[]): EmulatorCliOptions {
  const { values } = parseArgs({
    args: argv,
    strict: true,
    allowPositionals: false,
    options: {
      port: { type: 'string' },
      seed: { type: 'string' },
      accounts: { type: 'string' },
      rows: { type: 'string' },
      key: { type: 'string' },
      clients: { type: 'string' },
      jobs: { type: 'string' },
      invoices: { type: 'string' },
      records: { type: 'string' },
      'rate-limit': { type: 'string' },
      'allow-http-webhooks': { type: 'boolean' },
      json: { type: 'boolean' },
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
  const options: EmulatorCliOptions = { counts, json: values.json === true }
  const port = int('port', values.port)
  if (port !== undefined) options.port = port
  const seed = int('seed', values.seed)
  if (seed !== undefined) options.seed = seed
  const accounts = int('accounts', values.accounts)
  if (accounts === 0) throw new Error('--accounts must be at least 1')
  if (accounts !== undefined) options.accounts = accounts
  const rows = int('rows', values.rows)
  if (rows !== undefined) options.rows = rows
  if (values.key !== undefined) {
    if (!KEY.test(values.key)) throw new Error('--key must be svc_live_ followed by letters, digits, _ or - (the value is not shown)')
    options.apiKey = values.key
  }
  const rl = values['rate-limit']
  if (rl !== undefined) options.rateLimit = rl === 'off' || rl === 'false' || rl === '0' ? false : (int('rate-limit', rl) ?? 60)
  if (values['allow-http-webhooks'] === true) options.allowHttpWebhooks = true
  return options
}

/** The variable an account's key is exported as when there are several: `EMULATOR_KEY_ACCT_001`. */
export const keyVariable = (id: string): string => `EMULATOR_KEY_${id.toUpperCase().replace(/-/g, '_')}`

/** The JSON form (--json): one document. */
export function describeJson(emu: EmulatorHandle): string {
  const accounts = emu.accounts.map((a: AccountHandle) => ({
    id: a.id,
    seed: a.seed,
    apiKey: a.apiKey,
    apiKeyEnv: keyVariable(a.id),
    controlUrl: a.controlUrl,
  }))
  return `${JSON.stringify({ url: emu.url, apiKey: emu.apiKey, accounts })}\n`
}

/**
 * The text form: a comment, then `export` lines to paste into a shell (or `source` from a file the
 * output was redirected to). With several accounts, every account's key follows as its own
 * variable, whatever their number: one rule for every N, and a script can also read the list at
 * `/__emulator/accounts`.
 */
export function describeText(emu: EmulatorHandle): string {
  const first = emu.accounts[0]!
  const last = emu.accounts.at(-1)!
  const n = emu.accounts.length
  const lines = [
    n === 1
      ? `# fsm-sync emulator on ${emu.url} (seed ${first.seed}); control API ${emu.url}/__emulator/info (emulator/README.md); Ctrl-C stops it`
      : `# fsm-sync emulator on ${emu.url}: ${n} accounts, ${first.id} to ${last.id} (seeds ${first.seed} to ${last.seed}), each reached with its own key; ` +
        `FSM_API_KEY is ${first.id}'s; the list: ${emu.url}/__emulator/accounts; Ctrl-C stops it`,
    `export FSM_BASE_URL=${emu.url}`,
    `export FSM_API_KEY=${emu.apiKey}`,
  ]
  if (n > 1) for (const a of emu.accounts) lines.push(`export ${keyVariable(a.id)}=${a.apiKey}`)
  return `${lines.join('\n')}\n`
}

/** Why the emulator could not listen, and what to do about it (the CLI prints the message, exit 1). */
function listenProblem(err: unknown, options: EmulatorOptions): Error {
  const code = (err as NodeJS.ErrnoException | null)?.code
  const where = `${options.host ?? '127.0.0.1'}:${options.port ?? 0}`
  if (code === 'EADDRINUSE')
    return new Error(
      `the emulator cannot listen on ${where}: the port is in use (an emulator still running?). Stop what holds it, or start with --port 0 to take a free port (the FSM_BASE_URL line names it)`,
      { cause: err },
    )
  if (code === 'EACCES')
    return new Error(`the emulator may not listen on ${where}: choose a port above 1023, or --port 0 for a free one`, { cause: err })
  return err instanceof Error ? err : new Error(String(err))
}

export async function runEmulatorCli(argv: string[]): Promise<number> {
  let options: EmulatorCliOptions
  try {
    options = parseEmulatorArgs(argv)
  } catch (err) {
    process.stderr.write(`${err instanceof Error ? err.message : String(err)}\n${USAGE}\n`)
    return 2
  }
  const emu = await startEmulator(options).catch((err: unknown) => {
    throw listenProblem(err, options)
  })
  process.stdout.write(options.json ? describeJson(emu) : describeText(emu))
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
