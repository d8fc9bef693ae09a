// Every command of the README's Commands table, one file each.
import type { Command } from './command.js'
import { demoCommand } from './demo.js'
import { doctorCommand } from './doctor.js'
import { emulatorCommand } from './emulator.js'
import { exportCommand } from './export.js'
import { healthcheckCommand } from './healthcheck.js'
import { queryCommand } from './query.js'
import { reconcileCommand } from './reconcile.js'
import { replicateCommand } from './replicate.js'
import { consumersCommand } from './consumers.js'
import { runCommand } from './run.js'
import { schemaCommand } from './schema.js'
import { statusCommand } from './status.js'
import { syncCommand } from './sync.js'
import { triggerCommand } from './trigger.js'
import { webhooksCommand } from './webhooks.js'

export const commands: readonly Command[] = [
  runCommand,
  syncCommand,
  reconcileCommand,
  replicateCommand,
  consumersCommand,
  statusCommand,
  queryCommand,
  schemaCommand,
  exportCommand,
  triggerCommand,
  webhooksCommand,
  doctorCommand,
  healthcheckCommand,
  emulatorCommand,
  demoCommand,
]
