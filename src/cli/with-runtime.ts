// Opens the runtime for a command, stops cleanly on SIGINT/SIGTERM (the page in flight commits,
// then the run ends), and always closes the mirror.
import { createRuntime, type Runtime } from '../daemon/runtime.js'
import type { CommandContext } from './command.js'

export async function withRuntime(ctx: CommandContext, body: (rt: Runtime, signal: AbortSignal) => Promise<number>): Promise<number> {
  const rt = await createRuntime(ctx.config(), ctx.logger())
  const controller = new AbortController()
  const stop = (signal: NodeJS.Signals) => {
    rt.logger.warn({ signal }, 'stopping: the page in flight commits, then the run ends')
    controller.abort(new Error(`stopped by ${signal}`))
  }
  process.once('SIGINT', stop)
  process.once('SIGTERM', stop)
  try {
    return await body(rt, controller.signal)
  } finally {
    process.off('SIGINT', stop)
    process.off('SIGTERM', stop)
    await rt.close()
  }
}
