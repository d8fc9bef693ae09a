// Many accounts in one daemon (src/daemon/account-set.ts): each account ends exact in its own mirror
// under <dataDir>/<id>/; one whose mirror cannot open is kept apart (failed, logged once, retried)
// while the others run; a revoked key and an upstream answering 503 touch only their own accounts;
// one intake journal acks every account's webhook deliveries.
import { existsSync, statSync, writeFileSync, mkdirSync, rmSync } from 'node:fs'
import path from 'node:path'
import { request } from 'undici'
import { expect, test } from 'vitest'
import { startDaemon, type Daemon } from '../../../src/daemon/daemon.js'
import { sign } from '../../../src/webhooks/signature.js'
import { accountsEnv, busiestMinute, capturedLogger, compareAccount } from '../../support/accounts-env.js'
import { until } from '../../support/daemon-env.js'
import { emulatorEnv } from '../../support/emulator-env.js'
import { hex, jobPayload, T } from '../../support/webhook-env.js'

const counts = { clients: 6, jobs: 5, visitsPerJob: 1, invoices: 3, customRecords: 0 }

async function readyz(daemon: Daemon): Promise<{ status: number; body: Record<string, any> }> {
  const res = await request(`${daemon.url}/readyz`)
  return { status: res.statusCode, body: (await res.body.json()) as Record<string, any> }
}

test('three accounts in one daemon each end exact, in their own mirror under <dataDir>/<id>/ (mode 0700)', async () => {
  const emu = await emulatorEnv({ accounts: 3, counts })
  const env = accountsEnv(emu)
  const loaded = env.load(emu.accounts)
  const { logger } = capturedLogger('warn')
  const daemon = await startDaemon(loaded.config, { logger, accounts: loaded.accounts, listed: true })
  try {
    expect([...daemon.accounts.keys()]).toEqual(['acct-001', 'acct-002', 'acct-003'])
    await Promise.all([...daemon.accounts.values()].map((r) => r.firstSweep))
    for (const account of emu.accounts) {
      const runtime = daemon.accounts.get(account.id)!
      expect(runtime.app.mirror.path).toBe(path.join(env.dataDir, account.id, 'mirror.db'))
      expect(statSync(path.join(env.dataDir, account.id)).mode & 0o777).toBe(0o700)
      const own = await compareAccount(runtime, account)
      expect(own.mismatches).toEqual([])
      expect(own.compared.clients).toBe(counts.clients)
    }
    const ready = await readyz(daemon)
    expect(ready.status).toBe(200)
    expect(ready.body).toMatchObject({ status: 'ready', ready: true, notReady: [] })
    for (const account of emu.accounts) expect(ready.body.accounts[account.id]).toMatchObject({ state: 'running', ready: true })
    expect(daemon.status().accounts['acct-002']).toMatchObject({ id: 'acct-002', state: 'running' })
    // Each account runs each scheduled job at its own offset after the tick (the reference read not
    // all at :07), but the local checkpoint fallback on its pattern.
    const next = (job: string) => [...daemon.accounts.values()].map((r) => r.status().next[job])
    for (const job of ['reference', 'reconcile', 'deliveries']) {
      expect(
        next(job).every((at) => typeof at === 'string'),
        job,
      ).toBe(true)
      expect(new Set(next(job)).size, job).toBe(3)
    }
    expect(new Set(next('checkpoint')).size).toBe(1)
  } finally {
    await daemon.stop()
  }
  for (const account of emu.accounts) expect(statSync(path.join(env.dataDir, account.id, 'mirror.db')).size).toBeGreaterThan(0)
}, 90_000)

