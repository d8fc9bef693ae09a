// Opens the app (create-app.ts) for a one-shot command, stops cleanly on SIGINT/SIGTERM/SIGHUP (the
// page in flight commits, then the run ends), and always closes the mirror.
import { createApp, type App } from '../daemon/create-app.js'
import type { CommandContext } from './command.js'
import { STOP_SIGNALS } from './stop-signals.js'

export async function withApp(ctx: CommandContext, body: (app: App, signal: AbortSignal) => Promise<number>): Promise<number> {
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
