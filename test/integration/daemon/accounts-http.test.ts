// Two accounts behind the daemon's one listener: each takes its deliveries at
// `<webhooks.path>/<id>`, verified with its own secrets, into its own mirror (`webhooks.path` stays
// the default account's); an unknown id is a counted 404; /metrics is one valid exposition with
// each account's series labelled, and a removed account's series and path are gone. The intake's
// budget of body bytes is the process's, and one account's flood takes at most its share of it.
import { readFileSync } from 'node:fs'
import net from 'node:net'
import path from 'node:path'
import { Writable } from 'node:stream'
import { request } from 'undici'
import { expect, test } from 'vitest'
import type { AccountRuntime } from '../../../src/daemon/account-runtime.js'
import { startDaemon } from '../../../src/daemon/daemon.js'
import { createLogger } from '../../../src/log/logger.js'
import { sign } from '../../../src/webhooks/signature.js'
import { emulatorEnv } from '../../support/emulator-env.js'
import { inProcessDaemonConfig } from '../../support/in-process-daemon.js'
import { parseExposition, type Sample } from '../../support/prometheus-text.js'
import { hex, jobPayload, T } from '../../support/webhook-env.js'

const counts = { clients: 1, jobs: 1, visitsPerJob: 0, invoices: 0, customRecords: 0 }
const DEFAULT_SECRET = 'whsec_default_0123456789abcdef0123'
const NORTH_SECRET = 'whsec_north_0123456789abcdef012345'
const silent = () => createLogger({ level: 'silent', destination: new Writable({ write: (_c, _e, cb) => cb() }) })

async function post(url: string, delivery: string, job: string, secret: string, padding = 0): Promise<{ status: number; body: string }> {
  const body = Buffer.from(JSON.stringify(jobPayload(job, T(1), padding > 0 ? { padding: 'x'.repeat(padding) } : {})))
  const res = await request(url, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      'x-service-event': 'job.updated',
      'x-service-delivery': delivery,
      'x-service-signature': sign(secret, body),
    },
    body,
  })
  return { status: res.statusCode, body: await res.body.text() }
}

const inbox = (r: AccountRuntime): string[] =>
  r.app.mirror.sqlite.prepare('SELECT delivery_id FROM webhook_inbox ORDER BY delivery_id').pluck().all() as string[]
const job = (r: AccountRuntime, id: string): unknown => r.app.mirror.sqlite.prepare('SELECT id FROM jobs WHERE id = ?').pluck().get(id)
const seriesOf = (samples: readonly Sample[], account: string) => samples.filter((s) => s.labels.account === account)

/** The figure docs/metrics.md gives for an account's series before it has done anything. */
function documentedIdleSeries(): number {
  const doc = readFileSync(path.join(import.meta.dirname, '../../../docs/metrics.md'), 'utf8')
  const m = /An account that has done nothing yet has (\d+) series/.exec(doc)
  expect(m, 'docs/metrics.md gives the series of an idle account').not.toBeNull()
  return Number(m![1])
}

test('each account takes its own deliveries at its own path, /metrics labels each account, and a removed one is gone from both', async () => {
  const emu = await emulatorEnv({ accounts: 2, counts })
  const config = { ...inProcessDaemonConfig(emu.accounts[0]!), webhookSecrets: [DEFAULT_SECRET] }
  const daemon = await startDaemon(config, { logger: silent() })
  try {
    const north = await daemon.addAccount({ ...inProcessDaemonConfig(emu.accounts[1]!), webhookSecrets: [NORTH_SECRET] }, 'north')
    await expect(daemon.addAccount(config, 'north')).rejects.toThrow('account north is already running')
    await expect(daemon.addAccount(config, 'a/b')).rejects.toThrow('account id "a/b" does not match')
    const main = daemon.accounts.get('default')!
    expect([...daemon.accounts.keys()]).toEqual(['default', 'north'])

    // North's path, north's secret: stored and applied in north's mirror alone.
    expect(await post(`${daemon.url}/webhooks/north`, 'n-1', hex(1), NORTH_SECRET)).toMatchObject({ status: 200 })
    await north.webhooks.processor.drained()
    expect(job(north, hex(1))).toBe(hex(1))
    expect(job(main, hex(1))).toBeUndefined()
    // Signed for the default account, posted to north's path: refused, stored nowhere.
    expect(await post(`${daemon.url}/webhooks/north`, 'n-2', hex(2), DEFAULT_SECRET)).toMatchObject({ status: 401 })
    // `webhooks.path` is still the default account's, and so is `<webhooks.path>/default`.
    expect(await post(`${daemon.url}/webhooks`, 'd-1', hex(3), DEFAULT_SECRET)).toMatchObject({ status: 200 })
    expect(await post(`${daemon.url}/webhooks/default`, 'd-2', hex(4), DEFAULT_SECRET)).toMatchObject({ status: 200 })
    expect(await post(`${daemon.url}/webhooks`, 'd-3', hex(5), NORTH_SECRET)).toMatchObject({ status: 401 })
    // No such account: 404 with a body that says so (and does not list the accounts), counted.
    const unknown = await post(`${daemon.url}/webhooks/south`, 's-1', hex(6), NORTH_SECRET)
    expect(unknown.status).toBe(404)
    expect(JSON.parse(unknown.body)).toEqual({
      error: 'no account "south" in this daemon: each account takes its deliveries at /webhooks/<id>',
    })
    expect((await post(`${daemon.url}/webhooks/`, 's-2', hex(6), NORTH_SECRET)).status).toBe(404)
    await main.webhooks.processor.drained()
    expect(inbox(north)).toEqual(['n-1'])
    expect(inbox(main)).toEqual(['d-1', 'd-2'])
    expect(job(main, hex(3))).toBe(hex(3))

    const scrape = async () => {
      const res = await request(`${daemon.url}/metrics`)
      expect(res.headers['content-type']).toBe('text/plain; version=0.0.4; charset=utf-8')
      return parseExposition(await res.body.text())
    }
    const both = await scrape()
    const value = (name: string, labels: Record<string, string>) =>
      both.samples.find((s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v))?.value
    expect(value('fsm_webhook_intake_stored_total', { account: 'north' })).toBe(1)
    expect(value('fsm_webhook_intake_unauthorized_total', { account: 'north' })).toBe(1)
    expect(value('fsm_webhook_intake_stored_total', { account: 'default' })).toBe(2)
    // The process's own series carry no account, once.
    const processSeries = both.samples.filter((s) => s.labels.account === undefined)
    expect(processSeries.map((s) => s.name).sort()).toEqual([
      'fsm_build_info',
      'fsm_webhook_intake_connections_dropped_total',
      'fsm_webhook_intake_unknown_account_total',
    ])
    expect(value('fsm_webhook_intake_unknown_account_total', {})).toBe(2)
    // Every other series names its account; both accounts have the same series so far (idle, the
    // same settings), as many as the docs say.
    expect(both.samples.length).toBe(
      processSeries.length + seriesOf(both.samples, 'default').length + seriesOf(both.samples, 'north').length,
    )
    const shape = (account: string) =>
      seriesOf(both.samples, account)
        .map((s) => `${s.name}${JSON.stringify({ ...s.labels, account: undefined })}`)
        .sort()
    expect(shape('north')).toEqual(shape('default'))
    expect(seriesOf(both.samples, 'north')).toHaveLength(documentedIdleSeries())

    expect(await daemon.removeAccount('north')).toBe(true)
    expect(await daemon.removeAccount('north')).toBe(false)
    expect(north.app.mirror.sqlite.open).toBe(false)
    const after = await scrape()
    expect(seriesOf(after.samples, 'north')).toEqual([])
    expect(seriesOf(after.samples, 'default').length).toBe(seriesOf(both.samples, 'default').length)
    expect((await post(`${daemon.url}/webhooks/north`, 'n-3', hex(7), NORTH_SECRET)).status).toBe(404)
    expect(await post(`${daemon.url}/webhooks`, 'd-4', hex(8), DEFAULT_SECRET)).toMatchObject({ status: 200 })
  } finally {
    await daemon.stop()
  }
  expect(daemon.stuck()).toBe(false)
}, 60_000)

