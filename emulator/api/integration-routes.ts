// Integrations (spec: Integrations; scope integrations:write). Calendar sync triggers run
// synchronously from the stored sync point and answer integer counts; the calendar-a GET is the
// feed of changes since the last successful sync (or `since`), paged by `next_cursor`; accounting
// only answers `queued`. A disconnected integration answers 400 INTEGRATION_NOT_CONNECTED; a
// repeated trigger is accepted.
import type { Doc } from '../core/collection.js'
import { badRequest } from '../core/http-error.js'
import { iso, queryInstant } from '../core/iso-time.js'
import type { EmulatorContext } from '../context.js'
import type { RouteDef } from '../http/router.js'
import type { CalendarChange } from './integration-store.js'

type Calendar = 'calendar-a' | 'calendar-b'

/** Visits changed after `afterMs`, as calendar change records. */
function changesAfter(ctx: EmulatorContext, name: Calendar, afterMs: number): CalendarChange[] {
  return ctx.state.visits
    .sorted('updatedAt', 'asc')
    .filter((v) => v.updatedMs > afterMs)
    .map((v) => ({
      action: v.doc.visitStatus === 'cancelled' ? 'deleted' : v.createdMs > afterMs ? 'created' : 'updated',
      visitId: v.id,
      externalEventId: `${name}_${v.id.slice(-12)}`,
      changedAt: iso(v.updatedMs),
      changedMs: v.updatedMs,
    }))
}

function sync(ctx: EmulatorContext, name: Calendar): Doc {
  const it = ctx.integrations.connected(name)
  const changes = changesAfter(ctx, name, it.syncPointMs)
  const now = ctx.clock.now()
  it.syncPointMs = now
  it.lastSyncAt = iso(now)
  it.changes.push(...changes)
  const count = (a: string) => changes.filter((c) => c.action === a).length
  return { success: true, data: { created: count('created'), updated: count('updated'), deleted: count('deleted'), errors: 0 } }
}

function feed(ctx: EmulatorContext, name: Calendar, q: URLSearchParams): Doc {
  const it = ctx.integrations.connected(name)
  const since = q.get('since')
  const afterMs = since === null || since === '' ? it.syncPointMs : queryInstant('since', since, undefined) - 1
  const cursor = q.get('cursor')
  let offset = 0
  if (cursor !== null && cursor !== '') {
    offset = Number(Buffer.from(cursor, 'base64url').toString('utf8').replace(/^o:/, ''))
    if (!Number.isInteger(offset) || offset < 0) throw badRequest(`Invalid cursor "${cursor}"`)
  }
  const limit = Math.min(100, Math.max(1, Number.parseInt(q.get('limit') ?? '50', 10) || 50))
  const all = changesAfter(ctx, name, afterMs)
  const data = all.slice(offset, offset + limit).map(({ changedMs: _ms, ...c }) => c)
  const nextCursor = offset + limit < all.length ? Buffer.from(`o:${offset + limit}`).toString('base64url') : null
  return { success: true, data, next_cursor: nextCursor }
}

export function integrationRoutes(ctx: EmulatorContext): RouteDef[] {
  const scope = 'integrations:write'
  return [
    {
      method: 'POST',
      path: '/api/v1/integrations/calendar-a/sync',
      family: 'v1',
      scope,
      handler: () => ({ body: sync(ctx, 'calendar-a') }),
    },
    {
      method: 'GET',
      path: '/api/v1/integrations/calendar-a/sync',
      family: 'v1',
      scope,
      handler: (req) => ({ body: feed(ctx, 'calendar-a', req.query) }),
    },
    {
      method: 'GET',
      path: '/api/v1/integrations/calendar-a/status',
      family: 'v1',
      scope,
      handler: () => {
        const it = ctx.integrations.get('calendar-a')
        // Exactly these four keys (spec).
        return {
          body: {
            success: true,
            data: {
              connected: it.connected,
              email: it.connected ? it.email : null,
              lastSyncAt: it.lastSyncAt,
              calendarId: it.connected ? it.calendarId : null,
            },
          },
        }
      },
    },
    {
      method: 'POST',
      path: '/api/v1/integrations/calendar-b/sync',
      family: 'v1',
      scope,
      handler: () => ({ body: sync(ctx, 'calendar-b') }),
    },
    // Spec: "Listed as a route; behaviour: not shown". Resolved: the same feed as calendar-a's.
    {
      method: 'GET',
      path: '/api/v1/integrations/calendar-b/sync',
      family: 'v1',
      scope,
      handler: (req) => ({ body: feed(ctx, 'calendar-b', req.query) }),
    },
    {
      method: 'POST',
      path: '/api/v1/integrations/accounting/sync',
      family: 'v1',
      scope,
      handler: () => {
        ctx.integrations.connected('accounting')
        return { body: { success: true, data: { message: 'Accounting sync queued', status: 'queued' } } }
      },
    },
    // The calendar service's push receiver: unauthenticated by design, not for integrators.
    { method: 'POST', path: '/api/v1/integrations/calendar-a/webhook', family: 'open', handler: () => ({ body: { success: true } }) },
  ]
}
