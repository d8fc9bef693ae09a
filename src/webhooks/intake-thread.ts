// The main thread's side of the intake thread (intake-worker.ts, docs/webhooks.md): starts it, gives
// the intake journal its writes through it (JournalWrites), pushes each attached account's secrets
// and inbox backlog to it, answers its requests for fresh secrets, adds the counters it keeps to each
// account's metrics, and writes its log lines. A thread that dies is said loudly: `failure` is set
// (the daemon's /readyz reports it) and `onExit` runs, and every write through it is answered 503.
import type { Logger } from '../log/logger.js'
import type { Clock } from '../model/clock.js'
import { startModuleWorker } from '../store/sqlite/module-worker.js'
import { InboxUnavailableError, type GroupCommitMetrics } from './group-commit.js'
import type { Delivery, EnqueueResult } from './inbox.js'
import type { AccountIntakeSpec, AccountIntakes } from './intake-journal.js'
import type { FromWorker, IntakeWorkerData, ToWorker } from './intake-protocol.js'
import { writeForwarded } from './forwarding-logger.js'
import type { JournalWrites, OnDurable } from './journal-writer.js'
import type { WebhookMetrics } from './metrics.js'
import type { ActiveSecret } from './signature.js'

export interface IntakeThreadOptions extends Omit<IntakeWorkerData, 'logLevel'> {
  logger: Logger
  clock: Clock
  /** The account's counters, where the thread's intake counts are added (undefined: not running here). */
  metricsOf: (id: string) => WebhookMetrics | undefined
  /** The journal's group commits (the process's series). */
  journalMetrics: GroupCommitMetrics
  /** Connections the thread's listener dropped past the cap, as they are counted. */
  onDrop: (n: number) => void
  /** The thread ended without being stopped. */
  onExit: (failure: string) => void
}

interface Attached {
  spec: AccountIntakeSpec
  secrets: string
  backlog: number
}

/** How often main pushes changed secrets and backlogs (ms). */
const PUSH_EVERY_MS = 1_000

export class IntakeThread {
  readonly #o: IntakeThreadOptions
  readonly #log: Logger
  readonly #worker
  readonly #pending = new Map<number, { resolve: (m: Extract<FromWorker, { t: 'done' }>) => void }>()
  readonly #attached = new Map<string, Attached>()
  #nextReq = 0
  #onDurable: OnDurable | undefined
  #listening: ((m: FromWorker) => void) | undefined
  #stopping = false
  #failure: string | undefined
  #cancelPush: () => void
  #exited: Promise<void>

