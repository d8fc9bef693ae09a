// A process that takes deliveries and never applies them (processor disabled), for the crash test:
// the parent kills it with SIGKILL after the ack. Prints `{"url": ...}` once it listens.
import { Writable } from 'node:stream'
import { createLogger } from '../../src/log/logger.js'
import { openMirror } from '../../src/store/sqlite/mirror-database.js'
import { startIntakeServer } from '../../src/webhooks/intake-server.js'
import { createWebhookService } from '../../src/webhooks/webhook-service.js'

const [db, secret] = process.argv.slice(2)
if (db === undefined || secret === undefined) throw new Error('usage: intake-child.ts <db> <secret>')
const mirror = await openMirror(db)
const logger = createLogger({ level: 'warn', destination: new Writable({ write: (_c, _e, cb) => cb() }) })
const service = createWebhookService({
  sqlite: mirror.sqlite,
  logger,
  config: { webhookSecrets: [secret], webhooks: { path: '/webhooks', maxBodyBytes: 1 << 20, maxBacklog: 1000, rotationGraceHours: 24 } },
  process: false,
})
service.start()
const server = await startIntakeServer(service.handler, { path: '/webhooks' })
process.stdout.write(JSON.stringify({ url: server.url }) + '\n')
