// `fsm-sync run`: the daemon, over every account of the config. Stops cleanly on SIGTERM/SIGINT
// (exit 0); a second one, or a stop that overruns its budget, ends the process at once with exit 1.
// SIGHUP reads the config again and applies its accounts list (docs/accounts.md).
import type { LoadedConfig } from '../config/index.js'
import { ConfigError } from '../config/config-error.js'
import { startDaemon, type Daemon } from '../daemon/daemon.js'
import type { Logger } from '../log/logger.js'
import { systemClock } from '../model/clock.js'
import type { Command } from './command.js'
import { DAEMON_STOP_SIGNALS, RELOAD_SIGNAL, stopWithin } from './stop-signals.js'
import { streamOption } from './stream-option.js'

/** The daemon exits within 10 s of SIGTERM (docs/commands.md); leave a margin to end. */
const STOP_BUDGET_MS = 9000

export const runCommand: Command = {
  builder: (y) => streamOption(y, 'run', "stream the daemon keeps (repeatable); above FSM_STREAMS and the config's `streams`"),
  run: async (args, ctx) => {
    const logger = ctx.logger()
    const named = (args.stream as string[] | undefined) ?? []
    // A flag is above the environment and the file (docs/configuration.md), for every account; the names were checked while parsing.
    const withFlags = (loaded: LoadedConfig): LoadedConfig =>
      named.length === 0
        ? loaded
        : {
            ...loaded,
            config: { ...loaded.config, streams: named },
            accounts: loaded.accounts.map((a) => ({ id: a.id, config: { ...a.config, streams: named } })),
          }
    const { config, accounts, listed } = withFlags(ctx.accounts())
    const daemon = await startDaemon(config, { logger, accounts, listed })
    // The stop budget and the exit deadlines are counted on the daemon's clock (the system's).
    const clock = systemClock
    ctx.io.stderr.write(
      `fsm-sync run: listening on ${daemon.url} (/healthz, /readyz, /metrics, ${config.webhooks.path}); ${accounts.length} account${accounts.length === 1 ? '' : 's'}\n`,
    )
    const reload = () => reloadAccounts(daemon, () => withFlags(ctx.accounts({ fresh: true })), logger)
    process.on(RELOAD_SIGNAL, reload)
    const signal = await new Promise<NodeJS.Signals>((resolve) => {
      const first = (s: NodeJS.Signals) => {
        for (const other of DAEMON_STOP_SIGNALS) process.off(other, first)
        resolve(s)
      }
      for (const s of DAEMON_STOP_SIGNALS) process.on(s, first)
    })
    logger.warn({ signal }, 'stop requested')
    // A SIGHUP while stopping changes nothing (the stop's own handling below ignores it too).
    process.off(RELOAD_SIGNAL, reload)
    process.on(RELOAD_SIGNAL, () => undefined)
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
    await stopWithin(() => daemon.stop(), { clock, budgetMs: STOP_BUDGET_MS, overrun: force, names: DAEMON_STOP_SIGNALS })
    if (daemon.stuck()) {
      exit(1)
      return 1
    }
    // Everything is closed; should a stray handle keep the loop alive, end anyway.
    clock.setTimer(1000, () => process.exit(process.exitCode ?? 0), { background: true })
    return 0
  },
}

/** SIGHUP: the config read again and its accounts applied; an invalid config is refused in one line and the running set kept. */
function reloadAccounts(daemon: Daemon, load: () => LoadedConfig, logger: Logger): void {
  let next: LoadedConfig
  try {
    next = load()
  } catch (err) {
    const issues = err instanceof ConfigError ? err.issues.map((i) => `${i.key}: ${i.message}`) : [(err as Error).message]
    logger.error({ issues }, `${RELOAD_SIGNAL}: the config is refused, the running accounts are kept: ${issues.join('; ')}`)
    return
  }
  logger.info({ signal: RELOAD_SIGNAL, accounts: next.accounts.length }, 'reloading the accounts list')
  daemon.applyAccounts(next.accounts).then(
    (diff) => logger.info(diff, 'the accounts list is applied'),
    (err: unknown) => logger.error({ err }, 'applying the accounts list failed'),
  )
}
