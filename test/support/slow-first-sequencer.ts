// Runs the longest files first. Without a cache of durations (a fresh clone, as CI runs) vitest
// orders files by size, so a two-minute file could start last and run alone at the end while the
// other workers idle. Each pattern names files that take a minute or more on 2 cores.
import { BaseSequencer, type TestSpecification } from 'vitest/node'

const SLOW_FIRST: readonly RegExp[] = [
  /test\/soak\//,
  /cli\/demo\.test\.ts$/,
  /coordination\/replica-ops\.test\.ts$/,
  /coordination\/replicas-run\.test\.ts$/,
  /cli\/many-accounts\.test\.ts$/,
  /cli\/query-streaming\.test\.ts$/,
]

export class SlowFirstSequencer extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const sorted = await super.sort(files)
    const rank = (f: TestSpecification) => {
      const i = SLOW_FIRST.findIndex((r) => r.test(f.moduleId))
      return i < 0 ? SLOW_FIRST.length : i
    }
    return sorted
      .map((f, i) => ({ f, i }))
      .sort((a, b) => rank(a.f) - rank(b.f) || a.i - b.i)
      .map(({ f }) => f)
  }
}
