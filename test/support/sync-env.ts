// A real app (mirror file, governor, client) pointed at an emulator, for integration tests.
import path from 'node:path'
import { Writable } from 'node:stream'
import { loadConfig } from '../../src/config/index.js'
import { createApp, type App } from '../../src/daemon/create-app.js'
import { createLogger } from '../../src/log/logger.js'
import { RECORD_STREAMS } from '../../connectors/index.js'
import type { RecordStream, ReferenceStream } from '../../src/model/streams.js'
import type { Selection } from '../../connectors/selection.js'
import { runReconciliations, runSweeps } from '../../src/sync/sync-engine.js'
import type { RunResult } from '../../src/sync/sync-context.js'
import { tempDir } from './temp-mirror.js'
import { closeWhenTestFinishes, type EmulatorEnv } from './emulator-env.js'
import { compareMirror } from './compare-mirror.js'

export interface SyncEnv {
  app: App
  dir: string
  db: string
  sync(options?: {
    full?: boolean
    streams?: readonly RecordStream[]
    reference?: readonly ReferenceStream[]
    objects?: Selection['objects']
  }): Promise<RunResult[]>
  reconcile(streams?: readonly RecordStream[], objects?: Selection['objects']): Promise<RunResult[]>
  rows(sql: string, ...params: unknown[]): Record<string, unknown>[]
  close(): Promise<void>
}

const quietLogger = () => createLogger({ level: 'warn', destination: new Writable({ write: (_c, _e, cb) => cb() }) })

/** An app against the emulator; inside a test it is closed with the test (a second close is a no-op). */
export async function syncEnv(emu: EmulatorEnv, env: Record<string, string> = {}, dir = tempDir()): Promise<SyncEnv> {
  const db = path.join(dir, 'mirror.db')
  const config = loadConfig({
    env: { FSM_BASE_URL: emu.url, FSM_API_KEY: emu.apiKey, FSM_DB: db, FSM_RATE_LIMIT: '100000', FSM_LOG_LEVEL: 'warn', ...env },
  })
  const app = await createApp(config, { logger: quietLogger() })
  let closed: Promise<void> | undefined
  const close = () => (closed ??= app.close())
  closeWhenTestFinishes(close)
  return {
    app,
    dir,
    db,
    sync: (o = {}) =>
      runSweeps(
        app.syncContext(),
        {
          records: [...(o.streams ?? RECORD_STREAMS)],
          reference: [...(o.reference ?? [])],
          metadata: [],
          objects: o.objects,
          notBuilt: [],
        },
        { full: o.full ?? false },
      ),
    reconcile: (streams = RECORD_STREAMS, objects) =>
      runReconciliations(app.syncContext(), { records: [...streams], reference: [], metadata: [], objects, notBuilt: [] }),
    rows: (sql, ...params) => app.mirror.sqlite.prepare(sql).all(...params) as Record<string, unknown>[],
    close,
  }
}

export interface Mismatch {
  stream: string
  id: string
  problem: string
}

/**
 * Compares the mirror with the emulator record by record: every live upstream record is in the
 * mirror, live, with the same payload and the columns its connector derives from that payload;
 * no other row is live. Returns the differences (empty when exact).
 */
export async function compareWithEmulator(
  emu: EmulatorEnv,
  env: SyncEnv,
  streams: readonly RecordStream[] = RECORD_STREAMS,
): Promise<Mismatch[]> {
  const state = async (resource: string) => (await emu.state(resource)) as Record<string, unknown>[]
  const { mismatches } = await compareMirror(state, (sql, ...params) => env.rows(sql, ...params), [], streams)
  return mismatches.map((m) => ({ stream: m.stream, id: m.id, problem: `${m.problem}: ${m.detail}` }))
}
