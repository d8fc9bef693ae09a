// `fsm-sync doctor`: one line per check, ✓ or ✗ with the fix; exit 0 only when all pass. An
// invalid configuration is reported here line by line (not exit 2): finding it is the point.
import { ConfigError, type Config } from '../config/index.js'
import { apiChecks, mirrorChecks, type Check } from '../daemon/doctor-checks.js'
import type { Command } from './command.js'
import { destinationTables } from '../destination/index.js'
import { postgresChecks } from '../destination/postgres-doctor.js'

export const doctorCommand: Command = {
  command: 'doctor',
  describe: 'Check configuration, reachability, the key and its scopes, and the mirror',
  run: async (_args, ctx) => {
    const out = ctx.io.stdout
    const print = (c: Check) => out.write(`${c.ok ? '✓' : '✗'} ${c.label}: ${c.detail}\n`)
    let config: Config
    try {
      config = ctx.config()
    } catch (err) {
      if (!(err instanceof ConfigError)) throw err
      for (const issue of err.issues) print({ ok: false, label: `configuration ${issue.key}`, detail: issue.message })
      out.write('Fix the configuration first; the other checks need it.\n')
      return 1
    }
    const checks: Check[] = [
      { ok: true, label: 'configuration valid', detail: `${config.streams === undefined ? 'all' : config.streams.length} streams enabled` },
    ]
    print(checks[0]!)
    const { baseUrl, apiKey } = config
    if (baseUrl === undefined || apiKey === undefined) {
      const missing = [baseUrl === undefined ? 'FSM_BASE_URL' : undefined, apiKey === undefined ? 'FSM_API_KEY' : undefined].filter(
        (k) => k !== undefined,
      )
      const c = {
        ok: false,
        label: 'API settings',
        detail: `${missing.join(' and ')} not set: the API base address and a svc_live_ key are required`,
      }
      checks.push(c)
      print(c)
    } else {
      for (const c of await apiChecks({ ...config, baseUrl, apiKey }, ctx.logger())) {
        checks.push(c)
        print(c)
      }
    }
    for (const c of await mirrorChecks(config)) {
      checks.push(c)
      print(c)
    }
    const { url, schema } = config.destination.postgres
    if (url !== undefined) {
      for (const c of await postgresChecks(url, schema, destinationTables())) {
        checks.push(c)
        print(c)
      }
    }
    const failed = checks.filter((c) => !c.ok).length
    out.write(failed === 0 ? 'All checks passed.\n' : `${failed} check(s) failed.\n`)
    return failed === 0 ? 0 : 1
  },
}
