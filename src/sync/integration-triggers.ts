// Integration triggers (spec: Integrations). Each POST runs once at governor priority 'trigger'
// and is recorded as a `trigger` run in sync_runs with the counts the API returned. A POST is
// never retried by the client (no idempotency header exists), and nothing here retries either:
// one tick fires at most one trigger. INTEGRATION_NOT_CONNECTED becomes one clear error.
import { TRIGGERS } from '../../connectors/integrations.js'
import { ApiError } from '../api/errors.js'
import type { ApiClient } from '../api/api-client.js'
import type { RunResult, SyncContext } from './sync-context.js'
import { trackedRun } from './tracked-run.js'

export type IntegrationName = (typeof TRIGGERS)[number]['name']
/** The integrations with a sync trigger, as the registry declares them. */
export const INTEGRATIONS: readonly IntegrationName[] = TRIGGERS.map((t) => t.name)

export function isIntegrationName(s: string): s is IntegrationName {
  return (INTEGRATIONS as readonly string[]).includes(s)
}

export class IntegrationNotConnectedError extends Error {
  readonly code = 'INTEGRATION_NOT_CONNECTED' as const
  constructor(
    readonly integration: IntegrationName,
    options: { cause: unknown },
  ) {
    super(
      `${integration} is not connected (400 INTEGRATION_NOT_CONNECTED on POST /api/v1/integrations/${integration}/sync): ` +
        `connect it, or renew its token, in the account's integration settings; scheduled triggers go on at their next tick`,
      options,
    )
    this.name = 'IntegrationNotConnectedError'
  }
}

export interface TriggerResult extends RunResult {
  notConnected: boolean
}

/** The counts a calendar trigger answers, or accounting's `{message, status}`; other keys are dropped. */
export function triggerDetails(data: unknown): Record<string, unknown> {
  const d = typeof data === 'object' && data !== null ? (data as Record<string, unknown>) : {}
  const out: Record<string, unknown> = {}
  for (const key of ['created', 'updated', 'deleted', 'errors', 'status', 'message']) if (key in d) out[key] = d[key]
  return out
}

/** Rows the trigger changed upstream, for sync_runs.rows: created + updated + deleted (0 for accounting). */
function changedCount(details: Record<string, unknown>): number {
  return ['created', 'updated', 'deleted'].reduce((n, k) => n + (typeof details[k] === 'number' ? details[k] : 0), 0)
}

export async function runTrigger(ctx: SyncContext, client: Pick<ApiClient, 'post'>, name: IntegrationName): Promise<TriggerResult> {
  let notConnected = false
  const result = await trackedRun(ctx, 'trigger', name, async ({ source }) => {
    try {
      const res = await client.post(
        TRIGGERS.find((t) => t.name === name)!.route,
        undefined,
        source.counted({ priority: 'trigger', signal: ctx.signal }),
      )
      const details = triggerDetails(res.data)
      return { rows: changedCount(details), details }
    } catch (err) {
      if (err instanceof ApiError && err.apiCode === 'INTEGRATION_NOT_CONNECTED') {
        notConnected = true
        throw new IntegrationNotConnectedError(name, { cause: err })
      }
      throw err
    }
  })
  return { ...result, notConnected }
}

export function formatTrigger(r: TriggerResult): string {
  if (r.outcome !== 'success') return `${r.stream}: failed: ${r.error ?? r.outcome}\n`
  const d = r.details ?? {}
  if (typeof d.status === 'string') return `${r.stream}: ${d.status}${typeof d.message === 'string' ? ` (${d.message})` : ''}\n`
  const n = (k: string) => (typeof d[k] === 'number' ? d[k] : 0)
  return `${r.stream}: created ${n('created')}, updated ${n('updated')}, deleted ${n('deleted')}, errors ${n('errors')}\n`
}
