// Intake on 127.0.0.1 port 0 over a real temp-file mirror, a signed-delivery client, and log capture
// (to check that no secret or signature is ever written).
import { Writable } from 'node:stream'
import { request } from 'undici'
import { createLogger } from '../../src/log/logger.js'
import { startIntakeServer, type IntakeServer } from '../../src/webhooks/intake-server.js'
import { sign } from '../../src/webhooks/signature.js'
import { createWebhookService, type WebhookService, type WebhookServiceOptions } from '../../src/webhooks/webhook-service.js'
import { tempMirror, type TempMirror } from './temp-mirror.js'

export const SECRET = 'whsec_test_current_0123456789abcdef'

export interface WebhookEnv {
  mirror: TempMirror
  service: WebhookService
  server: IntakeServer
  logs: () => string
  /** Sends a raw POST; headers given as undefined are left out. */
  post(body: Buffer | string, headers: Record<string, string | undefined>): Promise<{ status: number; body: string }>
  /** Signs and sends a delivery with the given id, event and body. */
  deliver(id: string, event: string, body: Buffer | string | object, secret?: string): Promise<{ status: number; body: string }>
  rows(sql: string, ...params: unknown[]): Record<string, unknown>[]
  inboxCount(): number
  close(): Promise<void>
}

export interface WebhookEnvOptions extends Partial<Omit<WebhookServiceOptions, 'sqlite' | 'logger' | 'config'>> {
  envSecrets?: string[]
  maxBodyBytes?: number
  maxBacklog?: number
  rotationGraceHours?: number
  mirror?: TempMirror
}

export async function webhookEnv(options: WebhookEnvOptions = {}): Promise<WebhookEnv> {
  const mirror = options.mirror ?? (await tempMirror())
  const lines: string[] = []
  const logger = createLogger({
    level: 'debug',
    destination: new Writable({ write: (c: Buffer, _e, cb) => (lines.push(c.toString('utf8')), cb()) }),
  })
  const { envSecrets, maxBodyBytes, maxBacklog, rotationGraceHours, mirror: _m, ...rest } = options
  const service = createWebhookService({
    ...rest,
    sqlite: mirror.sqlite,
    logger,
    config: {
      webhookSecrets: envSecrets ?? [SECRET],
      webhooks: {
        path: '/webhooks',
        maxBodyBytes: maxBodyBytes ?? 1024 * 1024,
        maxBacklog: maxBacklog ?? 100_000,
        rotationGraceHours: rotationGraceHours ?? 24,
      },
    },
  })
  service.start()
  const server = await startIntakeServer(service.handler, { path: '/webhooks' })
  const post = async (body: Buffer | string, headers: Record<string, string | undefined>) => {
    const h: Record<string, string> = { 'content-type': 'application/json' }
    for (const [k, v] of Object.entries(headers)) if (v !== undefined) h[k] = v
    const res = await request(server.url, { method: 'POST', headers: h, body })
    return { status: res.statusCode, body: await res.body.text() }
  }
  return {
    mirror,
    service,
    server,
    logs: () => lines.join(''),
    post,
    deliver: (id, event, body, secret = SECRET) => {
      const bytes = Buffer.isBuffer(body) ? body : Buffer.from(typeof body === 'string' ? body : JSON.stringify(body))
      return post(bytes, { 'x-service-event': event, 'x-service-delivery': id, 'x-service-signature': sign(secret, bytes) })
    },
    rows: (sql, ...params) => mirror.sqlite.prepare(sql).all(...params) as Record<string, unknown>[],
    inboxCount: () => mirror.sqlite.prepare('SELECT count(*) FROM webhook_inbox').pluck().get() as number,
    close: async () => {
      await server.close()
      await service.stop()
      if (options.mirror === undefined) await mirror.dispose()
    },
  }
}

export const T = (s: number): string => new Date(Date.UTC(2026, 0, 1, 0, 0, s)).toISOString()

export function jobPayload(id: string, updatedAt: string, extra: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    id,
    jobNumber: `J-${id.slice(-4)}`,
    clientId: 'c'.repeat(24),
    jobStatus: 'scheduled',
    assignedToTeams: ['u1'],
    createdAt: T(0),
    updatedAt,
    ...extra,
  }
}

export const hex = (n: number): string => n.toString(16).padStart(24, '0')
