// Reloads the configuration when its file (or a file it names, such as an account's apiKeyFile)
// changes, and at once on SIGHUP. Polling is the truth: one stat per watched file every `pollMs`
// (one background timer), followed through symlinks, so a rename over the file and a Kubernetes
// swap of the `..data` symlink (a new inode) are seen like a write in place; after a change the
// content is hashed too until it settles. fs.watch on the file's folder is only a hint that checks
// sooner: a watch on the file loses it at a rename, and some filesystems (NFS, some bind mounts)
// send nothing. The pure decisions are in config-watch-core.ts.
import { createHash } from 'node:crypto'
import { watch, type FSWatcher } from 'node:fs'
import { readFile, stat } from 'node:fs/promises'
import path from 'node:path'
import { isDeepStrictEqual } from 'node:util'
import type { Logger } from '../log/logger.js'
import type { Clock } from '../model/clock.js'
import { fingerprint, ReloadGate, StatTrust, statKey, type Outcome, type Want } from './config-watch-core.js'

/** Between two checks by the poll: a change is applied within this and the load's time (the goal is 10 s). */
export const POLL_MS = 2000
/** After an fs.watch event, the wait for the rest of its burst (a symlink swap is several events). */
export const HINT_SETTLE_MS = 100
export const RELOAD_SIGNAL = 'SIGHUP'

export interface ConfigWatchOptions<T> {
  /** The configuration file, as named (symlinks are followed at every check). */
  path: string
  /** Reads and validates the configuration; its error's message is logged when it throws. */
  load: () => Promise<T>
  /** Takes a loaded value that differs from the running one. Loads and applies never overlap. */
  apply: (next: T) => Promise<void> | void
  clock: Clock
  logger: Logger
  /** Files a value was read from besides `path` (an account's apiKeyFile): a change of one reloads too. */
  files?: (value: T) => readonly string[]
  /** Default: deep equality. An equal value is not applied. */
  equals?: (a: T, b: T) => boolean
  /** Default POLL_MS. */
  pollMs?: number
  /** Where SIGHUP comes from. Default: this process. */
  signals?: Pick<NodeJS.EventEmitter, 'on' | 'off'>
  /** Default true: fs.watch on the file's folder as a hint. */
  hint?: boolean
}

