// This process's open file descriptors, read from /proc/self/fd (Linux), counted by their target.
import { readdirSync, readlinkSync } from 'node:fs'

/** Descriptors of this process whose target path `matches`. */
export function filesOpen(matches: (target: string) => boolean): number {
  let n = 0
  for (const fd of readdirSync('/proc/self/fd')) {
    try {
      if (matches(readlinkSync(`/proc/self/fd/${fd}`))) n++
    } catch {
      // Closed meanwhile.
    }
  }
  return n
}
