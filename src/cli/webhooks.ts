// `fsm-sync webhooks register --url URL | list | deliveries [--status S]` (each with `--json`, and
// `--account ID`): registers this daemon's endpoint (the account's path) for all seventeen events and
// stores the secret in the secrets file beside the account's mirror (0600, never printed); lists the
// account's endpoints; lists delivery records of the registered endpoint.
import type { Args, Command, CommandContext, Io } from './command.js'
import { DEFAULT_ACCOUNT_ID } from '../config/accounts.js'
import { withApp } from './with-app.js'
import { CommandError, jsonOption, printResult } from './output.js'
import { ApiError } from '../api/errors.js'
import type { App } from '../daemon/create-app.js'
import { accountWebhookPath } from '../webhooks/account-paths.js'
import { WEBHOOK_EVENTS } from '../webhooks/events.js'
import { DELIVERY_STATUSES, listDeliveries, listEndpoints, registerEndpoint, type DeliveryStatus } from '../webhooks/registration.js'
import { SecretStore } from '../webhooks/secret-store.js'

export const webhooksCommand: Command = {
  builder: (y) =>
    jsonOption(y)
      .positional('action', { choices: ['register', 'list', 'deliveries'] as const })
      .option('url', {
        type: 'string',
        describe: "with register: the public https URL of this daemon (with no path: the account's webhooks path is added)",
      })
      .option('status', { choices: DELIVERY_STATUSES, describe: 'with deliveries: only records in this state' })
      .option('endpoint', { type: 'string', describe: 'with deliveries: an endpoint id (default: the one registered from this mirror)' })
      .option('limit', { type: 'number', default: 100, describe: 'with deliveries: most records to print' }),
  run: (args, ctx) => {
    const action = args.action as 'register' | 'list' | 'deliveries'
    if (action === 'register' && (typeof args.url !== 'string' || args.url === ''))
      return Promise.reject(
        new CommandError('webhooks register: --url is required (the public https address upstream deliveries are sent to)', 2),
      )
    return withApp(ctx, (app, signal) => {
      // The mirror's write lock serialises registrations: two at once must not lose one's secret.
      const store = SecretStore.forMirror(app.mirror.path, { exclusive: (work) => app.mirror.sqlite.transaction(work).immediate() })
      if (action === 'register') return register(app, store, receiverUrl(args.url as string, ctx), args, ctx.io)
      if (action === 'list') return list(app, store, args, ctx.io, signal)
      const endpoint = (args.endpoint as string | undefined) ?? store.current()?.endpointId
      if (endpoint === undefined)
        throw new CommandError(
          'webhooks deliveries: no endpoint registered from this mirror; pass --endpoint ID (see `fsm-sync webhooks list`)',
        )
      return deliveries(app, endpoint, args.status as DeliveryStatus | undefined, Number(args.limit), args, ctx.io, signal)
    })
  },
}

async function register(app: App, store: SecretStore, url: string, args: Args, io: Io): Promise<number> {
  let r
  try {
    r = await registerEndpoint(app.client, store, url, () => app.clock.now())
  } catch (err) {
    throw httpsHint(err, url)
  }
  const what = {
    created: `registered endpoint ${r.endpointId} for ${r.url} (${WEBHOOK_EVENTS.length} events)`,
    recreated: `the previous endpoint was gone upstream; registered endpoint ${r.endpointId} for ${r.url} (${WEBHOOK_EVENTS.length} events)`,
    updated: `updated endpoint ${r.endpointId} to ${r.url} (${WEBHOOK_EVENTS.length} events)`,
    unchanged: `endpoint ${r.endpointId} already delivers to ${r.url} (${WEBHOOK_EVENTS.length} events)`,
  }[r.action]
  const lines = [what, `its signing secret is stored in ${store.file} (readable by its owner only) and is never printed`]
  if (r.rotated) lines.push(`a new secret was issued; the previous one stays accepted for ${app.config.webhooks.rotationGraceHours} h`)
  printResult(args, io, { ...r, events: WEBHOOK_EVENTS.length, secretsFile: store.file }, () => lines.join('\n') + '\n')
  return 0
}

/**
 * The account's own webhook path on the daemon (src/webhooks/account-paths.ts): `<webhooks.path>/<id>`,
 * `webhooks.path` itself for `default`. A --url with no path gets it; one ending in another
 * account's path is refused (its deliveries would be checked with that account's secrets and
 * refused); any other path is kept, as a proxy in between may rewrite it, with a warning when the
 * config lists accounts.
 */
function receiverUrl(given: string, ctx: CommandContext): string {
  const { id, config } = ctx.account()
  const own = id === DEFAULT_ACCOUNT_ID ? config.webhooks.path : accountWebhookPath(config.webhooks.path, id)
  let url: URL
  try {
    url = new URL(given)
  } catch {
    return given
  }
  if (url.pathname === '' || url.pathname === '/') {
    url.pathname = own
    return url.href
  }
  const path = url.pathname.replace(/\/+$/, '')
  const other = ctx.accounts().accounts.find((a) => a.id !== id && path.endsWith(accountWebhookPath(config.webhooks.path, a.id)))
  if (other !== undefined)
    throw new CommandError(
      `webhooks register: --url ${given} ends with the path of account ${other.id}; account ${id} takes its deliveries at ${own}`,
      2,
    )
  if (ctx.accounts().listed && !path.endsWith(own))
    ctx.io.stderr.write(
      `fsm-sync: warning: the daemon takes account ${id}'s deliveries at ${own}; make sure ${url.pathname} reaches it (a proxy may rewrite the path)\n`,
    )
  return given
}

/**
 * The API takes only https:// receivers (spec: Webhook management). Refused an http:// URL, say how
 * to get one, and how the local emulator accepts a loopback http:// receiver.
 */
function httpsHint(err: unknown, url: string): unknown {
  if (!(err instanceof ApiError) || err.status !== 400 || !url.startsWith('http://')) return err
  return new CommandError(
    `${err.message}. The API delivers only to https:// URLs: put the daemon's webhook path behind a TLS-terminating proxy and register that address. ` +
      'Against the local emulator, start it with `fsm-sync emulator --allow-http-webhooks` to let it deliver to http://127.0.0.1 or http://localhost (emulator/README.md).',
  )
}

async function list(app: App, store: SecretStore, args: Args, io: Io, signal: AbortSignal): Promise<number> {
  const endpoints = await listEndpoints(app.client, signal)
  const ours = store.current()?.endpointId
  const rows = endpoints.map((e) => [
    e.id,
    e.isActive === false ? 'paused' : 'active',
    String(e.events?.length ?? ''),
    e.id === ours ? 'yes' : '',
    e.url,
  ])
  const doc = { endpoints: endpoints.map((e) => ({ ...e, thisMirror: e.id === ours })) }
  printResult(
    args,
    io,
    doc,
    () => table(['id', 'state', 'events', 'this mirror', 'url'], rows) + (endpoints.length === 0 ? 'no endpoints registered\n' : ''),
  )
  return 0
}

async function deliveries(
  app: App,
  endpoint: string,
  status: DeliveryStatus | undefined,
  limit: number,
  args: Args,
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
  printResult(
    args,
    io,
    { endpoint, deliveries: records },
    () =>
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
