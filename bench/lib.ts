// Shared shape of a benchmark's result, and the machine description every result carries.
import os from 'node:os'

export interface Figure {
  /** What was measured, e.g. "achieved rate / budget". */
  metric: string
  value: number
  unit: string
  /** The goal as text, e.g. ">= 0.97"; empty when the figure is informative only. */
  goal: string
  /** Whether the goal holds; undefined when there is no goal. */
  met?: boolean
  /** The side-by-side baseline measured in the same run, when there is one. */
  baseline?: string
}

export interface BenchResult {
  name: string
  /** What the bench measures, in a word: governor, emulator, mirror, intake, retention, soak. */
  topic: string
  figures: Figure[]
  notes?: string[]
}

export type Bench = () => Promise<BenchResult>

export function machine(): Record<string, string | number> {
  const cpus = os.cpus()
  return {
    cpu: cpus[0]?.model ?? 'unknown',
    cores: cpus.length,
    memoryGiB: Math.round(os.totalmem() / 2 ** 30),
    node: process.version,
    platform: `${os.platform()} ${os.release()}`,
  }
}

/** `a >= b` as a goal check that reads well in the report. */
export function atLeast(value: number, goal: number): { goal: string; met: boolean } {
  return { goal: `>= ${goal}`, met: value >= goal }
}

export function atMost(value: number, goal: number): { goal: string; met: boolean } {
  return { goal: `<= ${goal}`, met: value <= goal }
}

/** Most starts in any half-open window [t, t + windowMs): the figure the rate limit is judged by. */
export function maxInWindow(times: readonly number[], windowMs: number): number {
  const sorted = [...times].sort((a, b) => a - b)
  let best = 0
  let lo = 0
  for (let hi = 0; hi < sorted.length; hi++) {
    while ((sorted[hi] ?? 0) - (sorted[lo] ?? 0) >= windowMs) lo++
    best = Math.max(best, hi - lo + 1)
  }
  return best
}
