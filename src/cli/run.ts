// `fsm-sync run`: the daemon. Stops cleanly on SIGTERM/SIGINT/SIGHUP (exit 0); a second signal, or
// a stop that overruns its budget, ends the process at once with exit 1.
import { startDaemon } from '../daemon/daemon.js'
import type { Command } from './command.js'
import { STOP_SIGNALS, stopWithin } from './stop-signals.js'
import { streamOption } from './stream-option.js'

/** The daemon exits within 10 s of SIGTERM (docs/commands.md); leave a margin to end. */
const STOP_BUDGET_MS = 9000

export const runCommand: Command = {
  builder: (y) => streamOption(y, 'run', "stream the daemon keeps (repeatable); above FSM_STREAMS and the config's `streams`"),
  run: async (args, ctx) => {
    const logger = ctx.logger()
    const named = (args.stream as string[] | undefined) ?? []
    // A flag is above the environment and the file (docs/configuration.md); the names were checked while parsing.
    const config = named.length > 0 ? { ...ctx.config(), streams: named } : ctx.config()
    const daemon = await startDaemon(config, { logger })
    // The app's clock (create-app.ts): the stop budget and the exit deadlines are counted on it.
    const clock = daemon.app.clock
    ctx.io.stderr.write(`fsm-sync run: listening on ${daemon.url} (/healthz, /readyz, /metrics, ${daemon.app.config.webhooks.path})\n`)
    const signal = await new Promise<NodeJS.Signals>((resolve) => {
      const first = (s: NodeJS.Signals) => {
        for (const other of STOP_SIGNALS) process.off(other, first)
        resolve(s)
      }
      for (const s of STOP_SIGNALS) process.on(s, first)
    })
    logger.warn({ signal }, 'stop requested')
    // process.exit waits for worker and thread-pool threads; one held by the kernel in a sync that
    // never returns would keep the process alive past the budget. Then only SIGKILL ends it.
    const exit = (code: number) => {
      if (!daemon.stuck()) return process.exit(code)
      logger.error('a disk sync never returned: ending the process with SIGKILL (a normal exit would wait for it); committed work is safe')
      logger.flush()
      clock.setTimer(100, () => process.kill(process.pid, 'SIGKILL'))
    }
    const force = () => {
      logger.error('stop did not finish in time: exiting now (committed work is safe; the next start resumes)')
      logger.flush()
      exit(1)
    }
    await stopWithin(() => daemon.stop(), { clock, budgetMs: STOP_BUDGET_MS, overrun: force })
    if (daemon.stuck()) {
      exit(1)
      return 1
    }
    // Everything is closed; should a stray handle keep the loop alive, end anyway.
    clock.setTimer(1000, () => process.exit(process.exitCode ?? 0), { background: true })
    return 0
  },
}
