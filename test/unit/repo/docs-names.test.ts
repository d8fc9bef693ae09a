// The docs name files and code that exist: a backticked file name (`record-writer.ts`) is a file of
// the repository, and a backticked type or function name (`RecordWriter`, `createApp(config)`) is
// defined in its sources. A rename that leaves a doc behind fails here.
import { readdirSync, readFileSync } from 'node:fs'
import path from 'node:path'
import { expect, test } from 'vitest'
import { ROOT } from '../../support/run-cli.js'

const files = (dir: string) =>
  readdirSync(path.join(ROOT, dir), { recursive: true, withFileTypes: true })
    .filter((e) => e.isFile())
    .map((e) => path.relative(ROOT, path.join(e.parentPath, e.name)))
const SOURCES = ['src', 'connectors', 'emulator', 'test', 'bench', 'soak', 'scripts'].flatMap(files)
const DOCS = [
  'README.md',
  'config/README.md',
  'emulator/README.md',
  ...files('docs').filter((f) => f.endsWith('.md')),
  ...files('src').filter((f) => f.endsWith('README.md')),
]

/** Names the docs use that belong to the platform, HTTP or a library, not to this code. */
const NOT_OURS = new Set([
  'Authorization', // HTTP header
  'Date', // HTTP header and the JavaScript global
  'Status', // a column heading quoted in the README
  'Admin', // the emulator's role name from the spec
  'Dockerfile',
  'nextRun', // croner
  'setPriority', // p-queue, named where the governor says why it is not used
])

function definedNames(): Set<string> {
  const code = SOURCES.filter((f) => f.endsWith('.ts'))
    .map((f) => readFileSync(path.join(ROOT, f), 'utf8'))
    .join('\n')
  const names = new Set<string>()
  for (const m of code.matchAll(/\b(?:class|interface|type|function\*?|const|let|enum)\s+([A-Za-z_$][\w$]*)/g)) names.add(m[1]!)
  // Methods and fields: `  name(` or `  readonly name:` at the start of a line.
  for (const m of code.matchAll(/^\s+(?:readonly\s+|static\s+|async\s+|#)*([A-Za-z_$][\w$]*)\s*[(:]/gm)) names.add(m[1]!)
  return names
}

test('every file, type and function the docs name in backticks exists in the code', () => {
  const basenames = new Set(SOURCES.map((f) => path.basename(f)))
  const defined = definedNames()
  const missing: string[] = []
  for (const doc of DOCS) {
    for (const m of readFileSync(path.join(ROOT, doc), 'utf8').matchAll(/`([^`\n]+)`/g)) {
      const text = m[1]!
      if (/^[\w.-]+\.ts$/.test(text) && !basenames.has(text)) missing.push(`${doc}: file ${text}`)
      // PascalCase names (`RecordWriter`, `KeysetWalk.next()`), and camelCase ones called (`createApp(config)`).
      const name = /^([A-Z][a-z]\w*[a-z]\w*)(?:\.\w+)?(?:\(.*\))?$/.exec(text)?.[1] ?? /^([a-z]\w*[A-Z]\w*)\(/.exec(text)?.[1]
      if (name !== undefined && !NOT_OURS.has(name) && !defined.has(name)) missing.push(`${doc}: name ${text}`)
    }
  }
  expect(missing).toEqual([])
})
