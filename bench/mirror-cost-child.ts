// Child process of mirror-cost.bench.ts: opens N mirrors (writer connection, real migrations), a
// little data in each, registers all with one checkpoint service, then one reader each; prints the
// process's RSS and open descriptors after each step, and the CPU the idle mirrors cost, as JSON.
import { readdirSync, rmSync } from 'node:fs'
import path from 'node:path'
import { setTimeout as sleep } from 'node:timers/promises'
import { createLogger } from '../src/log/logger.js'
import { startCheckpointService } from '../src/store/sqlite/background-checkpoints.js'
import { openMirror, type Mirror } from '../src/store/sqlite/mirror-database.js'
import { tempDir } from '../test/support/temp-mirror.js'

const n = Number(process.argv[2] ?? '1')
const gc = (globalThis as { gc?: () => void }).gc
const sample = () => {
  gc?.()
  return { rss: process.memoryUsage().rss, fds: readdirSync('/proc/self/fd').length }
}

const dir = tempDir('fsm-bench-mirror-cost-')
const start = sample()
const writers: Mirror[] = []
for (let i = 0; i < n; i++) {
  const m = await openMirror(path.join(dir, `mirror-${i}.db`))
  const insert = m.sqlite.prepare(`INSERT INTO webhook_state (key, value, updated_at) VALUES (?, ?, '2026-01-01T00:00:00.000Z')`)
  m.sqlite.transaction(() => {
    for (let k = 0; k < 200; k++) insert.run(`k${k}`, 'x'.repeat(2_000))
  })()
  writers.push(m)
}
const opened = sample()
const service = startCheckpointService({ logger: createLogger({ level: 'error' }) })
const handles = writers.map((m) => service.register(m.sqlite))
// Settled: every mirror checkpointed and then skipped as idle.
while (!handles.every((h) => h.stats().idle > 0)) await sleep(50)
const registered = sample()
const micros = () => handles.reduce((s, h) => s + h.stats().micros, 0)
const cpu = process.cpuUsage()
const checks = micros()
const idleMs = 3_000
await sleep(idleMs)
const idleCpu = process.cpuUsage(cpu)
const checkMicros = micros() - checks
const readers: Mirror[] = []
for (let i = 0; i < n; i++) {
  const r = await openMirror(path.join(dir, `mirror-${i}.db`), { readonly: true })
  r.sqlite.prepare('SELECT count(*), sum(length(value)) FROM webhook_state').get()
  readers.push(r)
}
const withReaders = sample()
await service.stop()
for (const m of [...readers, ...writers]) await m.close()
rmSync(dir, { recursive: true, force: true })
process.stdout.write(
  JSON.stringify({
    n,
    start,
    opened,
    registered,
    withReaders,
    idleCpuMicrosPerSecond: ((idleCpu.user + idleCpu.system) * 1000) / idleMs,
    idleCheckMicrosPerSecond: (checkMicros * 1000) / idleMs,
    errors: handles.reduce((s, h) => s + h.stats().errors, 0),
  }) + '\n',
)
