// `fsm-sync consumers list | add NAME | ack NAME SEQ | remove NAME [--force] [--json]`: the readers
// of change_log that retention waits for (src/store/repositories/change-log-consumers.ts). A consumer added starts
// at the newest change; it records how far it has read with `ack`. A destination's own row is moved
// or removed only with --force.
import type { Command } from './command.js'
import { openMirror } from '../store/sqlite/mirror-database.js'
import { ChangeLogConsumers, consumerNameProblem, lastChangeSeq, type Consumer } from '../store/repositories/change-log-consumers.js'
import { systemClock } from '../model/clock.js'
import { CommandError, jsonOption, printResult } from './output.js'
import { noMirrorError, requireSynced } from './require-synced.js'
import { existsSync } from 'node:fs'

export const consumersCommand: Command = {
  builder: (y) =>
    jsonOption(y)
      .positional('action', { choices: ['list', 'add', 'ack', 'remove'] as const })
      .positional('name', { type: 'string', describe: 'the consumer' })
      .positional('seq', { type: 'string', describe: 'with ack: the last change_log seq it has read' })
      .option('force', { type: 'boolean', default: false, describe: "with ack or remove: also on a destination's own row" }),
  run: async (args, ctx) => {
    const action = args.action as 'list' | 'add' | 'ack' | 'remove'
    const name = typeof args.name === 'string' ? args.name : undefined
    if (action !== 'list' && name === undefined) throw new CommandError(`consumers ${action}: a consumer name is required`, 2)
    if (name !== undefined && consumerNameProblem(name) !== null)
      throw new CommandError(`consumers ${action}: the name ${consumerNameProblem(name)}`, 2)
    const seqText = typeof args.seq === 'string' || typeof args.seq === 'number' ? String(args.seq) : undefined
    if (action === 'ack' && (seqText === undefined || !/^\d+$/.test(seqText))) {
      throw new CommandError('consumers ack: SEQ must be the change_log seq the consumer has read, a whole number', 2)
    }
    const config = ctx.config()
    // Every action reads or moves positions in change_log: on a mirror never synced (a wrong FSM_DB or
    // volume) it is refused, as reconcile is, rather than creating an empty mirror there. Registering a
    // reader before the first sync is legitimate (it then reads from the first change), so `add` only
    // needs the mirror file to exist.
    if (action === 'add') {
      if (!existsSync(config.db)) throw noMirrorError(config.db)
    } else await requireSynced(config.db)
    const mirror = await openMirror(config.db, { mode: config.dbMode })
    try {
      const consumers = new ChangeLogConsumers(mirror.sqlite)
      const now = new Date(systemClock.now()).toISOString()
      const print = (value: unknown, text: string) => printResult(args, ctx.io, value, () => text + '\n')
      if ((action === 'ack' || action === 'remove') && args.force !== true && consumers.get(name!)?.kind === 'destination') {
        throw new CommandError(
          `consumers ${action}: ${name!} is a Postgres destination's own row, which the destination moves itself; ` +
            `a destination still running registers it again. Add --force to ${action} it anyway (to let retention go on past a destination you no longer use)`,
          2,
        )
      }
      switch (action) {
        case 'list': {
          const last = lastChangeSeq(mirror.sqlite)
          const list = consumers.list().map((c) => ({ ...c, behind: Math.max(0, last - c.seq) }))
          print(list, list.length === 0 ? 'no consumers registered' : list.map(line).join('\n'))
          return 0
        }
        case 'add': {
          const c = consumers.add(name!, 'user', now)
          print(c, `consumer ${c.name} reads change_log after seq ${c.seq}; retention keeps what it has not acknowledged`)
          return 0
        }
        case 'ack': {
          // A seq past the newest change would stop the consumer from holding anything back for good (acks never move back).
          const last = lastChangeSeq(mirror.sqlite)
          if (!Number.isSafeInteger(Number(seqText)) || Number(seqText) > last)
            throw new CommandError(
              `consumers ack: SEQ ${seqText!} is past the newest change (${last}): acknowledge a seq the consumer has read, at most ${last}`,
              2,
            )
          if (!consumers.ack(name!, Number(seqText), now))
            throw new CommandError(`consumers ack: no consumer named ${name!}; add it first (fsm-sync consumers add ${name!})`)
          const c = consumers.get(name!)!
          print(c, `consumer ${c.name} has read change_log up to seq ${c.seq}`)
          return 0
        }
        case 'remove': {
          const removed = consumers.remove(name!)
          print({ removed }, removed ? `consumer ${name!} removed` : `no consumer named ${name!}`)
          return removed ? 0 : 1
        }
      }
    } finally {
      await mirror.close()
    }
  },
}

function line(c: Consumer & { behind: number }): string {
  const error = c.lastError === null ? '' : `  last error ${c.lastErrorAt ?? ''}: ${c.lastError}`
  const idle = c.kind === 'destination' && c.loadedAt === null ? '  never loaded (holds nothing back)' : ''
  return `${c.name}  ${c.kind}  seq ${c.seq}  ${c.behind} behind${idle}${error}`
}
