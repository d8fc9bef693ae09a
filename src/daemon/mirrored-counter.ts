// A Prometheus counter whose value is a plain number kept elsewhere (the webhook path's counters,
// the checkpoint thread's, the listener's): read when scraped, so the hot path only adds 1.
import { Counter, type Registry } from 'prom-client'

export function mirroredCounter(registers: Registry[], name: string, help: string, read: () => number): Counter {
  return new Counter({
    name,
    help,
    registers,
    collect() {
      this.reset()
      this.inc(read())
    },
  })
}
