// Opens the app (create-app.ts) for a one-shot command, stops cleanly on SIGINT/SIGTERM/SIGHUP (the
// page in flight commits, then the run ends), and always closes the mirror. With `requireSynced`,
// a mirror nothing was ever synced into is refused before anything opens it for writing
// (require-synced.ts).
import { createApp, requireApiSettings, type App } from '../daemon/create-app.js'
import type { CommandContext } from './command.js'
import { requireSynced } from './require-synced.js'
import { STOP_SIGNALS } from './stop-signals.js'

export async function withApp(
  ctx: CommandContext,
  body: (app: App, signal: AbortSignal) => Promise<number>,
  options: { requireSynced?: boolean } = {},
): Promise<number> {
  if (options.requireSynced === true) {
    const config = ctx.config()
    // The API settings are checked first: a missing FSM_BASE_URL is a configuration error (exit 2).
    requireApiSettings(config)
    await requireSynced(config.db)
  }
  const app = await createApp(ctx.config(), { logger: ctx.logger() })
  const controller = new AbortController()
  const stop = (signal: NodeJS.Signals) => {
    app.logger.warn({ signal }, 'stopping: the page in flight commits, then the run ends')
    controller.abort(new Error(`stopped by ${signal}`))
  }
  for (const s of STOP_SIGNALS) process.once(s, stop)
  try {
    return await body(app, controller.signal)
  } finally {
    for (const s of STOP_SIGNALS) process.off(s, stop)
    await app.close()
  }
}
