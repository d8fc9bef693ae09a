// /metrics of a daemon with an accounts list (metrics.perAccount "summary", the default there): each
// account has the few series docs/metrics.md lists, every one labelled `account`; the per-stream and
// per-route families are the process's, summed over the accounts; a scrape opens no parked mirror.
import { readFileSync } from 'node:fs'
import path from 'node:path'
import { request } from 'undici'
import { expect, test } from 'vitest'
import { startDaemon } from '../../../src/daemon/daemon.js'
import { accountsEnv, capturedLogger } from '../../support/accounts-env.js'
import { until } from '../../support/daemon-env.js'
import { emulatorEnv } from '../../support/emulator-env.js'
import { parseExposition, type Sample } from '../../support/prometheus-text.js'
import { idleSchedules, NEVER } from '../../support/schedules.js'

const ACCOUNTS = 24
const counts = { clients: 2, jobs: 2, visitsPerJob: 1, invoices: 1, customRecords: 0 }

interface Row {
  family: string
  atMost: number
  when: string
}

/** The table of docs/metrics.md, "Summary": each family an account may have, how many series, and when. */
function documentedSummary(): { rows: Row[]; total: number } {
  const doc = readFileSync(path.join(import.meta.dirname, '../../../docs/metrics.md'), 'utf8')
  const section = doc.slice(doc.indexOf('### Summary'), doc.indexOf('### Full'))
  const rows = [...section.matchAll(/^\| `(fsm_[a-z_]+)(?:\{[a-z,]+\})?` +\| (\d+) +\| ([a-z ]+?) +\|/gm)].map((m) => ({
    family: m[1]!,
    atMost: Number(m[2]),
    when: m[3]!,
  }))
  const total = /An account has the few series below, at most (\d+);/.exec(section)
  expect(total, 'docs/metrics.md gives the most series of an account').not.toBeNull()
  return { rows, total: Number(total![1]) }
}

test('with an accounts list each account has the few documented series, all labelled; the rest is summed over the accounts; a scrape opens no parked mirror', async () => {
  const { rows, total } = documentedSummary()
  expect(rows.length).toBeGreaterThan(15)
  // The figure in the text is the table's.
  expect(rows.reduce((sum, r) => sum + r.atMost, 0)).toBe(total)

  const emu = await emulatorEnv({ accounts: ACCOUNTS, counts })
  const env = accountsEnv(emu)
  // One sweep at start, then nothing on a schedule: every mirror goes idle and is parked.
  const loaded = env.load(emu.accounts, { schedules: idleSchedules({ sweep: NEVER }) })
  const { logger } = capturedLogger('warn')
  const daemon = await startDaemon(loaded.config, { logger, accounts: loaded.accounts, listed: true })
  try {
    const runtimes = [...daemon.accounts.values()]
    expect(runtimes).toHaveLength(ACCOUNTS)
    await Promise.all(runtimes.map((r) => r.firstSweep))
    await until('every mirror parked', () => runtimes.every((r) => !r.activity().open && !r.activity().busy))
    const uses = runtimes.map((r) => r.activity().uses)

    const res = await request(`${daemon.url}/metrics`)
    const { samples } = parseExposition(await res.body.text())
    // Not one mirror was opened for it.
    expect(runtimes.map((r) => r.activity().open)).toEqual(runtimes.map(() => false))
    expect(runtimes.map((r) => r.activity().uses)).toEqual(uses)

    const documented = new Map(rows.map((r) => [r.family, r]))
    const familyOf = (s: Sample) => s.name
    const byAccount = new Map<string, Sample[]>()
    for (const s of samples)
      if (s.labels.account !== undefined) byAccount.set(s.labels.account, [...(byAccount.get(s.labels.account) ?? []), s])
    expect([...byAccount.keys()].sort()).toEqual(emu.accounts.map((a) => a.id).sort())
    for (const [account, own] of byAccount) {
      // Every family is in the table, as many series as it says at most, and none of another condition.
      const families = new Map<string, number>()
      for (const s of own) families.set(familyOf(s), (families.get(familyOf(s)) ?? 0) + 1)
      for (const [family, n] of families) {
        expect(documented.get(family), `${account}: ${family} is in docs/metrics.md`).toBeDefined()
        expect(n, `${account}: ${family}`).toBeLessThanOrEqual(documented.get(family)!.atMost)
      }
      // Every family the table has always is there (cron sweeps, no destination: the others are not).
      expect([...families.keys()].sort(), account).toEqual(
        rows
          .filter((r) => r.when === 'always')
          .map((r) => r.family)
          .sort(),
      )
      expect(own.length).toBeLessThanOrEqual(total)
      // After one successful sweep: one outcome seen, as docs/metrics.md measures.
      expect(own.length, account).toBe(16)
      expect(own.find((s) => s.name === 'fsm_account_up')?.value).toBe(1)
      expect(own.find((s) => s.name === 'fsm_account_runs_total')?.labels).toEqual({ account, outcome: 'success' })
      expect(own.find((s) => s.name === 'fsm_account_last_sweep_timestamp_seconds')?.value).toBeGreaterThan(0)
      expect(own.find((s) => s.name === 'fsm_account_staleness_seconds')?.value).toBeGreaterThanOrEqual(0)
    }
    // The per-stream families are the process's (no account), summed over every account's sweep.
    const processWide = samples.filter((s) => s.labels.account === undefined)
    const jobsSweeps = processWide.find(
      (s) => s.name === 'fsm_runs_total' && s.labels.stream === 'jobs' && s.labels.kind === 'sweep' && s.labels.outcome === 'success',
    )
    expect(jobsSweeps?.value).toBe(ACCOUNTS)
    expect(processWide.find((s) => s.name === 'fsm_run_duration_seconds_count' && s.labels.stream === 'jobs')?.value).toBe(ACCOUNTS)
    // Their number does not grow with the accounts: a few hundred, against 24 accounts' 16 each.
    expect(processWide.length).toBeLessThan(400)
    expect(samples.length).toBe(processWide.length + ACCOUNTS * 16)
  } finally {
    await daemon.stop()
  }
}, 120_000)
