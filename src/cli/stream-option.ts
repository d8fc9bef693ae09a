// `--stream` of `sync` and `reconcile`, checked while the command line is parsed: an unknown name,
// or one `reconcile` has nothing to do for, is a usage error (exit 2) that lists the valid names,
// rather than a run that skips it or silently does nothing. `--help` lists the names the command
// takes, from the same lists the check uses.
import type { Argv } from 'yargs'
import { OBJECT_STREAM, STREAM_NAMES, StreamName } from '../config/index.js'
import { RECORD_STREAMS } from '../../connectors/index.js'

/** Streams whose deletions `reconcile` finds: records whose lists hide deleted ones, and custom objects. */
export const RECONCILABLE: readonly string[] = [...RECORD_STREAMS.filter((s) => s.deletions.reconcile).map((s) => s.name), 'objects']

const isObject = (name: string) => OBJECT_STREAM.test(name)

/** Why `name` cannot be given to `--stream` of this command, or undefined when it can. */
export function streamOptionProblem(command: 'sync' | 'reconcile', name: string): string | undefined {
  if (!StreamName.safeParse(name).success)
    return `--stream ${name}: no such stream; valid: ${STREAM_NAMES.join(', ')}, or objects:<slug> for one custom object`
  if (command === 'reconcile' && !RECONCILABLE.includes(name) && !isObject(name)) {
    return `--stream ${name}: reconcile has nothing to do for it (reference data and account metadata are re-read whole by sync); reconcilable: ${RECONCILABLE.join(', ')}, or objects:<slug>`
  }
  return undefined
}

/** The names `--stream` of this command takes, for its help text. */
export function streamNamesText(command: 'sync' | 'reconcile'): string {
  return `${(command === 'reconcile' ? RECONCILABLE : STREAM_NAMES).join(', ')}, or objects:<slug> for one custom object`
}

export function streamOption(y: Argv, command: 'sync' | 'reconcile', describe: string): Argv {
  return y.option('stream', { type: 'string', array: true, describe: `${describe}; one of: ${streamNamesText(command)}` }).check((argv) => {
    const named = argv.stream ?? []
    const problems = named.map((n) => streamOptionProblem(command, n)).filter((p) => p !== undefined)
    if (problems.length > 0) throw new Error(problems.join('\n'))
    return true
  })
}
