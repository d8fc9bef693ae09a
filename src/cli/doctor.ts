// `fsm-sync doctor [--json]`: one line per check, ✓ or ✗ with the fix, or – for an optional feature
// that is not set up (a note, not a failure); exit 0 only when nothing failed. An
// invalid configuration is reported here line by line (not exit 2): finding it is the point. With
// --json the checks are printed as one document at the end instead of line by line.
import { ConfigError, type Config } from '../config/index.js'
import { apiChecks, mirrorChecks, type Check } from '../daemon/doctor-checks.js'
import type { Command } from './command.js'
import { jsonDocument, jsonOption, wantsJson } from './output.js'
import { destinationTables } from '../destination/index.js'
import { postgresChecks } from '../destination/postgres-doctor.js'

export const doctorCommand: Command = {
  builder: (y) => jsonOption(y),
  run: async (args, ctx) => {
    const out = ctx.io.stdout
    const json = wantsJson(args)
    const checks: Check[] = []
    const add = (c: Check) => {
      checks.push(c)
      if (!json) out.write(`${c.note === true ? '–' : c.ok ? '✓' : '✗'} ${c.label}: ${c.detail}\n`)
    }
    const finish = (summary: (failed: number) => string): number => {
      const failed = checks.filter((c) => !c.ok).length
      if (json) out.write(jsonDocument({ ok: failed === 0, checks }))
      else out.write(summary(failed))
      return failed === 0 ? 0 : 1
    }
    let config: Config
    try {
      config = ctx.config()
    } catch (err) {
      if (!(err instanceof ConfigError)) throw err
      for (const issue of err.issues) add({ ok: false, label: `configuration ${issue.key}`, detail: issue.message })
      return finish(() => 'Fix the configuration first; the other checks need it.\n')
    }
    add({
      ok: true,
      label: 'configuration valid',
      detail: `${config.streams === undefined ? 'all' : config.streams.length} streams enabled`,
    })
    const { baseUrl, apiKey } = config
    if (baseUrl === undefined || apiKey === undefined) {
      const missing = [baseUrl === undefined ? 'FSM_BASE_URL' : undefined, apiKey === undefined ? 'FSM_API_KEY' : undefined].filter(
        (k) => k !== undefined,
      )
      add({
        ok: false,
        label: 'API settings',
        detail: `${missing.join(' and ')} not set: the API base address and a svc_live_ key are required`,
      })
    } else {
      for (const c of await apiChecks({ ...config, baseUrl, apiKey }, ctx.logger())) add(c)
    }
    for (const c of await mirrorChecks(config)) add(c)
    const { url, schema } = config.destination.postgres
    if (url !== undefined) for (const c of await postgresChecks(url, schema, destinationTables())) add(c)
    return finish((failed) => (failed === 0 ? 'All checks passed.\n' : `${failed} check(s) failed.\n`))
  },
}
