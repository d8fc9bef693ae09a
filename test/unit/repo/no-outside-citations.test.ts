// Comments, docs and stored values stand alone: none points to a document outside the repository
// (the project's starting brief) or to an issue number. The repository's own documents are
// README.md, docs/architecture.md, docs/guarantees.md, config/README.md and emulator/README.md; a
// rule of the upstream API is said in words ("the API's specification, Limits"), never by path.
// The patterns are assembled from pieces so this file does not match them itself.
import { readdirSync, readFileSync } from 'node:fs'
import path from 'node:path'
import { describe, expect, test } from 'vitest'
import { ROOT } from '../../support/run-cli.js'

const MD = '\\.' + 'md'
const FORBIDDEN: readonly { what: string; re: RegExp }[] = [
  ...['contract', 'design', 'style', 'fsm-api'].map((name) => ({ what: `${name}.md`, re: new RegExp(`\\b${name}${MD}\\b`) })),
  { what: 'a path into ../shared', re: new RegExp('shared' + '/(spec|docs)\\b|\\.\\./' + 'shared/') },
  { what: 'an issue number', re: new RegExp('\\b' + 'issues?' + ' #?[0-9]+', 'i') },
]

const TS_DIRS = ['src', 'connectors', 'emulator', 'bench', 'soak', 'test']
const SKIP_DIRS = new Set(['node_modules', 'dist', '.git', 'coverage', 'data'])
// History files keep what was true when they were written; none exists today.
const HISTORY = /^(CHANGELOG|CHANGES|HISTORY)(\.|$)/i

function walk(dir: string, keep: (name: string) => boolean, out: string[] = []): string[] {
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    if (entry.isDirectory()) {
      if (!SKIP_DIRS.has(entry.name)) walk(path.join(dir, entry.name), keep, out)
    } else if (entry.isFile() && keep(entry.name)) {
      out.push(path.join(dir, entry.name))
    }
  }
  return out
}

function scannedFiles(): string[] {
  const ts = TS_DIRS.flatMap((d) => walk(path.join(ROOT, d), (n) => n.endsWith('.ts')))
  const md = walk(ROOT, (n) => n.endsWith('.md') && !HISTORY.test(n))
  return [...new Set([...ts, ...md])].sort()
}

function offences(file: string): string[] {
  const found: string[] = []
  readFileSync(file, 'utf8')
    .split('\n')
    .forEach((line, i) => {
      const hit = FORBIDDEN.find((f) => f.re.test(line))
      if (hit) found.push(`${path.relative(ROOT, file)}:${i + 1} (${hit.what}): ${line.trim().slice(0, 140)}`)
    })
  return found
}

describe('no citation points outside the repository', () => {
  test('the scan covers the source trees and the docs', () => {
    const rel = scannedFiles().map((f) => path.relative(ROOT, f))
    expect(rel).toEqual(
      expect.arrayContaining(['README.md', 'docs/guarantees.md', 'emulator/README.md', 'src/cli/main.ts', 'bench/run.ts']),
    )
    expect(rel.some((f) => f.includes('node_modules'))).toBe(false)
  })

  test('the patterns catch what they are for and leave ordinary words alone', () => {
    const caught = (line: string) => FORBIDDEN.some((f) => f.re.test(line))
    for (const bad of [
      '// see ' + 'design' + '.md',
      '// (iss' + 'ue 7)',
      '// Iss' + 'ue 3: x',
      '// iss' + 'ues #12',
      '// ../../sha' + 'red/spec/x',
      '// (iss' + 'ue 2, item 8)',
    ]) {
      expect(caught(bad), bad).toBe(true)
    }
    for (const ok of [
      '// webhooks register issues a new secret',
      '// see docs/guarantees.md, Newer wins',
      "// (the API's specification, Limits)",
    ]) {
      expect(caught(ok), ok).toBe(false)
    }
  })

  test('no comment, doc or stored text cites an outside document or an issue number', () => {
    expect(scannedFiles().flatMap(offences)).toEqual([])
  })

  test('bench results are keyed by topic, not by issue number', () => {
    const dir = path.join(ROOT, 'bench/results')
    for (const f of readdirSync(dir).filter((n) => n.endsWith('.json'))) {
      const stored = JSON.parse(readFileSync(path.join(dir, f), 'utf8')) as Record<string, unknown>
      expect(Object.keys(stored), f).not.toContain('issue')
      expect(typeof stored.topic, f).toBe('string')
    }
  })
})
