// Opens the runtime for a command, stops cleanly on SIGINT/SIGTERM/SIGHUP (the page in flight commits,
// then the run ends), and always closes the mirror.
import { createRuntime, type Runtime } from '../daemon/runtime.js'
import type { CommandContext } from './command.js'
import { STOP_SIGNALS } from './stop-signals.js'

export async function withRuntime(ctx: CommandContext, body: (rt: Runtime, signal: AbortSignal) => Promise<number>): Promise<number> {
  const rt = await createRuntime(ctx.config(), ctx.logger())
  const controller = new AbortController()
  const stop = (signal: NodeJS.Signals) => {
    rt.logger.warn({ signal }, 'stopping: the page in flight commits, then the run ends')
    controller.abort(new Error(`stopped by ${signal}`))
  }
  for (const s of STOP_SIGNALS) process.once(s, stop)
  try {
    return await body(rt, controller.signal)
  } finally {
    for (const s of STOP_SIGNALS) process.off(s, stop)
    await rt.close()
  }
}
