// `fsm-sync healthcheck [--ready] [--timeout S]`: asks the daemon this configuration describes
// whether it answers, for the image's HEALTHCHECK. GET /healthz (or /readyz) on httpHost:httpPort as
// `run` would read them (flags, environment, config file), a wildcard host probed on loopback. Exit 0
// on a 2xx, else 1 with one line saying what failed: Docker reserves exit 2, so a configuration that
// does not load is 1 here too.
import { request } from 'node:http'
import type { Command } from './command.js'
import { ConfigError, type Config } from '../config/index.js'

/** Seconds the probe waits by default: less than the image's HEALTHCHECK --timeout, so its own line is what Docker keeps. */
export const DEFAULT_TIMEOUT_SECONDS = 4

export const healthcheckCommand: Command = {
  builder: (y) =>
    y
      .option('ready', {
        type: 'boolean',
        default: false,
        describe: 'probe /readyz (the mirror takes writes) instead of /healthz (the process answers)',
      })
      .option('timeout', { type: 'number', default: DEFAULT_TIMEOUT_SECONDS, describe: 'seconds to wait for the answer' }),
  run: async (args, ctx) => {
    const fail = (reason: string) => {
      ctx.io.stderr.write(`fsm-sync healthcheck: ${reason}\n`)
      return 1
    }
    let config: Config
    try {
      config = ctx.config()
    } catch (err) {
      if (!(err instanceof ConfigError)) throw err
      return fail(`invalid configuration: ${err.issues.map((i) => `${i.key}: ${i.message}`).join('; ')}`)
    }
    const { httpHost: host, httpPort: port } = config
    if (port === 0) return fail('httpPort is 0 (any free port): set the port the daemon listens on (FSM_HTTP_PORT or httpPort)')
    const target = { host: probeHost(host), port, path: args.ready === true ? '/readyz' : '/healthz' }
    const where = `GET http://${target.host.includes(':') ? `[${target.host}]` : target.host}:${port}${target.path}`
    const answer = await get(target, Math.max(0.1, Number(args.timeout)) * 1000)
    if ('error' in answer) return fail(`${where}: ${answer.error}`)
    if (answer.status < 200 || answer.status > 299) return fail(`${where} answered ${answer.status}${answer.reason}`)
    ctx.io.stdout.write(`healthy: ${where} answered ${answer.status}\n`)
    return 0
  },
}

/** The address to probe a listener on `host` at: a wildcard one (every interface) is reached on loopback. */
export function probeHost(host: string): string {
  const bare = host.replace(/^\[(.*)\]$/, '$1')
  if (bare === '0.0.0.0' || bare === '') return '127.0.0.1'
  if (/^[:0]+$/.test(bare)) return '::1'
  return bare
}

type Answer = { status: number; reason: string } | { error: string }

function get(target: { host: string; port: number; path: string }, timeoutMs: number): Promise<Answer> {
  return new Promise((resolve) => {
    const req = request({ ...target, method: 'GET', timeout: timeoutMs, headers: { connection: 'close' } }, (res) => {
      let body = ''
      res.setEncoding('utf8')
      res.on('data', (chunk: string) => (body = (body + chunk).slice(0, 2000)))
      res.on('end', () => resolve({ status: res.statusCode ?? 0, reason: reasonOf(body) }))
      res.on('error', (err) => resolve({ error: err.message }))
    })
    req.on('timeout', () => req.destroy(new Error(`no answer within ${timeoutMs / 1000} s`)))
    req.on('error', (err: NodeJS.ErrnoException) =>
      resolve({ error: err.code === 'ECONNREFUSED' ? 'connection refused (is `fsm-sync run` listening there?)' : err.message }),
    )
    req.end()
  })
}

/** `: <reason>` from a /readyz answer's JSON, when it gives one. */
function reasonOf(body: string): string {
  try {
    const reason = (JSON.parse(body) as { reason?: unknown }).reason
    return typeof reason === 'string' ? `: ${reason}` : ''
  } catch {
    return ''
  }
}
