// The dependency rule of docs/architecture.md ("Layers and the dependency rule"), checked over every
// static import of the product trees. The rule is data: which layer may import which, plus a short
// list of edges allowed file by file. A new folder under src/ has no place in the table until someone
// gives it one, so the rule cannot be bypassed by adding a layer.
import { existsSync, readFileSync, statSync } from 'node:fs'
import path from 'node:path'
import ts from 'typescript'
import { describe, expect, test } from 'vitest'
import { ROOT } from '../../support/run-cli.js'
import { sourceFiles } from '../../support/source-files.js'

type Layer =
  | 'src/model'
  | 'src/config'
  | 'src/log'
  | 'src/api'
  | 'src/store'
  | 'connectors'
  | 'src/sync'
  | 'src/webhooks'
  | 'src/catalog'
  | 'src/export'
  | 'src/destination'
  | 'src/coordination'
  | 'src/daemon'
  | 'src/cli'
  | 'emulator'

const BASE: readonly Layer[] = ['src/model', 'src/config', 'src/log']
const MIDDLE: readonly Layer[] = [...BASE, 'src/api', 'src/store', 'connectors']
const ENGINE: readonly Layer[] = [...MIDDLE, 'src/sync', 'src/webhooks']

/** Whole layers a layer may import: `cli -> daemon -> {sync, webhooks} -> {connectors, api, store} -> {config, log}`. */
const MAY_IMPORT: Readonly<Record<Layer, readonly Layer[]>> = {
  // The leaf: what a table, a row, a stream and an instant are. It imports nothing of ours.
  'src/model': [],
  'src/config': [],
  'src/log': [],
  'src/api': BASE,
  'src/store': BASE,
  // Declarations over the model alone: what a stream, a table and a row are.
  connectors: ['src/model'],
  'src/sync': MIDDLE,
  'src/webhooks': MIDDLE,
  // The schema catalog and file exports read declarations and the mirror; only the CLI uses them.
  // The catalog describes rows as exports write them (which values become NULL).
  'src/catalog': [...BASE, 'src/store', 'connectors', 'src/export'],
  'src/export': [...BASE, 'src/store', 'connectors'],
  // The Postgres destination reads the mirror and the declarations; the daemon and the CLI run it.
  'src/destination': MIDDLE,
  // Membership and leases in the destination's Postgres server: they need nothing of the engine.
  'src/coordination': BASE,
  'src/daemon': [...ENGINE, 'src/destination', 'src/coordination'],
  'src/cli': [...ENGINE, 'src/destination', 'src/coordination', 'src/daemon', 'src/catalog', 'src/export'],
  // Written from the API's specification alone, so it shares no misreading with the product.
  emulator: [],
}

/**
 * Edges allowed one file at a time. `from` is a layer or a file, `to` is always a file; `typesOnly`
 * allows only `import type` (nothing runs across the edge). Each entry must still be used, so the
 * list shrinks when the code stops needing one.
 */
interface Allowance {
  from: string
  to: string
  typesOnly?: true
  why: string
}
const ALLOWED_FILES: readonly Allowance[] = [
  // `fsm-sync emulator` runs the emulator and the demo's orchestration starts one; nothing else in
  // the product reaches into it.
  { from: 'src/cli/emulator.ts', to: 'emulator/cli.ts', why: '`fsm-sync emulator` runs it' },
  { from: 'src/daemon/demo.ts', to: 'emulator/index.ts', why: '`fsm-sync demo` starts one in-process' },
]

const TREES = ['src', 'connectors', 'emulator']

interface Import {
  file: string
  line: number
  specifier: string
  typesOnly: boolean
}
interface Edge extends Import {
  target: string | undefined
}

/** Every module a source text names: imports, `export ... from`, `import()` of a literal, `import('x').T`. */
function importsOf(file: string, text: string): Import[] {
  const sf = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, true)
  const found: Import[] = []
  const add = (node: ts.Node, specifier: string, typesOnly: boolean) => {
    found.push({ file, line: sf.getLineAndCharacterOfPosition(node.getStart(sf)).line + 1, specifier, typesOnly })
  }
  const visit = (node: ts.Node): void => {
    if (ts.isImportDeclaration(node) && ts.isStringLiteral(node.moduleSpecifier)) {
      add(node, node.moduleSpecifier.text, node.importClause?.phaseModifier === ts.SyntaxKind.TypeKeyword)
    } else if (ts.isExportDeclaration(node) && node.moduleSpecifier && ts.isStringLiteral(node.moduleSpecifier)) {
      add(node, node.moduleSpecifier.text, node.isTypeOnly)
    } else if (ts.isCallExpression(node) && node.expression.kind === ts.SyntaxKind.ImportKeyword) {
      const arg = node.arguments[0]
      // A computed specifier cannot be checked; refuse it so the graph stays complete.
      add(node, arg && ts.isStringLiteralLike(arg) ? arg.text : '<computed>', false)
    } else if (ts.isImportTypeNode(node) && ts.isLiteralTypeNode(node.argument) && ts.isStringLiteral(node.argument.literal)) {
      add(node, node.argument.literal.text, true)
    }
    ts.forEachChild(node, visit)
  }
  visit(sf)
  return found
}

/** The repository-relative file a relative specifier names, or undefined when none exists. */
function resolve(from: string, specifier: string): string | undefined {
  const base = path.resolve(ROOT, path.dirname(from), specifier)
  const candidates = [base.replace(/\.js$/, '.ts'), base, `${base}.ts`, path.join(base, 'index.ts')]
  const hit = candidates.find((c) => existsSync(c) && statSync(c).isFile())
  return hit === undefined ? undefined : path.relative(ROOT, hit).split(path.sep).join('/')
}

