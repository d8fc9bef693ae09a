// `--stream` of `sync` and `reconcile`, checked while the command line is parsed: an unknown name,
// or one `reconcile` has nothing to do for, is a usage error (exit 2) that lists the valid names,
// rather than a run that skips it or silently does nothing.
import type { Argv } from 'yargs'
import { STREAMS } from '../../connectors/index.js'
import { OBJECT_STREAM, STREAM_CHOICE } from '../../connectors/selection.js'

/** Streams whose deletions `reconcile` finds: records whose lists hide deleted ones, and custom objects. */
export const RECONCILABLE: readonly string[] = STREAMS.filter(
  (s) => (s.kind === 'records' || s.kind === 'objects') && s.deletions.reconcile,
).map((s) => s.name)

const isObject = (name: string) => OBJECT_STREAM.test(name)

/** Why `name` cannot be given to `--stream` of this command, or undefined when it can. */
export function streamOptionProblem(command: 'sync' | 'reconcile', name: string): string | undefined {
  const problem = STREAM_CHOICE.problem(name)
  if (problem !== undefined) return `--stream ${problem}`
  if (command === 'reconcile' && !RECONCILABLE.includes(name) && !isObject(name)) {
    return `--stream ${name}: reconcile has nothing to do for it (reference data and account metadata are re-read whole by sync); reconcilable: ${RECONCILABLE.join(', ')}, or objects:<slug>`
  }
  return undefined
}

export function streamOption(y: Argv, command: 'sync' | 'reconcile', describe: string): Argv {
  return y.option('stream', { type: 'string', array: true, describe }).check((argv) => {
    const named = argv.stream ?? []
    const problems = named.map((n) => streamOptionProblem(command, n)).filter((p) => p !== undefined)
    if (problems.length > 0) throw new Error(problems.join('\n'))
    return true
  })
}
