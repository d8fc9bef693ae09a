// A child that watches the config file named on its command line with the system clock and this
// process's own SIGHUP, so a test can send it a real signal. The poll is an hour away and fs.watch
// is off: only the signal makes it load. It prints `ready`, `loaded` at each load and `applied
// <json>` at each apply; at `stop` on stdin it stops the watcher, prints the SIGHUP listeners left
// and ends on its own.
import { readFile } from 'node:fs/promises'
import { ConfigWatch } from '../../src/daemon/config-watch.js'
import { createLogger } from '../../src/log/logger.js'
import { systemClock } from '../../src/model/clock.js'

const file = process.argv[2]
if (file === undefined) throw new Error('usage: config-watch-child.ts <config file>')
const read = async () => JSON.parse(await readFile(file, 'utf8')) as unknown
const watch = new ConfigWatch({
  path: file,
  load: () => (process.stdout.write('loaded\n'), read()),
  apply: (next) => void process.stdout.write(`applied ${JSON.stringify(next)}\n`),
  clock: systemClock,
  logger: createLogger({ level: 'warn' }),
  pollMs: 3_600_000,
  hint: false,
})
await watch.start(await read())
process.stdout.write('ready\n')
process.stdin.setEncoding('utf8').on('data', (d: string) => {
  if (!d.includes('stop')) return
  process.stdin.pause()
  void watch.stop().then(() => process.stdout.write(`stopped, SIGHUP listeners: ${process.listenerCount('SIGHUP')}\n`))
})
