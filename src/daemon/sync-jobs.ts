// What each schedule does. Jobs that write record streams (sweep, reconcile, the delivery-gap
// sweep) take one serialQueue in turn, so a stream is never walked by two runs at once; reference data
// and triggers touch other tables and the upstream only, and run beside them. Everything shares
// the app's one governor.
import { SCHEDULE_CONTINUOUS, type Config } from '../config/index.js'
import { checkpointPassive } from '../store/sqlite/mirror-health.js'
import type { RunResult } from '../sync/sync-context.js'
import { selectStreams, selectWithin } from '../../connectors/selection.js'
import { KEY_REJECTED, runReconciliations, runSweeps } from '../sync/sync-engine.js'
import type { DeliveryGapCheck } from '../webhooks/delivery-gaps.js'
import type { DaemonMetrics } from './daemon-metrics.js'
import { pollCalendarStatus } from '../sync/calendar-status.js'
import type { IntegrationName } from '../sync/integration-triggers.js'
import { RUNNERS } from '../sync/stream-runners.js'
import type { App } from './create-app.js'
import { retentionJob } from './retention-job.js'
import type { JobDefinition } from './scheduler.js'

/** A serial queue: one piece of work at a time, callers served in the order they came. */
export class SerialQueue {
  #tail: Promise<unknown> = Promise.resolve()
  #queued = 0

  /** `around` wraps each work in its turn (the hold of the mirror's slot, mirror-slots.ts). */
  constructor(private readonly around: <T>(work: () => Promise<T>) => Promise<T> = (work) => work()) {}

  /** Work queued or running (the parking of idle mirrors waits for none). */
  get busy(): boolean {
    return this.#queued > 0
  }

  run<T>(work: () => Promise<T>): Promise<T> {
    this.#queued++
    const next = this.#tail.then(() => this.around(work)).finally(() => this.#queued--)
    this.#tail = next.catch(() => undefined)
    return next
  }
}

export interface SyncJobDeps {
  app: App
  metrics: DaemonMetrics
  gaps: DeliveryGapCheck
  /** True while checkpoints run on the worker thread (src/store/sqlite/background-checkpoints.ts). */
  checkpointsInBackground?: () => boolean
  /** The record serialQueue, shared with the continuous sweeps (sweep-loop.ts) when they run. */
  serialQueue?: SerialQueue
}

/** The checkpoint fallback: local, no request, run on its pattern by every account (never spread). */
export const CHECKPOINT_JOB = 'checkpoint'

export function syncJobs({ app, metrics, gaps, checkpointsInBackground, serialQueue = new SerialQueue() }: SyncJobDeps): JobDefinition[] {
  const selection = selectStreams(app.config.streams)
  const records = { ...selection, reference: [], metadata: [] }
  const observe = (results: readonly RunResult[], kind?: string) => {
    // A run skipped (the key rejected earlier in the batch) never ran: nothing to count.
    for (const r of results) if (r.outcome !== 'skipped') metrics.observeRun(r, kind ?? r.kind)
    return results
  }
  const trigger = (name: IntegrationName, cron: string): JobDefinition => ({
    name,
    cron,
    run: async (signal) => {
      const r = await RUNNERS.trigger.run(app.syncContext({ signal }), app.client, name)
      metrics.observeRun(r, 'trigger')
      if (r.notConnected) metrics.integrationNotConnected(name)
      // A rejected key would be rejected again by the status and the feed.
      if (name !== 'calendar-a' || signal.aborted || r.errorCode === KEY_REJECTED) return
      await pollCalendarStatus(app.mirror.sqlite, app.client, name, { signal, now: () => app.clock.now() })
      // The change feed is read after a trigger that ran (a disconnected calendar has none).
      if (r.outcome === 'success' && !signal.aborted)
        metrics.observeRun(await RUNNERS.feed.sweep(app.syncContext({ signal }), app.client), 'sweep')
    },
  })
  const s: Config['schedules'] = app.config.schedules
  // Continuous sweeping is no scheduled job: the daemon runs its loop instead (sweep-loop.ts).
  const sweep: JobDefinition[] =
    s.sweep === SCHEDULE_CONTINUOUS
      ? []
      : [
          {
            name: 'sweep',
            cron: s.sweep,
            run: (signal) => serialQueue.run(async () => void observe(await runSweeps(app.syncContext({ signal }), records))),
          },
        ]
  return [
    ...sweep,
    {
      name: 'reference',
      cron: s.reference,
      run: async (signal) =>
        void observe(await runSweeps(app.syncContext({ signal }), { ...selection, records: [], objects: undefined }), 'reference'),
    },
    {
      name: 'reconcile',
      cron: s.reconcile,
      run: (signal) => serialQueue.run(async () => void observe(await runReconciliations(app.syncContext({ signal }), records))),
    },
    trigger('calendar-a', s.calendarA),
    trigger('calendar-b', s.calendarB),
    trigger('accounting', s.accounting),
    {
      name: 'deliveries',
      cron: s.deliveries,
      run: async (signal) => {
        const plan = await gaps.check(signal)
        if (plan.streams.length === 0) return plan.commit()
        await serialQueue.run(async () => {
          const results = observe(await runSweeps(app.syncContext({ signal }), selectWithin(selection, plan.streams)))
          // A failed or stopped sweep leaves the gap cursor where it was: the next check sweeps again.
          if (!signal.aborted && results.every((r) => r.outcome === 'success')) plan.commit()
        })
      },
    },
    retentionJob({
      sqlite: app.mirror.sqlite,
      settings: app.config.retention,
      cron: s.retention,
      logger: app.logger,
      metrics,
      clock: app.clock,
    }),
    {
      // A reader holding a transaction stops SQLite's automatic checkpoints. The
      // worker thread's passes do this every 100 ms; this is the fallback when it cannot run.
      name: CHECKPOINT_JOB,
      cron: '*/5 * * * *',
      run: () => {
        if (checkpointsInBackground?.() !== true) checkpointPassive(app.mirror.sqlite)
        return Promise.resolve()
      },
    },
  ]
}