export class ConfigWatch<T> {
  readonly #o: ConfigWatchOptions<T>
  readonly #pollMs: number
  #current!: T
  #paths: readonly string[] = []
  #gate: ReloadGate | undefined
  readonly #trust = new StatTrust()
  #cancelTimer: (() => void) | undefined
  #dueAt = 0
  #watcher: FSWatcher | undefined
  #inflight: Promise<void> | undefined
  #waiting: (() => void)[] = []
  #stopped = false
  readonly #onSignal = () => {
    this.#o.logger.info({ signal: RELOAD_SIGNAL, path: this.#o.path }, 'configuration reload requested')
    void this.#request('force')
  }

  constructor(options: ConfigWatchOptions<T>) {
    this.#o = options
    this.#pollMs = options.pollMs ?? POLL_MS
  }

  /** The value running now: the one given to start, or the last one applied. */
  get current(): T {
    return this.#current
  }

  /**
   * Watches from now on; `current` is the value the caller loaded and runs. A change between that
   * load and this call is seen at the next change; `reload()` once after start closes the gap.
   */
  async start(current: T): Promise<void> {
    this.#current = current
    this.#paths = this.#pathsOf(current)
    this.#gate = new ReloadGate(await this.#fingerprint())
    if (this.#stopped) return
    ;(this.#o.signals ?? process).on(RELOAD_SIGNAL, this.#onSignal)
    if (this.#o.hint !== false) this.#watch()
    this.#arm(this.#pollMs)
  }

  /** As SIGHUP: loads now even when nothing changed; resolves once that load (and its apply) ended. */
  reload(): Promise<void> {
    return this.#request('force')
  }

  /** Clears the timer, the fs watcher and the signal handler; waits for a load in flight (no apply after it). */
  async stop(): Promise<void> {
    this.#stopped = true
    this.#cancelTimer?.()
    this.#cancelTimer = undefined
    this.#watcher?.close()
    this.#watcher = undefined
    ;(this.#o.signals ?? process).off(RELOAD_SIGNAL, this.#onSignal)
    await this.#inflight
  }

  #pathsOf(value: T): readonly string[] {
    return [this.#o.path, ...(this.#o.files?.(value) ?? [])]
  }

  async #fingerprint(): Promise<string> {
    const paths = this.#paths
    this.#trust.keep(paths)
    return fingerprint(paths, await Promise.all(paths.map((p) => this.#token(p))))
  }

  /** One stat; the content's hash too while the stat is new (StatTrust). */
  async #token(file: string): Promise<string> {
    let key: string
    try {
      key = statKey(await stat(file, { bigint: true }))
    } catch (err) {
      return errorCode(err)
    }
    const known = this.#trust.known(file, key)
    if (known !== undefined) return known
    let hash: string
    try {
      // A hash, so that a key file's secret is not kept in memory.
      hash = createHash('sha256')
        .update(await readFile(file))
        .digest('base64')
    } catch (err) {
      hash = errorCode(err)
    }
    return this.#trust.record(file, key, hash, this.#o.clock.now())
  }

  /** One timer at a time; a request never moves the next check later. */
  #arm(ms: number): void {
    if (this.#stopped) return
    const at = this.#o.clock.now() + ms
    if (this.#cancelTimer !== undefined && this.#dueAt <= at) return
    this.#cancelTimer?.()
    this.#dueAt = at
    this.#cancelTimer = this.#o.clock.setTimer(
      ms,
      () => {
        this.#cancelTimer = undefined
        void this.#request('check').then(() => this.#arm(this.#pollMs))
      },
      { background: true },
    )
  }

  #watch(): void {
    const base = path.basename(this.#o.path)
    const onError = (err: unknown) => {
      this.#watcher?.close()
      this.#watcher = undefined
      this.#o.logger.debug({ err, path: this.#o.path }, 'fs.watch unavailable for the configuration: polling alone')
    }
    try {
      // A write or rename of the file itself, or of the `..data` entries a Kubernetes volume swaps.
      this.#watcher = watch(path.dirname(this.#o.path), { persistent: false }, (_event, name) => {
        if (name === null || name === base || name.startsWith('..')) this.#arm(HINT_SETTLE_MS)
      })
      this.#watcher.on('error', onError)
    } catch (err) {
      onError(err)
    }
  }

  /** Runs a check, or queues it behind the one in flight; resolves once it was served. */
  #request(want: Want): Promise<void> {
    const gate = this.#gate
    if (gate === undefined || this.#stopped) return Promise.resolve()
    if (!gate.begin(want)) return new Promise((resolve) => this.#waiting.push(resolve))
    const run = this.#serve(gate, want).finally(() => (this.#inflight = undefined))
    this.#inflight = run
    return run
  }

  async #serve(gate: ReloadGate, first: Want): Promise<void> {
    let want: Want | undefined = first
    let served: (() => void)[] = []
    while (want !== undefined) {
      const outcome = this.#stopped ? ({ kind: 'unchanged' } as const) : await this.#check(gate).catch(unexpected)
      const { log, next } = gate.end(outcome)
      if (outcome.kind === 'failed') {
        const fields = { path: this.#o.path }
        if (log) this.#o.logger.error(fields, outcome.message)
        else this.#o.logger.debug(fields, `still: ${outcome.message}`)
      }
      for (const resolve of served) resolve()
      served = this.#waiting
      this.#waiting = []
      want = next
    }
    for (const resolve of served) resolve()
  }

  async #check(gate: ReloadGate): Promise<Outcome> {
    if (!gate.shouldLoad(await this.#fingerprint())) return { kind: 'unchanged' }
    let next: T
    try {
      next = await this.#o.load()
    } catch (err) {
      return { kind: 'failed', message: `configuration not reloaded: ${oneLine(err)}; keeping the running accounts` }
    }
    if (this.#stopped) return { kind: 'unchanged' }
    const nextPaths = this.#pathsOf(next)
    if ((this.#o.equals ?? isDeepStrictEqual)(this.#current, next)) {
      this.#paths = nextPaths
      this.#o.logger.debug({ path: this.#o.path }, 'configuration read again: nothing changed')
      return { kind: 'loaded' }
    }
    try {
      await this.#o.apply(next)
    } catch (err) {
      return { kind: 'failed', message: `configuration loaded but not applied: ${oneLine(err)}; the next change or SIGHUP tries again` }
    }
    this.#current = next
    this.#paths = nextPaths
    this.#o.logger.info({ path: this.#o.path }, 'configuration reloaded')
    return { kind: 'loaded' }
  }
}

/** A throw outside the loader and apply (the `files` option) must not leave the gate busy for good. */
function unexpected(err: unknown): Outcome {
  return { kind: 'failed', message: `configuration not reloaded: ${oneLine(err)}; keeping the running accounts` }
}

function errorCode(err: unknown): string {
  return (err as NodeJS.ErrnoException).code ?? 'unreadable'
}

/** An error's message on one line (a ConfigError lists one problem a line). */
function oneLine(err: unknown): string {
  const text = err instanceof Error ? err.message : String(err)
  return text
    .split('\n')
    .filter((l) => l.trim() !== '')
    .join('; ')
}
