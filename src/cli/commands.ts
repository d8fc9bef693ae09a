// Every command of contract.md. Commands whose issue has not landed say so (exit 1).
import type { Command } from './command.js'
import { notBuiltYet } from './command.js'
import { demoCommand } from './demo.js'
import { emulatorCommand } from './emulator.js'
import { queryCommand } from './query.js'
import { reconcileCommand } from './reconcile.js'
import { statusCommand } from './status.js'
import { syncCommand } from './sync.js'
import { webhooksCommand } from './webhooks.js'

export const commands: readonly Command[] = [
  notBuiltYet('run', 'The daemon: scheduled sweeps, reconciliation and triggers, webhook intake, health and metrics', 7),
  syncCommand,
  reconcileCommand,
  statusCommand,
  queryCommand,
  notBuiltYet('trigger <integration>', "Call an integration's sync trigger and record the result", 7, (y) =>
    y.positional('integration', { choices: ['calendar-a', 'calendar-b', 'accounting'] as const }),
  ),
  webhooksCommand,
  notBuiltYet('doctor', 'Check configuration, reachability, the key and its scopes, and the mirror', 7),
  emulatorCommand,
  demoCommand,
]
