// `fsm-sync run`: the daemon, over every account of the config (with `sharding.enabled`, over those
// this replica holds: docs/sharding.md). Stops cleanly on SIGTERM/SIGINT
// (exit 0); a second one, or a stop that overruns its budget, ends the process at once with exit 1.
// A change of the config file (or an account's key file) is applied within seconds, and at once on
// SIGHUP (config-watch.ts; docs/accounts.md).
import { readFileSync } from 'node:fs'
import type { AccountConfig, LoadedConfig } from '../config/index.js'
import { ConfigWatch } from '../daemon/config-watch.js'
import { startDaemon } from '../daemon/daemon.js'
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
    // Signals are taken from the start: one that arrives while the accounts open (the listener may
    // already answer) must not end the process by its default action. A stop waits for the start;
    // a reload is done once the watcher runs.
    let reloadAsked = false
    const early = () => (reloadAsked = true)
    process.on(RELOAD_SIGNAL, early)
    const stopAsked = new Promise<NodeJS.Signals>((resolve) => {
      const first = (s: NodeJS.Signals) => {
        for (const other of DAEMON_STOP_SIGNALS) process.off(other, first)
        resolve(s)
      }
      for (const s of DAEMON_STOP_SIGNALS) process.on(s, first)
    })
    const daemon = await startDaemon(config, { logger, accounts, listed })
    // The stop budget and the exit deadlines are counted on the daemon's clock (the system's).
    const clock = systemClock
    ctx.io.stderr.write(
      `fsm-sync run: listening on ${daemon.url} (/healthz, /readyz, /metrics, ${config.webhooks.path}); ${accounts.length} account${accounts.length === 1 ? '' : 's'}${daemon.replica === undefined ? '' : `, shared as replica ${daemon.replica.name}`}\n`,
    )
    const file = (args.config as string | undefined) ?? ctx.io.env.FSM_CONFIG
    const watch =
      file === undefined || file === ''
        ? undefined
        : new ConfigWatch<Watched>({
            path: file,
            load: () => Promise.resolve(watched(withFlags(ctx.accounts({ fresh: true })), file)),
            apply: async (next) => {
              const diff = await daemon.applyAccounts(next.accounts)
              logger.info(diff, 'the accounts list is applied')
            },
            files: (value) => value.keyFiles,
            clock,
            logger,
          })
    const ignore = () => logger.info(`${RELOAD_SIGNAL}: no config file (FSM_CONFIG, --config) to read again; nothing changes`)
    if (watch !== undefined) await watch.start(watched({ config, accounts, listed }, file!))
    else process.on(RELOAD_SIGNAL, ignore)
    process.off(RELOAD_SIGNAL, early)
    if (reloadAsked) {
      logger.info({ signal: RELOAD_SIGNAL, path: file, whileStarting: true }, 'configuration reload requested')
      if (watch === undefined) ignore()
      else void watch.reload()
    }
    const signal = await stopAsked
    logger.warn({ signal }, 'stop requested')
    // A SIGHUP while stopping changes nothing (and must not end the process by its default action).
    process.on(RELOAD_SIGNAL, () => undefined)
    process.off(RELOAD_SIGNAL, ignore)
    await watch?.stop()
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

/** What the watcher compares and applies: the accounts, and the key files they were read from. */
interface Watched {
  accounts: readonly AccountConfig[]
  keyFiles: readonly string[]
}

function watched(loaded: LoadedConfig, file: string): Watched {
  return { accounts: loaded.accounts, keyFiles: keyFiles(file) }
}

/** The `apiKeyFile`s the config file's accounts name (the file was just loaded and validated). */
function keyFiles(file: string): string[] {
  try {
    const doc = JSON.parse(readFileSync(file, 'utf8')) as { accounts?: { apiKeyFile?: unknown }[] }
    return (Array.isArray(doc.accounts) ? doc.accounts : []).flatMap((a) => (typeof a?.apiKeyFile === 'string' ? [a.apiKeyFile] : []))
  } catch {
    return []
  }
}