test('an account whose mirror cannot open is failed, logged once and retried; the others run and /readyz stays ready', async () => {
  const emu = await emulatorEnv({ accounts: 3, counts })
  const env = accountsEnv(emu)
  const broken = path.join(env.dataDir, 'acct-002', 'mirror.db')
  mkdirSync(path.dirname(broken), { recursive: true })
  writeFileSync(broken, 'this is not a database, and no mirror either '.repeat(200))
  const loaded = env.load(emu.accounts)
  const { lines, logger } = capturedLogger()
  const daemon = await startDaemon(loaded.config, { logger, accounts: loaded.accounts, listed: true })
  try {
    expect([...daemon.accounts.keys()].sort()).toEqual(['acct-001', 'acct-003'])
    await Promise.all([...daemon.accounts.values()].map((r) => r.firstSweep))
    for (const id of ['acct-001', 'acct-003'])
      expect(
        (
          await compareAccount(
            daemon.accounts.get(id)!,
            emu.accounts.find((a) => a.id === id)!,
          )
        ).mismatches,
      ).toEqual([])
    const ready = await readyz(daemon)
    expect(ready.status).toBe(200)
    expect(ready.body).toMatchObject({ ready: true, notReady: ['acct-002'] })
    expect(ready.body.accounts['acct-002']).toMatchObject({ state: 'failed', ready: false })
    expect(ready.body.accounts['acct-002'].reason).toMatch(/^cannot open or start: .*; next try at /)
    expect(daemon.status().accounts['acct-002']).toMatchObject({ state: 'failed', error: expect.any(String), retryAt: expect.any(String) })
    // Its deliveries are answered 503 (sent again later), not 404 as for no account at all.
    const delivery = await request(`${daemon.url}/webhooks/acct-002`, { method: 'POST', body: '{}' })
    expect(delivery.statusCode).toBe(503)
    expect(delivery.headers['retry-after']).toBe('60')
    await delivery.body.dump()
    const nobody = await request(`${daemon.url}/webhooks/acct-009`, { method: 'POST', body: '{}' })
    expect(nobody.statusCode).toBe(404)
    await nobody.body.dump()
    // /metrics names it as down; it has no other series until it runs.
    const up = async () => {
      const text = await (await request(`${daemon.url}/metrics`)).body.text()
      return [...text.matchAll(/^fsm_account_up\{account="([^"]+)"\} (\d)$/gm)].map((m) => `${m[1]}=${m[2]}`)
    }
    expect(await up()).toEqual(['acct-001=1', 'acct-002=0', 'acct-003=1'])
    // Logged once, with the account, though tried again meanwhile (5 s after the start, then 10 s later).
    const failures = () => lines.filter((l) => l.account === 'acct-002' && l.level === 'error')
    const firstRetryAt = (daemon.status().accounts['acct-002'] as { retryAt: string }).retryAt
    await until('the second attempt', () => (daemon.status().accounts['acct-002'] as { retryAt?: string }).retryAt !== firstRetryAt, 20_000)
    expect(daemon.status().accounts['acct-002']).toMatchObject({ state: 'failed' })
    expect(failures()).toHaveLength(1)
    expect(failures()[0]!.msg).toMatch(/cannot open or start/)
    // Repaired (the file moved away), the next attempt opens it and the account syncs.
    rmSync(broken)
    await until('acct-002 running', () => daemon.accounts.has('acct-002'), 30_000)
    await daemon.accounts.get('acct-002')!.firstSweep
    expect((await compareAccount(daemon.accounts.get('acct-002')!, emu.accounts[1]!)).mismatches).toEqual([])
    expect((await readyz(daemon)).body).toMatchObject({ ready: true, notReady: [] })
    expect(await up()).toEqual(['acct-001=1', 'acct-002=1', 'acct-003=1'])
  } finally {
    await daemon.stop()
  }
}, 90_000)

test('a revoked key and an upstream answering 503 leave the third account fully synced and within its budget', async () => {
  // The emulator holds each key to 60 requests a minute, as the service does; so does the daemon.
  const emu = await emulatorEnv({ accounts: 3, counts, rateLimit: 60 })
  const [revoked, dead, healthy] = emu.accounts as [(typeof emu.accounts)[0], (typeof emu.accounts)[0], (typeof emu.accounts)[0]]
  const env = accountsEnv(emu, 60)
  const loaded = env.load(emu.accounts)
  const { logger } = capturedLogger('warn')
  const daemon = await startDaemon(loaded.config, { logger, accounts: loaded.accounts, listed: true })
  try {
    // Mid-run: the daemon has started sweeping every account.
    for (const key of await revoked.control<{ id: string }[]>('GET', '/state/api_keys'))
      await revoked.control('POST', `/keys/${key.id}`, { revoked: true })
    await dead.control('POST', '/faults', { route: '*', status5xxShare: 1 })
    await daemon.accounts.get(healthy.id)!.firstSweep
    // Web-app changes on the healthy account after its first pass: the sweeps go on and take them too.
    await healthy.control('POST', '/mutate', { resource: 'clients', op: 'create', count: 2 })
    await until(
      'the healthy account exact',
      async () => (await compareAccount(daemon.accounts.get(healthy.id)!, healthy)).mismatches.length === 0,
      60_000,
    )
    expect((await compareAccount(daemon.accounts.get(healthy.id)!, healthy)).compared.clients).toBe(counts.clients + 2)
    // The others were hit: 401s for the revoked key, 5xx for the dead upstream.
    const [r, d, h] = await Promise.all([busiestMinute(revoked), busiestMinute(dead), busiestMinute(healthy)])
    expect(r.statuses[401]).toBeGreaterThan(0)
    expect(Object.keys(d.statuses).some((s) => Number(s) >= 500)).toBe(true)
    // The healthy account's own budget: never past 60 in a minute, never refused.
    expect(h.most).toBeLessThanOrEqual(60)
    expect(h.statuses[429]).toBeUndefined()
    expect(
      Object.keys(h.statuses)
        .map(Number)
        .every((s) => s < 400),
    ).toBe(true)
    // One pod: ready, each account's own state in the body.
    const ready = await readyz(daemon)
    expect(ready.status).toBe(200)
    expect(ready.body.accounts[healthy.id]).toMatchObject({ state: 'running', ready: true })
  } finally {
    await daemon.stop()
  }
}, 120_000)

test("an accounts list: one intake journal in the data folder acks every account's deliveries, each applied in its own mirror only", async () => {
  const emu = await emulatorEnv({ accounts: 2, counts })
  const env = accountsEnv(emu)
  const secretOf = (id: string) => `whsec_journal_${id}_0123456789abcdef`
  for (const a of emu.accounts) {
    mkdirSync(path.join(env.dataDir, a.id), { recursive: true, mode: 0o700 })
    const entry = { endpointId: `e-${a.id}`, url: 'http://127.0.0.1:9', secret: secretOf(a.id), createdAt: T(0), supersededAt: null }
    writeFileSync(path.join(env.dataDir, a.id, 'mirror.secrets.json'), JSON.stringify({ version: 1, secrets: [entry] }), { mode: 0o600 })
  }
  const loaded = env.load(emu.accounts)
  const { logger } = capturedLogger('warn')
  const daemon = await startDaemon(loaded.config, { logger, accounts: loaded.accounts, listed: true })
  const post = async (account: string, n: number, secret: string) => {
    const body = Buffer.from(JSON.stringify(jobPayload(hex(n), T(n))))
    const res = await request(`${daemon.url}/webhooks/${account}`, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        'x-service-event': 'job.created',
        'x-service-delivery': `j-${n}`,
        'x-service-signature': sign(secret, body),
      },
      body,
    })
    return { status: res.statusCode, body: await res.body.text() }
  }
  try {
    const [one, two] = emu.accounts.map((a) => a.id) as [string, string]
    const sent = await Promise.all([post(one, 1, secretOf(one)), post(two, 2, secretOf(two)), post(one, 3, secretOf(one))])
    expect(sent.map((r) => r.status)).toEqual([200, 200, 200])
    expect(existsSync(path.join(env.dataDir, 'intake-journal.db'))).toBe(true)
    // Signed for one account, posted to the other's path: refused.
    expect((await post(two, 4, secretOf(one))).status).toBe(401)
    const runtime = (id: string) => daemon.accounts.get(id)!
    await Promise.all([one, two].map((id) => runtime(id).webhooks.processor.drained()))
    const jobs = (id: string) =>
      runtime(id).app.mirror.sqlite.prepare(`SELECT id FROM jobs WHERE id IN (?, ?, ?, ?)`).pluck().all(hex(1), hex(2), hex(3), hex(4))
    expect(jobs(one)).toEqual([hex(1), hex(3)])
    expect(jobs(two)).toEqual([hex(2)])
    // Relayed already: the same delivery again is a duplicate.
    expect(await post(one, 1, secretOf(one))).toEqual({ status: 200, body: '{"received":true,"duplicate":true}' })
    // The journal's group commits are the process's series (no account label).
    const metrics = await (await request(`${daemon.url}/metrics`)).body.text()
    expect(Number(/^fsm_webhook_journal_grouped_deliveries_total (\d+)$/m.exec(metrics)?.[1])).toBeGreaterThanOrEqual(3)
  } finally {
    await daemon.stop()
  }
}, 90_000)
