// Loaded into a CLI child with `--import`: as the process exits, it writes its peak resident set
// (VmHWM, read from /proc before the process is gone) to stderr, for tests that bound memory.
import { readFileSync, writeSync } from 'node:fs'

export const PEAK_RSS_MARK = 'fsm-test-peak-rss-kb'

process.on('exit', () => {
  const kb = /VmHWM:\s+(\d+)\s+kB/.exec(readFileSync('/proc/self/status', 'utf8'))?.[1] ?? 'unknown'
  writeSync(2, `\n${PEAK_RSS_MARK} ${kb}\n`)
})
