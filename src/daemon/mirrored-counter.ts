// A Prometheus counter whose value is a plain number kept elsewhere (the webhook path's counters,
// the checkpoint thread's, the listener's, the coordinator's): read when scraped, so the hot path
// only adds 1.
import { Counter, type Registry } from 'prom-client'

export function mirroredCounter(registers: Registry[], name: string, help: string, read: () => number): Counter {
  return mirroredLabelledCounter(registers, name, help, [], () => [[{}, read()]])
}

/** The same with labels: one series for each label set `read` returns. */
export function mirroredLabelledCounter(
  registers: Registry[],
  name: string,
  help: string,
  labelNames: readonly string[],
  read: () => Iterable<readonly [Record<string, string>, number]>,
): Counter {
  return new Counter({
    name,
    help,
    labelNames,
    registers,
    collect() {
      this.reset()
      for (const [labels, value] of read()) this.inc(labels, value)
    },
  })
}
