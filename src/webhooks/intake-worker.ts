// The intake thread (docs/webhooks.md, The intake thread): with an accounts list, the daemon's
// listener runs here, off the event loop that sweeps and applies. For each account the main thread
// attached, it reads, caps and verifies deliveries (with the secrets main pushed), stores them in the
// intake journal through its own connection (JournalWriter: one commit and one sync per group), and
// answers 200 without waiting on the main thread. Main relays them into each account's inbox and
// tells this thread to let them go. Every other request (probes, /metrics, other paths, accounts not
// attached here) is passed to main's own listener on loopback. Lines are logged by main.
import http from 'node:http'
import type { AddressInfo } from 'node:net'
import { parentPort, workerData } from 'node:worker_threads'
import { systemClock } from '../model/clock.js'
import { webhookPathAccount } from './account-paths.js'
import { accountBodyBudget, BodyBudget } from './body-budget.js'
import { InboxUnavailableError } from './group-commit.js'
import type { Delivery, EnqueueResult } from './inbox.js'
import { createIntakeHandler, type IntakeHandler } from './intake-handler.js'
import { capConnections, intakeServerOptions } from './intake-limits.js'
import type { FromWorker, IntakeWorkerData, ToWorker } from './intake-protocol.js'
import { forwardingLogger } from './forwarding-logger.js'
import { JournalWriter } from './journal-writer.js'
import { WebhookMetrics } from './metrics.js'
import type { ActiveSecret } from './signature.js'

const data = workerData as IntakeWorkerData
const port = parentPort!
const post = (m: FromWorker): void => port.postMessage(m)
const logger = forwardingLogger((line) => post({ t: 'log', ...line }), data.logLevel)
const clock = systemClock
const now = () => clock.now()
const journalMetrics = { groupCommits: 0, groupedDeliveries: 0, commitMicros: 0, walSyncMicros: 0 }
const writer = new JournalWriter({
  file: data.file,
  logger,
  now,
  metrics: journalMetrics,
  ...(data.closeTimeoutMs === undefined ? {} : { closeTimeoutMs: data.closeTimeoutMs }),
  // Posted before the group's callers are answered: main hears of a delivery before its sender does.
  onDurable: (stored, lastSeq) => post({ t: 'durable', stored: [...stored], lastSeq }),
})

interface Account {
  maxBacklog: number
  secrets: readonly ActiveSecret[]
  backlog: number
  handler: IntakeHandler
  metrics: WebhookMetrics
  sent: Record<string, number>
}

const accounts = new Map<string, Account>()
const budget = new BodyBudget(data.limits.maxBufferedBytes)
let dropped = 0
let nextReq = 0
let main = { host: '127.0.0.1', port: 0 }
const refreshes = new Map<number, (secrets: readonly ActiveSecret[]) => void>()

function enqueue(id: string, delivery: Delivery): Promise<EnqueueResult> {
  const a = accounts.get(id)
  if (a === undefined)
    return Promise.reject(new InboxUnavailableError('INBOX_CLOSED', 'the webhook inbox is closed (the account is stopping)'))
  const backlog = a.backlog + writer.rows(id) + writer.queued(id)
  if (backlog >= a.maxBacklog)
    return Promise.reject(
      new InboxUnavailableError(
        'INBOX_BACKLOG_FULL',
        `the webhook inbox holds ${backlog} unapplied deliveries, at the bound webhooks.maxBacklog=${a.maxBacklog}: the processor is behind or stopped`,
      ),
    )
  return writer.enqueue(id, delivery)
}

function attach(m: Extract<ToWorker, { t: 'attach' }>): void {
  const metrics = new WebhookMetrics()
  const account: Account = {
    maxBacklog: m.maxBacklog,
    secrets: m.secrets,
    backlog: m.backlog,
    metrics,
    sent: { ...metrics.intake },
    handler: () => undefined,
  }
  account.handler = createIntakeHandler({
    inbox: { enqueue: (delivery) => enqueue(m.id, delivery) },
    secrets: () => account.secrets,
    // A secret registered since main's last push: ask main to read the account's secrets now.
    refreshSecrets: () =>
      new Promise((resolve) => {
        const req = nextReq++
        refreshes.set(req, (secrets) => resolve((account.secrets = secrets)))
        post({ t: 'refresh', req, id: m.id })
      }),
    maxBodyBytes: m.maxBodyBytes,
    bodyTimeoutMs: data.limits.bodyTimeoutMs,
    maxBufferedBytes: data.limits.maxBufferedBytes,
    budget: accountBodyBudget(budget, () => accounts.size),
    logger: logger.child({ account: m.id }),
    now,
    metrics,
  })
  accounts.set(m.id, account)
}

