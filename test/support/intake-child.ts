// A process that takes deliveries and never applies them (processor disabled), for the crash tests:
// the parent kills it with SIGKILL after the ack. Prints `{"url": ...}` once it listens. With a
// journal file (the process's intake journal, account `a`) and a moment: `before-relay` never relays
// the journal into the inbox; `after-inbox-commit` relays, prints `{"relayed": n}` once the inbox
// holds them, and stops there, before the journal lets them go.
import { Writable } from 'node:stream'
import { createLogger } from '../../src/log/logger.js'
import { systemClock } from '../../src/model/clock.js'
import { openMirror } from '../../src/store/sqlite/mirror-database.js'
import { IntakeJournal } from '../../src/webhooks/intake-journal.js'
import { startIntakeServer } from '../../src/webhooks/intake-server.js'
import { createWebhookService } from '../../src/webhooks/webhook-service.js'

const [db, secret, journalFile, moment] = process.argv.slice(2)
if (db === undefined || secret === undefined)
  throw new Error('usage: intake-child.ts <db> <secret> [<journal> before-relay|after-inbox-commit]')
const mirror = await openMirror(db)
const logger = createLogger({ level: 'warn', destination: new Writable({ write: (_c, _e, cb) => cb() }) })
const journal =
  journalFile === undefined
    ? undefined
    : new IntakeJournal({
        file: journalFile,
        logger,
        clock: systemClock,
        ...(moment === 'before-relay' ? { relayDelayMs: 3_600_000 } : {}),
        afterInboxCommit: async (account) => {
          const n = mirror.sqlite.prepare('SELECT count(*) FROM webhook_inbox').pluck().get() as number
          process.stdout.write(JSON.stringify({ relayed: n, account }) + '\n')
          await new Promise(() => undefined)
        },
      })
const service = createWebhookService({
  sqlite: mirror.sqlite,
  logger,
  config: { webhookSecrets: [secret], webhooks: { path: '/webhooks', maxBodyBytes: 1 << 20, maxBacklog: 1000, rotationGraceHours: 24 } },
  process: false,
  ...(journal === undefined ? {} : { journal: { journal, accountId: 'a' } }),
})
service.start()
const server = await startIntakeServer(service.handler, { path: '/webhooks' })
process.stdout.write(JSON.stringify({ url: server.url }) + '\n')
