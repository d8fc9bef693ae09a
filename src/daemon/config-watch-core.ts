// The pure decisions of the config watcher (config-watch.ts is its shell): what the watched files
// look like (their stats, and content hashes while a stat is new), whether a check loads, that
// loads never overlap, that a load is followed by one more check, and which failures are worth a
// log line. No I/O, no timers.

/** What a check wants: `check` loads when the files' stats changed; `force` (SIGHUP) loads anyway. */
export type Want = 'check' | 'force'

/** The fields of a stat (followed through symlinks) that change when a file is written or replaced. */
export interface FileStat {
  dev: bigint
  ino: bigint
  size: bigint
  mtimeNs: bigint
  ctimeNs: bigint
}

/** A rename over the file or a swap of the `..data` symlink changes the inode; a write in place mtime and ctime. */
export function statKey(s: FileStat): string {
  return `${s.dev}:${s.ino}:${s.size}:${s.mtimeNs}:${s.ctimeNs}`
}

/** A stat is trusted alone once its content was read again this long after it was first seen. */
export const TRUST_AFTER_MS = 1000

/**
 * When a file's stat alone tells that it did not change. A second write within the filesystem's
 * timestamp tick (a few ms) that keeps the size leaves the stat as it was; so after each change the
 * content is hashed at every check until one at least TRUST_AFTER_MS later finds it the same. When
 * nothing changes, a check costs one stat per file.
 */
export class StatTrust {
  readonly #seen = new Map<string, { stat: string; hash: string; since: number; trusted: boolean }>()

  /** The file's token when the stat settles it; undefined when its content must be hashed (then `record`). */
  known(path: string, stat: string): string | undefined {
    const s = this.#seen.get(path)
    return s?.trusted === true && s.stat === stat ? `${stat}#${s.hash}` : undefined
  }

  /** The token of a stat and content hash seen at `now`. */
  record(path: string, stat: string, hash: string, now: number): string {
    const s = this.#seen.get(path)
    if (s?.stat === stat && s.hash === hash) s.trusted ||= now - s.since >= TRUST_AFTER_MS
    else this.#seen.set(path, { stat, hash, since: now, trusted: false })
    return `${stat}#${hash}`
  }

  /** Drops the files no longer watched. */
  keep(paths: readonly string[]): void {
    const watched = new Set(paths)
    for (const p of this.#seen.keys()) if (!watched.has(p)) this.#seen.delete(p)
  }
}

/** One text per state of the watched files: each path with its token (stat and hash, or a stat error's code). */
export function fingerprint(paths: readonly string[], tokens: readonly string[]): string {
  return paths.map((p, i) => `${JSON.stringify(p)}=${tokens[i] ?? 'missing'}`).join('\n')
}

/** How a check ended: nothing changed, a load (applied or found equal), or a failure with its one-line message. */
export type Outcome = { kind: 'unchanged' } | { kind: 'loaded' } | { kind: 'failed'; message: string }

export class ReloadGate {
  #seen: string
  #busy = false
  #current: Want = 'check'
  #queued: Want | undefined
  #lastFailure: string | undefined

  /** `baseline`: the fingerprint of the files the running value was loaded from. */
  constructor(baseline: string) {
    this.#seen = baseline
  }

  get busy(): boolean {
    return this.#busy
  }

  /** Starts a check (true), or queues it behind the one in flight (false; a force outranks a check). */
  begin(want: Want): boolean {
    if (this.#busy) {
      this.#queued = this.#queued === 'force' ? 'force' : want
      return false
    }
    this.#busy = true
    this.#current = want
    return true
  }

  /**
   * The check in flight saw `fp`: true when it must load. The fingerprint is taken before the load,
   * so a change made while the loader reads is seen by the next check, and a bad file that stays
   * as it is does not load again.
   */
  shouldLoad(fp: string): boolean {
    const changed = fp !== this.#seen
    this.#seen = fp
    return changed || this.#current === 'force'
  }

  /**
   * The check in flight ended. `log`: whether its failure deserves a line (a forced load always; a
   * change that fails with the same message as the last failure does not). `next`: the check to run
   * at once (the gate stays busy with it), or undefined (the gate is free). Every load is followed
   * by one check, which catches a change made while it ran.
   */
  end(outcome: Outcome): { log: boolean; next: Want | undefined } {
    let log = false
    if (outcome.kind === 'failed') {
      log = this.#current === 'force' || outcome.message !== this.#lastFailure
      this.#lastFailure = outcome.message
    } else if (outcome.kind === 'loaded') {
      this.#lastFailure = undefined
    }
    const next = this.#queued ?? (outcome.kind === 'unchanged' ? undefined : 'check')
    this.#queued = undefined
    if (next === undefined) this.#busy = false
    else this.#current = next
    return { log, next }
  }
}
