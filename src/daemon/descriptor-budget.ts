// The file descriptors a daemon's accounts need against the process's soft limit (`ulimit -n`),
// told once at start (docs/accounts.md, Memory and file descriptors). The figures are src/store/README.md's
// "What an open mirror costs", plus the connections to the upstream, which the accounts share.
import { readFileSync } from 'node:fs'
import { SHARED_CONNECTIONS } from '../api/api-client.js'
import type { Logger } from '../log/logger.js'

/**
 * A single account: its mirror's writer (database, -wal, -shm) and checkpoint connection (2 more),
 * and about 3 connections to the upstream while it syncs.
 */
export const DESCRIPTORS_PER_ACCOUNT = 8
/** The process: stdio, the event loop, the thread pool, the listener, the checkpoint and intake threads, and room for probes and webhook senders. */
export const DESCRIPTORS_BASE = 100
/**
 * Sockets to the upstream, for all the accounts of one origin: they share the process's pool of it
 * (api-client.ts, SHARED_CONNECTIONS); a parked account holds none of its own.
 */
export const UPSTREAM_SOCKETS = SHARED_CONNECTIONS

/**
 * One account keeps its mirror open (DESCRIPTORS_PER_ACCOUNT); with more, idle mirrors are parked
 * (docs/accounts.md): the shared upstream sockets, and room for MIN_OPEN_MIRRORS open at once.
 * The number of accounts itself costs no descriptor.
 */
export function descriptorsNeeded(accounts: number): number {
  if (accounts <= 1) return DESCRIPTORS_BASE + DESCRIPTORS_PER_ACCOUNT * accounts
  return DESCRIPTORS_BASE + UPSTREAM_SOCKETS + DESCRIPTORS_PER_OPEN_MIRROR * MIN_OPEN_MIRRORS
}

/** The soft and hard "Max open files" of a /proc/<pid>/limits text; undefined when absent. */
export function parseOpenFileLimits(text: string): { soft: number; hard: number } | undefined {
  const line = text.split('\n').find((l) => l.startsWith('Max open files'))
  const m = line === undefined ? null : /^Max open files\s+(\d+|unlimited)\s+(\d+|unlimited)/.exec(line)
  if (m === null) return undefined
  const value = (v: string) => (v === 'unlimited' ? Number.POSITIVE_INFINITY : Number(v))
  return { soft: value(m[1]!), hard: value(m[2]!) }
}

const readProcLimits = () => readFileSync('/proc/self/limits', 'utf8')

/** The process's open-file limits; undefined where they cannot be read (not Linux). */
function readOpenFileLimits(readLimits: () => string): { soft: number; hard: number } | undefined {
  try {
    return parseOpenFileLimits(readLimits())
  } catch {
    return undefined
  }
}

/** The one line to log when `accounts` need more than the soft limit allows; undefined when they fit. */
export function descriptorShortfall(accounts: number, limits: { soft: number; hard: number }): string | undefined {
  const need = descriptorsNeeded(accounts)
  if (need <= limits.soft) return undefined
  const raise =
    need <= limits.hard
      ? `raise it up to the hard limit (${limits.hard}) before starting: \`ulimit -n ${need}\`, LimitNOFILE=${need} (systemd) or --ulimit nofile=${need}:${need} (Docker)`
      : `the hard limit (${limits.hard}) is below that too: raise both, e.g. LimitNOFILE=${need} (systemd) or --ulimit nofile=${need}:${need} (Docker)`
  return (
    `${accounts} accounts need about ${need} file descriptors (${describe(accounts)}), ` +
    `but the soft limit (ulimit -n) is ${limits.soft}: accounts past it fail to open ("too many open files") and are retried; ${raise}`
  )
}

function describe(accounts: number): string {
  if (accounts <= 1) return `${DESCRIPTORS_PER_ACCOUNT} for the account plus ${DESCRIPTORS_BASE}`
  return `${DESCRIPTORS_PER_OPEN_MIRROR * MIN_OPEN_MIRRORS} for the fewest open mirrors (${MIN_OPEN_MIRRORS}; idle ones are parked), ${UPSTREAM_SOCKETS} for the upstream connections the accounts share, plus ${DESCRIPTORS_BASE}; each mirror open beyond those takes ${DESCRIPTORS_PER_OPEN_MIRROR} more`
}

/** Logs the shortfall once (Linux: reads /proc/self/limits; elsewhere nothing is checked). */
export function checkDescriptors(accounts: number, logger: Logger, readLimits: () => string = readProcLimits): void {
  const limits = readOpenFileLimits(readLimits)
  if (limits === undefined) return
  const shortfall = descriptorShortfall(accounts, limits)
  if (shortfall === undefined) logger.debug({ accounts, need: descriptorsNeeded(accounts), soft: limits.soft }, 'file descriptors suffice')
  else logger.warn({ accounts, need: descriptorsNeeded(accounts), soft: limits.soft, hard: limits.hard }, shortfall)
}

/** Descriptors of an open mirror: the writer's database, -wal and -shm, the checkpoint thread's database and -wal. */
export const DESCRIPTORS_PER_OPEN_MIRROR = 5
/** Open mirrors the parking never goes below (accounts at work keep theirs open whatever the budget). */
export const MIN_OPEN_MIRRORS = 16

let softLimit: number | undefined

/** The soft `ulimit -n` of this process, read once (Linux); infinite when it cannot be read. */
export function openFileLimit(readLimits: () => string = readProcLimits): number {
  softLimit ??= readOpenFileLimits(readLimits)?.soft ?? Number.POSITIVE_INFINITY
  return softLimit
}

/**
 * Mirrors the accounts may keep open within `soft` descriptors, the process's and the upstream
 * sockets set aside: the same for any number of accounts (parked ones hold nothing).
 */
export function openMirrorBudget(_accounts: number, soft: number = openFileLimit()): number {
  const room = soft - DESCRIPTORS_BASE - UPSTREAM_SOCKETS
  return Math.max(MIN_OPEN_MIRRORS, Math.floor(room / DESCRIPTORS_PER_OPEN_MIRROR))
}

/**
 * Open mirrors at most, whatever the descriptors allow: the memory budget. An open mirror costs
 * about 1.4 MiB (src/store/README.md, "What an open mirror costs"), and its memory is not given
 * back once closed, so the most ever open at once sets the process's size: 128 keep SQLite's part
 * near 180 MiB, and leave room beside the first sweeps' turns (FIRST_SWEEPS_AT_ONCE) for the rest.
 */
export const MAX_OPEN_MIRRORS = 128

/** The hard cap on open mirrors (mirror-slots.ts): the descriptor budget, at most MAX_OPEN_MIRRORS. */
export function openMirrorCap(accounts: number, soft: number = openFileLimit(), max: number = MAX_OPEN_MIRRORS): number {
  return Math.min(max, openMirrorBudget(accounts, soft))
}
