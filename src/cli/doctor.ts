// `fsm-sync doctor [--json]`: one line per check, ✓ or ✗ with the fix, or – for an optional feature
// that is not set up (a note, not a failure); exit 0 only when nothing failed. An
// invalid configuration is reported here line by line (not exit 2): finding it is the point. With
// --json the checks are printed as one document at the end instead of line by line. With several
// accounts and no --account, every account's checks under its id, and the failing accounts named.
import { ConfigError, type Config, type LoadedConfig } from '../config/index.js'
import { apiChecks, mirrorChecks, type Check } from '../daemon/doctor-checks.js'
import type { Command, CommandContext } from './command.js'
import { coversEvery } from './account-choice.js'
import { jsonDocument, jsonOption, wantsJson } from './output.js'
import { destinationTables } from '../destination/index.js'
import { postgresChecks } from '../destination/postgres-doctor.js'

/** A check; over several accounts, with the id of the account it is about. */
type AccountCheck = Check & { account?: string }

export const doctorCommand: Command = {
  builder: (y) => jsonOption(y),
  run: async (args, ctx) => {
    const out = ctx.io.stdout
    const json = wantsJson(args)
    const checks: AccountCheck[] = []
    const add = (c: AccountCheck) => {
      checks.push(c)
      if (!json) out.write(`${c.note === true ? '–' : c.ok ? '✓' : '✗'} ${c.label}: ${c.detail}\n`)
    }
    const finish = (summary: (failed: number) => string, extra: Record<string, unknown> = {}): number => {
      const failed = checks.filter((c) => !c.ok).length
      if (json) out.write(jsonDocument({ ok: failed === 0, ...extra, checks }))
      else out.write(summary(failed))
      return failed === 0 ? 0 : 1
    }
    let loaded: LoadedConfig
    try {
      loaded = ctx.accounts()
    } catch (err) {
      if (!(err instanceof ConfigError)) throw err
      for (const issue of err.issues) add({ ok: false, label: `configuration ${issue.key}`, detail: issue.message })
      return finish(() => 'Fix the configuration first; the other checks need it.\n')
    }
    if (coversEvery(loaded, args.account)) return everyAccount(loaded, ctx, add, finish)
    const config = ctx.config()
    add({
      ok: true,
      label: 'configuration valid',
      detail: `${config.streams === undefined ? 'all' : config.streams.length} streams enabled`,
    })
    for (const c of await accountChecks(config, ctx)) add(c)
    const { url, schema } = config.destination.postgres
    if (url !== undefined) for (const c of await postgresChecks(url, schema, destinationTables())) add(c)
    return finish((failed) => (failed === 0 ? 'All checks passed.\n' : `${failed} check(s) failed.\n`))
  },
}

/** The API settings, the key and its scopes, and the mirror of one account. */
async function accountChecks(config: Config, ctx: CommandContext): Promise<Check[]> {
  const checks: Check[] = []
  const { baseUrl, apiKey } = config
  if (baseUrl === undefined || apiKey === undefined) {
    const missing = [baseUrl === undefined ? 'FSM_BASE_URL' : undefined, apiKey === undefined ? 'FSM_API_KEY' : undefined].filter(
      (k) => k !== undefined,
    )
    checks.push({
      ok: false,
      label: 'API settings',
      detail: `${missing.join(' and ')} not set: the API base address and a svc_live_ key are required`,
    })
  } else checks.push(...(await apiChecks({ ...config, baseUrl, apiKey }, ctx.logger())))
  checks.push(...(await mirrorChecks(config)))
  return checks
}

/** Several accounts and no --account: each account's checks under its id, then the destination's once; names the failing accounts. */
async function everyAccount(
  loaded: LoadedConfig,
  ctx: CommandContext,
  add: (c: AccountCheck) => void,
  finish: (summary: (failed: number) => string, extra: Record<string, unknown>) => number,
): Promise<number> {
  add({
    ok: true,
    label: 'configuration valid',
    detail: `${loaded.accounts.length} accounts: ${loaded.accounts.map((a) => a.id).join(', ')}`,
  })
  const failing: string[] = []
  for (const { id, config } of loaded.accounts) {
    const checks = await accountChecks(config, ctx)
    if (checks.some((c) => !c.ok)) failing.push(id)
    for (const c of checks) add({ ...c, account: id, label: `account ${id}: ${c.label}` })
  }
  const { url, schema } = loaded.config.destination.postgres
  if (url !== undefined) for (const c of await postgresChecks(url, schema, destinationTables())) add(c)
  return finish(
    (failed) =>
      failed === 0
        ? `All checks passed for ${loaded.accounts.length} accounts.\n`
        : `${failed} check(s) failed${failing.length === 0 ? '' : `; failing accounts: ${failing.join(', ')}`}.\n`,
    { failingAccounts: failing },
  )
}