/** The intake counters counted here since the last call, per account, for main's registry. */
function sendMetrics(): void {
  const out: [string, Record<string, number>][] = []
  for (const [id, a] of accounts) {
    const delta: Record<string, number> = {}
    let any = false
    for (const [k, v] of Object.entries(a.metrics.intake)) {
      const d = v - (a.sent[k] ?? 0)
      if (d === 0) continue
      delta[k] = d
      any = true
    }
    if (!any) continue
    out.push([id, delta])
    a.sent = { ...a.metrics.intake }
  }
  post({ t: 'metrics', accounts: out, journal: { ...journalMetrics }, dropped })
}
const metricsEvery = () => clock.setTimer(250, () => (sendMetrics(), metricsEvery()), { background: true })
metricsEvery()

const agent = new http.Agent({ keepAlive: true, maxSockets: 32 })
const HOP = new Set(['connection', 'keep-alive', 'transfer-encoding'])

/** Main answers it: the probes, /metrics, 404s and accounts not attached here. */
function toMain(req: http.IncomingMessage, res: http.ServerResponse, path: string): void {
  if (path === '/metrics') sendMetrics()
  const out = http.request(
    { host: main.host, port: main.port, method: req.method, path: req.url, headers: req.headers, agent },
    (answer) => {
      const headers = Object.fromEntries(Object.entries(answer.headers).filter(([k]) => !HOP.has(k)))
      res.writeHead(answer.statusCode ?? 502, headers)
      answer.pipe(res)
    },
  )
  out.on('error', (err) => {
    logger.error({ err, path }, 'the main thread did not answer a request the intake thread passed on (502)')
    if (!res.headersSent)
      res.writeHead(502, { 'content-type': 'application/json' }).end(JSON.stringify({ error: 'the daemon did not answer' }))
    else res.destroy()
  })
  req.pipe(out)
}

const OWN_PATHS = new Set(['/healthz', '/readyz', '/metrics'])
const server = http.createServer(intakeServerOptions(data.limits), (req, res) => {
  const path = (req.url ?? '/').split('?')[0] ?? '/'
  const id = OWN_PATHS.has(path) ? undefined : webhookPathAccount(path, data.webhookPath, data.defaultAccount)
  const account = id === undefined ? undefined : accounts.get(id)
  if (account !== undefined) return account.handler(req, res)
  toMain(req, res, path)
})
capConnections(server, data.limits.maxConnections, () => dropped++)

function closeListener(): Promise<void> {
  return new Promise((resolve) => {
    if (!server.listening) return resolve()
    server.close(() => resolve())
    server.closeIdleConnections()
    // A client holding a request open past the drain does not hold the shutdown.
    clock.setTimer(2_000, () => server.closeAllConnections(), { background: true })
  })
}

const fail = (req: number, err: unknown) => {
  const e = err as InboxUnavailableError
  post({ t: 'done', req, error: { code: e.code ?? 'INBOX_WRITE_FAILED', message: e.message } })
}

port.on('message', (m: ToWorker) => {
  switch (m.t) {
    case 'listen':
      main = m.main
      server.once('error', (err) => post({ t: 'listen-failed', message: err.message }))
      server.listen(data.port, data.host, () => {
        const a = server.address() as AddressInfo
        post({ t: 'listening', address: a.address, family: a.family, port: a.port })
      })
      return
    case 'attach':
      return attach(m)
    case 'detach':
      accounts.delete(m.id)
      void writer.flushed().then(() => post({ t: 'done', req: m.req }))
      return
    case 'secrets': {
      const a = accounts.get(m.id)
      if (a !== undefined) a.secrets = m.secrets
      return
    }
    case 'backlog': {
      const a = accounts.get(m.id)
      if (a !== undefined) a.backlog = m.n
      return
    }
    case 'refreshed':
      refreshes.get(m.req)?.(m.secrets)
      refreshes.delete(m.req)
      return
    case 'enqueue':
      writer.enqueue(m.id, m.delivery).then(
        (result) => post({ t: 'done', req: m.req, result }),
        (err: unknown) => fail(m.req, err),
      )
      return
    case 'remove':
      try {
        writer.remove(m.id, m.seqs)
      } catch (err) {
        logger.warn(
          { err, account: m.id },
          'relayed webhook deliveries could not be let go from the intake journal; they are relayed again at the next start (the inbox keeps each once)',
        )
      }
      return
    case 'flush':
      void writer.flushed().then(() => post({ t: 'done', req: m.req }))
      return
    case 'close-listener':
      void closeListener().then(() => post({ t: 'done', req: m.req }))
      return
    case 'close':
      void closeListener()
        .then(() => writer.close())
        .then(() => {
          sendMetrics()
          agent.destroy()
          post({ t: 'done', req: m.req })
        })
      return
  }
})
