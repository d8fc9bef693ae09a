// `--stream` of `sync`, `reconcile` and `run`, checked while the command line is parsed: a name the
// command does not take is a usage error (exit 2) that lists the names it does take, rather than a
// run that skips it or silently does nothing. `--help` lists the same names: both derive from the
// registry (connectors/selection.ts), per command.
import type { Argv } from 'yargs'
import { STREAMS } from '../../connectors/index.js'
import { SELECTABLE_STREAMS, STREAM_CHOICE } from '../../connectors/selection.js'

export type StreamCommand = 'sync' | 'reconcile' | 'run'

/** Streams whose deletions `reconcile` finds: records whose lists hide deleted ones, and custom objects. */
export const RECONCILABLE: readonly string[] = STREAMS.filter(
  (s) => (s.kind === 'records' || s.kind === 'objects') && s.deletions.reconcile,
).map((s) => s.name)

const OBJECTS = STREAMS.find((s) => s.kind === 'objects')?.name

/** The stream names `--stream` of this command takes, `<objects>:<slug>` aside. */
function accepted(command: StreamCommand): readonly string[] {
  return command === 'reconcile' ? RECONCILABLE : SELECTABLE_STREAMS
}

/** Why `name` cannot be given to `--stream` of this command, or undefined when it can. */
export function streamOptionProblem(command: StreamCommand, name: string): string | undefined {
  // A known name is a stream of the registry, or `<objects>:<slug>` (selection.ts checks both).
  const known = STREAM_CHOICE.problem(name) === undefined
  const stream = name.split(':')[0] ?? name
  if (known && accepted(command).includes(stream)) return undefined
  const why = known
    ? `${command} has nothing to do for it (reference data and account metadata are re-read whole by sync)`
    : 'no such stream'
  return `--stream ${name}: ${why}; ${command} takes: ${streamNamesText(command)}`
}

/** The names `--stream` of this command takes, for its help text and its usage errors. */
export function streamNamesText(command: StreamCommand): string {
  const names = accepted(command)
  const one = OBJECTS !== undefined && names.includes(OBJECTS) ? `, or ${OBJECTS}:<slug> for one custom object` : ''
  return `${names.join(', ')}${one}`
}

export function streamOption(y: Argv, command: StreamCommand, describe: string): Argv {
  return y.option('stream', { type: 'string', array: true, describe: `${describe}; one of: ${streamNamesText(command)}` }).check((argv) => {
    const named = argv.stream ?? []
    const problems = named.map((n) => streamOptionProblem(command, n)).filter((p) => p !== undefined)
    if (problems.length > 0) throw new Error(problems.join('\n'))
    return true
  })
}
