// One Clock (docs/architecture.md, Time): src/ reads the time and arms its timers through the Clock
// of src/model/clock.ts, so the FakeClock drives every schedule, back-off and heartbeat. This scan
// reads every file of src/ with the TypeScript parser and fails on a system-clock read or a timer
// outside the list below, where each file says why it keeps real time. Each entry must still be
// needed, so the list shrinks when the code stops needing one.
import { readFileSync } from 'node:fs'
import path from 'node:path'
import ts from 'typescript'
import { describe, expect, test } from 'vitest'
import { ROOT } from '../../support/run-cli.js'
import { sourceFiles } from '../../support/source-files.js'

type Source = 'Date.now' | 'new Date()' | 'performance.now' | 'setTimeout' | 'setInterval'

interface Allowance {
  file: string
  sources: readonly Source[]
  why: string
}

const ALLOWED: readonly Allowance[] = [
  { file: 'src/model/clock.ts', sources: ['Date.now', 'setTimeout'], why: 'the system clock itself' },
  {
    file: 'src/config/cron-check.ts',
    sources: ['new Date()'],
    why: 'loading the config checks that a schedule has a next run from now; nothing waits on it',
  },
  {
    file: 'src/store/sqlite/migration-runner.ts',
    sources: ['new Date()'],
    why: 'when a migration was applied, for people reading the mirror',
  },
  {
    file: 'src/daemon/mirror-probe.ts',
    sources: ['new Date()'],
    why: 'the probe write only proves the mirror takes writes; nothing reads it',
  },
  { file: 'src/api/api-client.ts', sources: ['setTimeout'], why: "a request's deadline bounds socket I/O, as undici's own timeouts do" },
  { file: 'src/webhooks/raw-body.ts', sources: ['setTimeout'], why: "the body deadline bounds a slow client's socket I/O" },
  { file: 'src/daemon/http-server.ts', sources: ['setTimeout'], why: 'the drain at shutdown bounds open sockets' },
  {
    file: 'src/webhooks/group-commit.ts',
    sources: ['setTimeout', 'performance.now'],
    why: 'the close deadline bounds a disk sync a stalled disk holds; commit and sync durations are measured for metrics',
  },
  {
    file: 'src/store/sqlite/background-checkpoints.ts',
    sources: ['setTimeout'],
    why: 'the stop deadline bounds a worker thread a stalled disk holds',
  },
  {
    file: 'src/store/sqlite/checkpoint-worker.ts',
    sources: ['setTimeout', 'performance.now'],
    why: 'it runs on its own thread, which no Clock object reaches; its passes and their durations are real time over a real file',
  },
  {
    file: 'src/webhooks/processor.ts',
    sources: ['setTimeout', 'performance.now'],
    why: "pacing shares the event loop with the intake's sockets: slices are measured and rests waited in real time (rules in pacing.ts)",
  },
  {
    file: 'src/coordination/monotonic.ts',
    sources: ['performance.now'],
    why: 'how long a replica may act on a lease is measured on a clock that never steps (docs/sharding.md, Clocks)',
  },
  { file: 'src/daemon/retention-job.ts', sources: ['performance.now'], why: "the pass's duration for its log line, a measurement" },
  {
    file: 'src/store/sqlite/incremental-vacuum.ts',
    sources: ['performance.now'],
    why: "a VACUUM's duration for its log line, a measurement",
  },
  {
    file: 'src/destination/postgres-destination.ts',
    sources: ['setTimeout'],
    why: "the close and stop deadlines bound a Postgres server's socket that does not answer (polling and back-off run on the Clock)",
  },
  {
    file: 'src/destination/destination-pool.ts',
    sources: ['setTimeout'],
    why: "the close deadline bounds a Postgres server's socket that does not answer (polling and back-off run on the Clock)",
  },
  {
    file: 'src/destination/postgres-schema.ts',
    sources: ['performance.now'],
    why: "the in-place upgrade's duration for its log line, a measurement",
  },
]

const TIMER_MODULES = new Set(['timers', 'node:timers', 'timers/promises', 'node:timers/promises'])

interface Found {
  file: string
  line: number
  source: Source
}

