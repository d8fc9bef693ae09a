// Child process of webhook-intake.bench.ts: serves either the real intake (durable inbox, processor
// applying) or a bare node:http handler that reads the body and answers 200. Prints `{"url"}` when
// listening; on SIGUSR1 (intake only) the backlog left when a phase ended and how long it took to
// apply; on SIGTERM its counters (CPU time included), then exits.
import http from 'node:http'
import fs, { rmSync } from 'node:fs'
import type { AddressInfo } from 'node:net'
import path from 'node:path'
import { createLogger } from '../src/log/logger.js'
import { startBackgroundCheckpoints } from '../src/store/sqlite/background-checkpoints.js'
import { openMirror } from '../src/store/sqlite/mirror-database.js'
import { startIntakeServer } from '../src/webhooks/intake-server.js'
import { createWebhookService } from '../src/webhooks/webhook-service.js'
import { tempDir } from '../test/support/temp-mirror.js'

const [mode = 'intake', secret = 'whsec_bench'] = process.argv.slice(2)

/** CPU this server used since it listened (all threads, user + system): other load on the machine barely moves it. */
let cpuStart: NodeJS.CpuUsage | undefined
const cpuMicros = (): number => {
  const u = process.cpuUsage(cpuStart)
  return u.user + u.system
}

if (mode === 'bare') {
  let served = 0
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = []
    req.on('data', (c: Buffer) => chunks.push(c))
    req.on('end', () => {
      served++
      res.writeHead(200, { 'content-type': 'application/json' }).end('{"received":true}')
    })
  })
  server.keepAliveTimeout = 65_000
  server.listen(0, '127.0.0.1', () => {
    cpuStart = process.cpuUsage()
    process.stdout.write(JSON.stringify({ url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/webhooks` }) + '\n')
  })
  process.once('SIGTERM', () => {
    process.stdout.write(JSON.stringify({ served, cpuMicros: cpuMicros() }) + '\n', () => process.exit(0))
  })
} else {
  const dir = tempDir('fsm-bench-intake-')
  const mirror = await openMirror(path.join(dir, 'mirror.db'))
  // WEBHOOK_BENCH_AUTOCHECKPOINT=0 (diagnosis): no automatic checkpoints on the writer connection,
  // to see what they cost the event loop (each copies the log into the file and syncs both).
  const autocheckpoint = process.env.WEBHOOK_BENCH_AUTOCHECKPOINT
  if (autocheckpoint !== undefined) mirror.sqlite.pragma(`wal_autocheckpoint = ${Number(autocheckpoint)}`)
  // Every sync of the inbox's log, timed: the bench asks (SIGUSR2) from when on to report them, so
  // the steady phase's figure can be read beside what the disk gave during it.
  const syncs: { at: number; ms: number }[] = []
  let reportFrom = Number.POSITIVE_INFINITY
  process.on('SIGUSR2', () => (reportFrom = performance.now()))
  const timedSync = (fd: number, done: (err: NodeJS.ErrnoException | null) => void): void => {
    const at = performance.now()
    fs.fdatasync(fd, (err) => {
      syncs.push({ at, ms: performance.now() - at })
      done(err)
    })
  }
  const service = createWebhookService({
    syncFile: timedSync,
    sqlite: mirror.sqlite,
    logger: createLogger({ level: 'error' }),
    config: {
      webhookSecrets: [secret],
      webhooks: { path: '/webhooks', maxBodyBytes: 1 << 20, maxBacklog: 100_000, rotationGraceHours: 24 },
    },
    process: mode !== 'intake-no-apply',
  })
  service.start()
  // As the daemon does (src/daemon/daemon.ts); WEBHOOK_BENCH_CHECKPOINTS=writer (diagnosis) leaves
  // checkpoints to the writer connection, on the event loop.
  const checkpoints =
    process.env.WEBHOOK_BENCH_CHECKPOINTS === 'writer'
      ? undefined
      : startBackgroundCheckpoints({ sqlite: mirror.sqlite, logger: createLogger({ level: 'error' }) })
  // Informational: the largest backlog of stored but unapplied deliveries (how far applying lags
  // the acks), sampled every 10 ms.
  let peakBacklog = 0
  setInterval(() => (peakBacklog = Math.max(peakBacklog, service.inbox.backlog)), 10).unref()
  // SIGUSR1 (the saturation phase has ended): prints how many deliveries were stored but not yet
  // applied, and how long applying them took with no more arriving, once the backlog is empty.
  process.on('SIGUSR1', () => {
    const started = performance.now()
    const backlog = service.inbox.backlog
    const appliedBefore = service.metrics.processor.applied
    void service.processor.drained().then(() => {
      const drainMs = performance.now() - started
      process.stdout.write(
        JSON.stringify({
          backlog,
          drainMs: Math.round(drainMs),
          appliedPerSecond: drainMs > 0 ? Math.round(((service.metrics.processor.applied - appliedBefore) * 1000) / drainMs) : null,
        }) + '\n',
      )
    })
  })
  const server = await startIntakeServer(service.handler, { path: '/webhooks' })
  cpuStart = process.cpuUsage()
  process.stdout.write(JSON.stringify({ url: server.url }) + '\n')
  process.once('SIGTERM', () => {
    void (async () => {
      await server.close()
      await service.processor.drained()
      await service.stop()
      const checkpointStats = checkpoints?.stats()
      await checkpoints?.stop()
      const inbox = mirror.sqlite.prepare('SELECT count(*) AS rows, count(processed_at) AS applied FROM webhook_inbox').get()
      await mirror.close()
      rmSync(dir, { recursive: true, force: true })
      const steadySyncs = syncs
        .filter((x) => x.at >= reportFrom)
        .map((x) => x.ms)
        .sort((a, b) => a - b)
      const logSyncs = {
        count: steadySyncs.length,
        p99: Number((steadySyncs[Math.floor(steadySyncs.length * 0.99)] ?? 0).toFixed(2)),
        max: Number((steadySyncs.at(-1) ?? 0).toFixed(2)),
        over10: steadySyncs.filter((x) => x > 10).length,
        over100: steadySyncs.filter((x) => x > 100).length,
      }
      process.stdout.write(
        JSON.stringify({
          ...service.metrics.intake,
          inbox,
          peakBacklog,
          checkpoints: checkpointStats,
          logSyncs,
          served: service.metrics.intake.stored + service.metrics.intake.duplicate,
          cpuMicros: cpuMicros(),
        }) + '\n',
        () => process.exit(0),
      )
    })()
  })
}
