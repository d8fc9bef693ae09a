// The intake thread (src/webhooks/intake-worker.ts, docs/webhooks.md): with an accounts list the
// daemon's listener runs on a thread of its own, so a delivery is verified, stored and acked while
// the main event loop does not turn at all; a secret registered after the start is accepted at once;
// the probes and /metrics still answer through it; and a thread that dies is said loudly (a log
// line, /readyz not ready, deliveries 503), not silently.
import { spawn } from 'node:child_process'
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs'
import path from 'node:path'
import { request } from 'undici'
import { expect, test } from 'vitest'
import { startDaemon } from '../../../src/daemon/daemon.js'
import { sign } from '../../../src/webhooks/signature.js'
import { accountsEnv, capturedLogger } from '../../support/accounts-env.js'
import { until } from '../../support/daemon-env.js'
import { emulatorEnv } from '../../support/emulator-env.js'
import { tempDir } from '../../support/temp-mirror.js'
import { hex, jobPayload, T } from '../../support/webhook-env.js'

const counts = { clients: 2, jobs: 2, visitsPerJob: 0, invoices: 0, customRecords: 0 }
const secretOf = (id: string, n = 0) => `whsec_thread_${id}_${n}_0123456789abcdef`

function writeSecrets(dataDir: string, id: string, secrets: string[]): void {
  mkdirSync(path.join(dataDir, id), { recursive: true, mode: 0o700 })
  const entries = secrets.map((secret, i) => ({
    endpointId: `e-${id}-${i}`,
    url: 'http://127.0.0.1:9',
    secret,
    createdAt: T(i),
    supersededAt: i < secrets.length - 1 ? T(i + 1) : null,
  }))
  writeFileSync(path.join(dataDir, id, 'mirror.secrets.json'), JSON.stringify({ version: 1, secrets: entries }), { mode: 0o600 })
}

async function twoAccounts() {
  const emu = await emulatorEnv({ accounts: 2, counts })
  const env = accountsEnv(emu)
  for (const a of emu.accounts) writeSecrets(env.dataDir, a.id, [secretOf(a.id)])
  const loaded = env.load(emu.accounts)
  const captured = capturedLogger('info')
  const daemon = await startDaemon(loaded.config, { logger: captured.logger, accounts: loaded.accounts, listed: true })
  const ids = emu.accounts.map((a) => a.id) as [string, string]
  const delivery = (n: number, secret: string) => {
    const body = JSON.stringify(jobPayload(hex(n), T(n)))
    const headers = {
      'content-type': 'application/json',
      'x-service-event': 'job.created',
      'x-service-delivery': `t-${n}`,
      'x-service-signature': sign(secret, Buffer.from(body)),
    }
    return { body, headers }
  }
  const post = async (account: string, n: number, secret: string) => {
    const res = await request(`${daemon.url}/webhooks/${account}`, { method: 'POST', ...delivery(n, secret) })
    return { status: res.statusCode, body: await res.body.text() }
  }
  return { env, daemon, ids, delivery, post, lines: captured.lines }
}

test('a delivery is acked while the main event loop never turns; a secret registered since the start verifies; probes answer through the thread', async () => {
  const { env, daemon, ids, delivery, post } = await twoAccounts()
  try {
    const [one, two] = ids
    expect((await post(one, 1, secretOf(one))).status).toBe(200)
    // Another process sends a delivery while this thread (the main one) is held in a synchronous wait.
    const acked = path.join(tempDir(), 'acked')
    const d = delivery(2, secretOf(two))
    const script = `fetch(${JSON.stringify(`${daemon.url}/webhooks/${two}`)}, { method: 'POST', headers: ${JSON.stringify(d.headers)}, body: ${JSON.stringify(d.body)} })
      .then((r) => require('node:fs').writeFileSync(${JSON.stringify(acked)}, String(r.status)))`
    const child = spawn(process.execPath, ['-e', script], { stdio: 'ignore' })
    const cell = new Int32Array(new SharedArrayBuffer(4))
    for (let i = 0; i < 3_000 && !existsSync(acked); i++) Atomics.wait(cell, 0, 0, 10)
    expect(existsSync(acked) ? readFileSync(acked, 'utf8') : 'no answer while the main thread was held').toBe('200')
    await new Promise((resolve) => child.once('exit', resolve))
    const runtime = daemon.accounts.get(two)!
    await runtime.webhooks.processor.drained()
    expect(runtime.app.mirror.sqlite.prepare('SELECT id FROM jobs WHERE id = ?').pluck().get(hex(2))).toBe(hex(2))
    // The thread's counters reach the account's every 250 ms.
    await expect.poll(() => runtime.webhooks.metrics.intake.stored, { timeout: 5_000 }).toBeGreaterThanOrEqual(1)

    // `webhooks register` in another process writes a new secret: the next delivery signed with it is taken.
    writeSecrets(env.dataDir, one, [secretOf(one), secretOf(one, 1)])
    expect((await post(one, 3, secretOf(one, 1))).status).toBe(200)
    expect((await post(one, 4, 'whsec_not_this_accounts_secret_0123')).status).toBe(401)
    expect((await request(`${daemon.url}/healthz`)).statusCode).toBe(200)
    expect((await request(`${daemon.url}/readyz`)).statusCode).toBe(200)
    expect((await request(`${daemon.url}/webhooks/nobody`, { method: 'POST', body: '{}' })).statusCode).toBe(404)
  } finally {
    await daemon.stop()
  }
}, 90_000)

test('a thread that dies is loud: an error line, /readyz not ready with the reason, deliveries 503; the daemon still stops cleanly', async () => {
  const { daemon, ids, post, lines } = await twoAccounts()
  try {
    expect((await post(ids[0], 1, secretOf(ids[0]))).status).toBe(200)
    await daemon.intakeThread!.crash()
    // The main thread takes the port over; a connection kept alive to the thread is gone with it.
    const ready = await until('the main thread answers /readyz', () =>
      request(`${daemon.url}/readyz`).then(
        async (r) => ({ status: r.statusCode, body: (await r.body.json()) as { reason?: string } }),
        () => undefined,
      ),
    )
    expect(ready.status).toBe(503)
    expect(ready.body.reason).toMatch(/the webhook intake thread stopped/)
    expect((await post(ids[1], 2, secretOf(ids[1]))).status).toBe(503)
    expect(lines.some((l) => l.level === 'error' && String(l.msg).includes('the webhook intake thread stopped'))).toBe(true)
  } finally {
    await daemon.stop()
  }
}, 90_000)