/** Every read of the system clock and every timer a source text arms, by the parser (comments and strings never count). */
function timeSources(file: string, text: string): Found[] {
  const sf = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, true)
  const found: Found[] = []
  const add = (node: ts.Node, source: Source) =>
    found.push({ file, line: sf.getLineAndCharacterOfPosition(node.getStart(sf)).line + 1, source })
  const isTimer = (name: string): name is 'setTimeout' | 'setInterval' => name === 'setTimeout' || name === 'setInterval'
  const visit = (node: ts.Node): void => {
    if (ts.isPropertyAccessExpression(node)) {
      const owner = node.expression.getText(sf)
      const name = node.name.text
      if (owner === 'Date' && name === 'now') add(node, 'Date.now')
      if (owner === 'performance' && name === 'now') add(node, 'performance.now')
      if ((owner === 'globalThis' || owner === 'global') && isTimer(name)) add(node, name)
    } else if (ts.isNewExpression(node) && node.expression.getText(sf) === 'Date' && (node.arguments?.length ?? 0) === 0) {
      add(node, 'new Date()')
    } else if (ts.isCallExpression(node) && ts.isIdentifier(node.expression) && isTimer(node.expression.text)) {
      add(node, node.expression.text)
    } else if (ts.isImportDeclaration(node) && ts.isStringLiteral(node.moduleSpecifier) && TIMER_MODULES.has(node.moduleSpecifier.text)) {
      // `import { setTimeout as sleep } from 'node:timers/promises'`: the alias arms a timer too.
      const bindings = node.importClause?.namedBindings
      if (bindings !== undefined && ts.isNamedImports(bindings))
        for (const el of bindings.elements) {
          const imported = (el.propertyName ?? el.name).text
          if (isTimer(imported)) add(el, imported)
        }
      else if (bindings !== undefined) add(bindings, 'setTimeout')
    }
    ts.forEachChild(node, visit)
  }
  visit(sf)
  return found
}

const allowed = (f: Pick<Found, 'file' | 'source'>) => ALLOWED.some((a) => a.file === f.file && a.sources.includes(f.source))

describe('src/ reads the time through the one Clock', () => {
  const found = sourceFiles('src')
    .sort()
    .flatMap((file) => timeSources(file, readFileSync(path.join(ROOT, file), 'utf8')))

  test('the scan finds every form of a clock read or a timer, and nothing in comments or strings', () => {
    const text = [
      'const a = Date.now()',
      'const b = new Date()',
      'const c = performance.now()',
      'setTimeout(() => undefined, 5)',
      'const d = setInterval(tick, 1000)',
      "import { setTimeout as sleep, setImmediate } from 'node:timers/promises'",
      'const e = now ?? Date.now',
      'globalThis.setTimeout(f, 1)',
      '// Date.now() and setTimeout in a comment',
      "const f = 'new Date() in a string'",
      'const g = new Date(ms).toISOString()',
      'clock.setTimer(5, f)',
    ].join('\n')
    expect(timeSources('x.ts', text).map((f) => [f.line, f.source])).toEqual([
      [1, 'Date.now'],
      [2, 'new Date()'],
      [3, 'performance.now'],
      [4, 'setTimeout'],
      [5, 'setInterval'],
      [6, 'setTimeout'],
      [7, 'Date.now'],
      [8, 'setTimeout'],
    ])
  })

  test('the scan covers src/ and finds the system clock itself', () => {
    expect(found).toContainEqual({ file: 'src/model/clock.ts', line: expect.any(Number) as number, source: 'Date.now' })
  })

  test('every clock read and timer outside src/model/clock.ts is in the list, with its reason', () => {
    expect(
      found
        .filter((f) => !allowed(f))
        .map((f) => `${f.file}:${f.line} ${f.source}: use the injected Clock, or add the file to ALLOWED with why`),
    ).toEqual([])
  })

  test.each(ALLOWED.flatMap((a) => a.sources.map((s) => [`${a.file} ${s}`, a.file, s] as const)))(
    'the allowance %s is still needed',
    (_name, file, source) => {
      expect(found.some((f) => f.file === file && f.source === source)).toBe(true)
    },
  )
})
