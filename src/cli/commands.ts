// Every command of contract.md. Commands whose issue has not landed say so (exit 1).
import type { Argv } from 'yargs'
import type { Command } from './command.js'
import { notBuiltYet } from './command.js'

const streamOption = (y: Argv) =>
  y.option('stream', { type: 'string', array: true, describe: 'stream to run (repeatable); all when omitted' })

export const commands: readonly Command[] = [
  notBuiltYet('run', 'The daemon: scheduled sweeps, reconciliation and triggers, webhook intake, health and metrics', 7),
  notBuiltYet('sync', 'One incremental pass over the named streams, then exit', 4, (y) =>
    streamOption(y).option('full', { type: 'boolean', default: false, describe: 'ignore the stored cursors' }),
  ),
  notBuiltYet('reconcile', 'Find records deleted upstream and mark them deleted in the mirror', 4, streamOption),
  notBuiltYet('status', 'Per stream: cursor, last success, last error, rows, lag; inbox backlog; budget', 4, (y) =>
    y.option('json', { type: 'boolean', default: false, describe: 'print JSON for scripts' }),
  ),
  notBuiltYet('query <sql>', 'Run one read-only SQL statement against the mirror', 4, (y) =>
    y
      .positional('sql', { type: 'string', describe: 'the statement' })
      .option('format', { choices: ['table', 'json', 'csv'] as const, default: 'table' as const }),
  ),
  notBuiltYet('trigger <integration>', "Call an integration's sync trigger and record the result", 7, (y) =>
    y.positional('integration', { choices: ['calendar-a', 'calendar-b', 'accounting'] as const }),
  ),
  notBuiltYet('webhooks <action>', 'register --url URL | list | deliveries [--status S]', 6, (y) =>
    y
      .positional('action', { choices: ['register', 'list', 'deliveries'] as const })
      .option('url', { type: 'string', describe: 'with register: the public https URL of this daemon' })
      .option('status', { choices: ['pending', 'success', 'failed', 'retrying'] as const }),
  ),
  notBuiltYet('doctor', 'Check configuration, reachability, the key and its scopes, and the mirror', 7),
  notBuiltYet('emulator', 'Start the local emulated account and print its base URL and a key', 3),
  notBuiltYet('demo', 'Start the emulator and the daemon together, sync, and print example queries', 7),
]