function layerOf(file: string): Layer | undefined {
  const [top, folder] = file.split('/')
  const name = top === 'src' ? `src/${folder ?? ''}` : top
  return name !== undefined && name in MAY_IMPORT ? (name as Layer) : undefined
}

function productEdges(): Edge[] {
  return TREES.flatMap((t) => sourceFiles(t))
    .sort()
    .flatMap((file) =>
      importsOf(file, readFileSync(path.join(ROOT, file), 'utf8'))
        .filter((i) => i.specifier.startsWith('.') || i.specifier === '<computed>' || i.specifier.startsWith('fsm-sync'))
        .map((i) => ({ ...i, target: i.specifier.startsWith('.') ? resolve(file, i.specifier) : undefined })),
    )
}

function allowanceFor(e: Edge): Allowance | undefined {
  return ALLOWED_FILES.find(
    (a) => (a.from === e.file || a.from === layerOf(e.file)) && a.to === e.target && (a.typesOnly !== true || e.typesOnly),
  )
}

/** One message per import the rule refuses: `file:line imports X (A -> B is not allowed)`. */
function violations(edges: readonly Edge[]): string[] {
  const out: string[] = []
  for (const e of edges) {
    const at = `${e.file}:${e.line} imports '${e.specifier}'`
    const from = layerOf(e.file)
    if (from === undefined) {
      out.push(`${at} (${e.file} is in no layer of the table)`)
      continue
    }
    if (e.target === undefined) {
      out.push(`${at} (it names no file of the product trees, so its layer cannot be checked)`)
      continue
    }
    const to = layerOf(e.target)
    if (to === undefined) {
      out.push(`${at} (${from} -> ${e.target}, outside every layer, is not allowed)`)
      continue
    }
    if (to === from || MAY_IMPORT[from].includes(to) || allowanceFor(e)) continue
    const typeNote = ALLOWED_FILES.some((a) => a.to === e.target && a.typesOnly && (a.from === e.file || a.from === from))
      ? ' except by `import type`'
      : ''
    out.push(`${at} (layer ${from} -> layer ${to} is not allowed${typeNote})`)
  }
  return out
}

describe('imports follow the dependency rule of docs/architecture.md', () => {
  const edges = productEdges()

  test('the scan reads every kind of import a source can name', () => {
    const text = [
      "import { a } from './a.js'",
      "import type { B } from './b.js'",
      "export { c } from './c.js'",
      "export type * from './d.js'",
      "import './e.js'",
      "const f = await import('./f.js')",
      "let g: import('./g.js').G",
      'const h = await import(name)',
    ].join('\n')
    expect(importsOf('x.ts', text).map((i) => [i.line, i.specifier, i.typesOnly])).toEqual([
      [1, './a.js', false],
      [2, './b.js', true],
      [3, './c.js', false],
      [4, './d.js', true],
      [5, './e.js', false],
      [6, './f.js', false],
      [7, './g.js', true],
      [8, '<computed>', false],
    ])
  })

  test('the scan covers all three trees and resolves what it finds', () => {
    const files = new Set(edges.map((e) => e.file))
    for (const f of ['src/cli/main.ts', 'connectors/index.ts', 'emulator/index.ts', 'src/store/repositories/record-writer.ts'])
      expect(files, f).toContain(f)
    expect(edges.length).toBeGreaterThan(300)
  })

  test('the check refuses an upward, a sideways and a types-only-violating import', () => {
    const edge = (file: string, target: string, typesOnly = false): Edge => ({
      file,
      line: 3,
      specifier: `./${path.basename(target, '.ts')}.js`,
      typesOnly,
      target,
    })
    expect(
      violations([
        edge('src/store/x.ts', 'src/daemon/daemon.ts'),
        edge('src/sync/x.ts', 'src/webhooks/inbox.ts'),
        edge('connectors/x.ts', 'src/store/repositories/record-writer.ts'),
        edge('connectors/x.ts', 'src/store/repositories/record-writer.ts', true),
        edge('emulator/x.ts', 'src/store/timestamps.ts'),
        edge('src/daemon/x.ts', 'emulator/index.ts'),
        edge('src/newlayer/x.ts', 'src/log/logger.ts'),
      ]),
    ).toEqual([
      "src/store/x.ts:3 imports './daemon.js' (layer src/store -> layer src/daemon is not allowed)",
      "src/sync/x.ts:3 imports './inbox.js' (layer src/sync -> layer src/webhooks is not allowed)",
      "connectors/x.ts:3 imports './record-writer.js' (layer connectors -> layer src/store is not allowed)",
      "connectors/x.ts:3 imports './record-writer.js' (layer connectors -> layer src/store is not allowed)",
      "emulator/x.ts:3 imports './timestamps.js' (layer emulator -> layer src/store is not allowed)",
      "src/daemon/x.ts:3 imports './index.js' (layer src/daemon -> layer emulator is not allowed)",
      "src/newlayer/x.ts:3 imports './logger.js' (src/newlayer/x.ts is in no layer of the table)",
    ])
  })

  test('no import of src/, connectors/ or emulator/ crosses a boundary the rule forbids', () => {
    expect(violations(edges)).toEqual([])
  })

  test.each(ALLOWED_FILES.map((a) => [`${a.from} -> ${a.to}`, a] as const))('the allowance %s is still needed', (_name, a) => {
    expect(edges.some((e) => allowanceFor(e) === a && !MAY_IMPORT[layerOf(e.file)!].includes(layerOf(a.to)!))).toBe(true)
  })
})