  constructor(o: IntakeThreadOptions) {
    this.#o = o
    this.#log = o.logger.child({ component: 'intake-thread' })
    const { file, webhookPath, defaultAccount, host, port, limits, closeTimeoutMs } = o
    const data: IntakeWorkerData = { file, webhookPath, defaultAccount, host, port, limits, logLevel: o.logger.level }
    if (closeTimeoutMs !== undefined) data.closeTimeoutMs = closeTimeoutMs
    this.#worker = startModuleWorker(new URL('./intake-worker.js', import.meta.url), { workerData: data })
    this.#worker.on('message', (m: FromWorker) => this.#message(m))
    this.#worker.on('error', (err) => this.#log.error({ err }, 'the webhook intake thread failed'))
    this.#exited = new Promise((resolve) =>
      this.#worker.once('exit', (code) => {
        resolve()
        if (this.#stopping) return
        this.#failure = `the webhook intake thread stopped (exit code ${code}): deliveries are answered 503 until the daemon restarts`
        this.#log.error({ code }, this.#failure)
        for (const p of this.#pending.values())
          p.resolve({ t: 'done', req: -1, error: { code: 'INBOX_WRITE_FAILED', message: this.#failure } })
        this.#pending.clear()
        this.#listening?.({ t: 'listen-failed', message: this.#failure })
        o.onExit(this.#failure)
      }),
    )
    const push = () => {
      this.#push()
      this.#cancelPush = o.clock.setTimer(PUSH_EVERY_MS, push, { background: true })
    }
    this.#cancelPush = o.clock.setTimer(PUSH_EVERY_MS, push, { background: true })
  }

  /** Why the thread no longer takes deliveries (it died), or undefined while it runs. */
  get failure(): string | undefined {
    return this.#failure
  }

  /** Starts the thread's listener; resolves with its address. */
  listen(main: { host: string; port: number }): Promise<{ address: string; family: string; port: number }> {
    return new Promise((resolve, reject) => {
      this.#listening = (m) => {
        this.#listening = undefined
        if (m.t === 'listening') resolve(m)
        else reject(new Error(m.t === 'listen-failed' ? m.message : 'the intake thread did not listen'))
      }
      this.#send({ t: 'listen', main })
    })
  }

  /** The journal's writes, through the thread. */
  writes(onDurable: OnDurable): JournalWrites & AccountIntakes {
    this.#onDurable = onDurable
    const failed = () => (this.#failure === undefined ? undefined : new InboxUnavailableError('INBOX_WRITE_FAILED', this.#failure))
    return {
      enqueue: async (id: string, delivery: Delivery): Promise<EnqueueResult> => {
        const m = await this.#ask((req) => ({ t: 'enqueue', req, id, delivery }))
        if (m.error !== undefined) throw new InboxUnavailableError(m.error.code as InboxUnavailableError['code'], m.error.message)
        return m.result!
      },
      remove: (id, seqs) => this.#send({ t: 'remove', id, seqs }),
      refusal: failed,
      // Deliveries queued on the thread are counted there (its backlog check).
      queued: () => 0,
      flushed: async () => {
        await this.#ask((req) => ({ t: 'flush', req }))
      },
      close: () => this.#close(),
      attach: (id, spec) => {
        const secrets = spec.secrets()
        const backlog = spec.backlog()
        this.#attached.set(id, { spec, secrets: JSON.stringify(secrets), backlog })
        this.#send({ t: 'attach', id, maxBacklog: spec.maxBacklog, maxBodyBytes: spec.maxBodyBytes, secrets, backlog })
      },
      detach: async (id) => {
        this.#attached.delete(id)
        await this.#ask((req) => ({ t: 'detach', req, id }))
      },
    }
  }

  /** Ends the thread at once, as a crash would (tests of what a dead thread looks like). */
  async crash(): Promise<void> {
    await this.#worker.terminate()
    await this.#exited
  }

  /** Stops the thread's listener: answers in progress finish, idle connections close. */
  async closeListener(): Promise<void> {
    await this.#ask((req) => ({ t: 'close-listener', req }))
  }

  async #close(): Promise<void> {
    this.#cancelPush()
    await this.#ask((req) => ({ t: 'close', req }))
    this.#stopping = true
    await this.#worker.terminate()
    await this.#exited
  }

  /** Secrets and backlogs that changed since the last push. */
  #push(): void {
    for (const [id, a] of this.#attached) {
      try {
        const secrets = a.spec.secrets()
        const json = JSON.stringify(secrets)
        if (json !== a.secrets) {
          a.secrets = json
          this.#send({ t: 'secrets', id, secrets })
        }
      } catch (err) {
        this.#log.warn({ err, account: id }, "the account's webhook secrets could not be read; the intake thread keeps the last ones")
      }
      const n = a.spec.backlog()
      if (n !== a.backlog) {
        a.backlog = n
        this.#send({ t: 'backlog', id, n })
      }
    }
  }

  #send(m: ToWorker): void {
    if (this.#failure === undefined) this.#worker.postMessage(m)
  }

  #ask(build: (req: number) => ToWorker): Promise<Extract<FromWorker, { t: 'done' }>> {
    if (this.#failure !== undefined)
      return Promise.resolve({ t: 'done', req: -1, error: { code: 'INBOX_WRITE_FAILED', message: this.#failure } })
    const req = this.#nextReq++
    return new Promise((resolve) => {
      this.#pending.set(req, { resolve })
      this.#worker.postMessage(build(req))
    })
  }

  #message(m: FromWorker): void {
    switch (m.t) {
      case 'listening':
      case 'listen-failed':
        return this.#listening?.(m)
      case 'durable':
        return this.#onDurable?.(new Map(m.stored), m.lastSeq)
      case 'done':
        this.#pending.get(m.req)?.resolve(m)
        this.#pending.delete(m.req)
        return
      case 'refresh': {
        const a = this.#attached.get(m.id)
        let secrets: readonly ActiveSecret[] = []
        try {
          secrets = a?.spec.secrets() ?? []
          if (a !== undefined) a.secrets = JSON.stringify(secrets)
        } catch (err) {
          this.#log.warn({ err, account: m.id }, "the account's webhook secrets could not be read")
        }
        return this.#send({ t: 'refreshed', req: m.req, secrets })
      }
      case 'metrics': {
        for (const [id, delta] of m.accounts) {
          const target = this.#o.metricsOf(id)?.intake as Record<string, number> | undefined
          if (target !== undefined) for (const [k, v] of Object.entries(delta)) target[k] = (target[k] ?? 0) + v
        }
        Object.assign(this.#o.journalMetrics, m.journal)
        if (m.dropped > this.#dropped) {
          this.#o.onDrop(m.dropped - this.#dropped)
          this.#dropped = m.dropped
        }
        return
      }
      case 'log':
        return writeForwarded(this.#o.logger, m)
    }
  }

  #dropped = 0
}
