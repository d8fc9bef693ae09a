// `fsm-sync webhooks register --url URL | list | deliveries [--status S]`: registers this daemon's
// endpoint for all seventeen events and stores the secret in the secrets file beside the mirror
// (0600, never printed); lists the
// account's endpoints; lists delivery records of the registered endpoint.
import type { Command, Io } from './command.js'
import { withApp } from './with-app.js'
import type { App } from '../daemon/create-app.js'
import { WEBHOOK_EVENTS } from '../webhooks/events.js'
import { DELIVERY_STATUSES, listDeliveries, listEndpoints, registerEndpoint, type DeliveryStatus } from '../webhooks/registration.js'
import { SecretStore } from '../webhooks/secret-store.js'

export const webhooksCommand: Command = {
  command: 'webhooks <action>',
  describe: 'register --url URL | list | deliveries [--status S]',
  builder: (y) =>
    y
      .positional('action', { choices: ['register', 'list', 'deliveries'] as const })
      .option('url', { type: 'string', describe: 'with register: the public https URL of this daemon (its webhooks path included)' })
      .option('status', { choices: DELIVERY_STATUSES, describe: 'with deliveries: only records in this state' })
      .option('endpoint', { type: 'string', describe: 'with deliveries: an endpoint id (default: the one registered from this mirror)' })
      .option('limit', { type: 'number', default: 100, describe: 'with deliveries: most records to print' }),
  run: (args, ctx) => {
    const action = args.action as 'register' | 'list' | 'deliveries'
    if (action === 'register' && (typeof args.url !== 'string' || args.url === '')) {
      ctx.io.stderr.write('fsm-sync webhooks register: --url is required (the public https address upstream deliveries are sent to)\n')
      return Promise.resolve(2)
    }
    return withApp(ctx, (app, signal) => {
      // The mirror's write lock serialises registrations: two at once must not lose one's secret.
      const store = SecretStore.forMirror(app.mirror.path, { exclusive: (work) => app.mirror.sqlite.transaction(work).immediate() })
      if (action === 'register') return register(app, store, args.url as string, ctx.io)
      if (action === 'list') return list(app, store, ctx.io, signal)
      const endpoint = (args.endpoint as string | undefined) ?? store.current()?.endpointId
      if (endpoint === undefined) {
        ctx.io.stderr.write(
          'fsm-sync webhooks deliveries: no endpoint registered from this mirror; pass --endpoint ID (see `fsm-sync webhooks list`)\n',
        )
        return Promise.resolve(1)
      }
      return deliveries(app, endpoint, args.status as DeliveryStatus | undefined, Number(args.limit), ctx.io, signal)
    })
  },
}

async function register(app: App, store: SecretStore, url: string, io: Io): Promise<number> {
  const r = await registerEndpoint(app.client, store, url, () => app.clock.now())
  const what = {
    created: `registered endpoint ${r.endpointId} for ${r.url} (${WEBHOOK_EVENTS.length} events)`,
    recreated: `the previous endpoint was gone upstream; registered endpoint ${r.endpointId} for ${r.url} (${WEBHOOK_EVENTS.length} events)`,
    updated: `updated endpoint ${r.endpointId} to ${r.url} (${WEBHOOK_EVENTS.length} events)`,
    unchanged: `endpoint ${r.endpointId} already delivers to ${r.url} (${WEBHOOK_EVENTS.length} events)`,
  }[r.action]
  const lines = [what, `its signing secret is stored in ${store.file} (readable by its owner only) and is never printed`]
  if (r.rotated) lines.push(`a new secret was issued; the previous one stays accepted for ${app.config.webhooks.rotationGraceHours} h`)
  io.stdout.write(lines.join('\n') + '\n')
  return 0
}

async function list(app: App, store: SecretStore, io: Io, signal: AbortSignal): Promise<number> {
  const endpoints = await listEndpoints(app.client, signal)
  const ours = store.current()?.endpointId
  const rows = endpoints.map((e) => [
    e.id,
    e.isActive === false ? 'paused' : 'active',
    String(e.events?.length ?? ''),
    e.id === ours ? 'yes' : '',
    e.url,
  ])
  io.stdout.write(
    table(['id', 'state', 'events', 'this mirror', 'url'], rows) + (endpoints.length === 0 ? 'no endpoints registered\n' : ''),
  )
  return 0
}

async function deliveries(
  app: App,
  endpoint: string,
  status: DeliveryStatus | undefined,
  limit: number,
  io: Io,
  signal: AbortSignal,
): Promise<number> {
  const records = await listDeliveries(app.client, endpoint, { status, max: limit, signal })
  const rows = records.map((d) => [
    d.id,
    d.event,
    d.status,
    String(d.attempts ?? ''),
    String(d.responseCode ?? ''),
    d.createdAt ?? '',
    d.lastAttemptAt ?? '',
    (d.errorMessage ?? '').slice(0, 60),
  ])
  io.stdout.write(
    table(['id', 'event', 'status', 'attempts', 'code', 'created', 'last attempt', 'error'], rows) +
      (records.length === 0 ? 'no delivery records\n' : ''),
  )
  return 0
}

function table(head: string[], rows: string[][]): string {
  const widths = head.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? '').length)))
  const line = (r: string[]) =>
    r
      .map((c, i) => c.padEnd(widths[i] ?? 0))
      .join('  ')
      .trimEnd()
  return [line(head), ...rows.map(line)].join('\n') + '\n'
}