test("one account's flood of slow bodies takes at most its half of the process's body budget: another account's delivery still fits", async () => {
  const emu = await emulatorEnv({ accounts: 2, counts })
  const KiB = 1024
  // 2 MiB of bodies for the process: while two accounts run, each may hold 1 MiB, of which
  // incomplete and large bodies 768 KiB (three quarters).
  const webhooks = { maxBufferedBytes: 2048 * KiB }
  const config = { ...inProcessDaemonConfig(emu.accounts[0]!, { webhooks }), webhookSecrets: [DEFAULT_SECRET] }
  const daemon = await startDaemon(config, { logger: silent() })
  const sockets: net.Socket[] = []
  try {
    await daemon.addAccount({ ...inProcessDaemonConfig(emu.accounts[1]!, { webhooks }), webhookSecrets: [NORTH_SECRET] }, 'north')
    const port = Number(new URL(daemon.url).port)
    // Three bodies of 500 KiB on north's path, each stopping at 300 KiB: together they pass north's
    // 768 KiB and one is refused, though the process has room for them (1.5 MiB of incomplete bodies).
    const answers = await new Promise<string[]>((resolve) => {
      const seen: string[] = []
      for (let i = 0; i < 3; i++) {
        const socket = net.connect(port, '127.0.0.1')
        sockets.push(socket)
        socket.on('error', () => undefined)
        socket.setEncoding('latin1').on('data', (d: string) => {
          seen.push(d.split('\r\n')[0]!)
          resolve(seen)
        })
        socket.write(
          `POST /webhooks/north HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: ${500 * KiB}\r\n` +
            `X-Service-Event: job.updated\r\nX-Service-Delivery: flood-${i}\r\nX-Service-Signature: ${'0'.repeat(64)}\r\n\r\n`,
        )
        socket.write(Buffer.alloc(300 * KiB, 0x20))
      }
    })
    expect(answers).toEqual(['HTTP/1.1 503 Service Unavailable'])
    // The default account's large delivery (700 KiB) fits in its own half, whatever north holds.
    expect(await post(`${daemon.url}/webhooks`, 'd-big', hex(9), DEFAULT_SECRET, 700 * KiB)).toMatchObject({ status: 200 })
    expect(daemon.accounts.get('north')!.webhooks.metrics.intake.bufferFull).toBeGreaterThan(0)
    expect(daemon.accounts.get('default')!.webhooks.metrics.intake.bufferFull).toBe(0)
    // Without its default account the daemon still answers: webhooks.path is a 404, readiness is north's.
    expect(await daemon.removeAccount('default')).toBe(true)
    expect((await post(`${daemon.url}/webhooks`, 'd-2', hex(10), DEFAULT_SECRET)).status).toBe(404)
    const ready = await request(`${daemon.url}/readyz`)
    expect(ready.statusCode).toBe(200)
    expect(Object.keys(((await ready.body.json()) as { accounts: object }).accounts)).toEqual(['north'])
  } finally {
    for (const socket of sockets) socket.destroy()
    await daemon.stop()
  }
}, 60_000)
