// A test file is named by the behaviour it pins down (`sweep-resume-after-sigterm.test.ts`), in
// kebab-case, never by the occasion that produced it (an issue or round number, a session, "misc",
// "new-user") nor by its own folder's name (`export/export.test.ts`). Every test file a comment or
// a doc names exists, so a rename cannot leave a reference behind (CHANGELOG.md keeps its history).
import { existsSync, readdirSync, readFileSync } from 'node:fs'
import path from 'node:path'
import { describe, expect, test } from 'vitest'
import { ROOT } from '../../support/run-cli.js'
import { sourceFiles } from '../../support/source-files.js'

const KEBAB = /^[a-z0-9]+(-[a-z0-9]+)*(\.property)?\.test\.ts$/
// Words of an occasion, not a behaviour: a numbered issue, round, session or day; a grab bag; a
// scenario of the day. Matched as whole dash-separated words of the name (without the suffix).
const OCCASION = [
  /(^|-)(issues?|bugs?|fix|rounds?|sessions?|days?|parts?|phases?|sprints?|steps?)-?\d+(-|$)/,
  /(^|-)(misc|miscellaneous|extras?|regressions?|scenarios?|e2e|wip|todo|tmp|stuff|various)(-|$)/,
  /(^|-)(new-user|breaking-it|churn-day|spec-walk)(-|$)/,
]

/** Why a test file's repository-relative path is a bad name, or undefined when it is fine. */
export function badName(file: string): string | undefined {
  const base = path.posix.basename(file)
  if (!KEBAB.test(base)) return 'not kebab-case'
  const stem = base.replace(/(\.property)?\.test\.ts$/, '')
  if (OCCASION.some((re) => re.test(stem))) return 'named after an occasion, not a behaviour'
  if (stem === path.posix.basename(path.posix.dirname(file))) return 'repeats its folder'
  return undefined
}

const testFiles = (): string[] => sourceFiles('test').filter((f) => f.endsWith('.test.ts'))

describe('test file names', () => {
  test('the rule refuses occasion names and folder repeats, and leaves behaviour names alone', () => {
    for (const bad of [
      'test/integration/sync/issue-12.test.ts',
      'test/integration/sync/issue12-cursor.test.ts',
      'test/unit/cli/new-user.test.ts',
      'test/integration/daemon/breaking-it.test.ts',
      'test/integration/sync/churn-day.test.ts',
      'test/unit/store/round2.test.ts',
      'test/unit/store/round-2-fixes.test.ts',
      'test/unit/api/misc.test.ts',
      'test/unit/api/extra.test.ts',
      'test/integration/webhooks/regressions.test.ts',
      'test/integration/webhooks/emulator-e2e.test.ts',
      'test/emulator/spec-walk.test.ts',
      'test/integration/export/export.test.ts',
      'test/soak/soak.test.ts',
      'test/unit/api/governor/Core.property.test.ts',
      'test/unit/api/keyset_walk.test.ts',
    ])
      expect(badName(bad), bad).toBeDefined()
    for (const good of [
      'test/integration/daemon/sweep-resume-after-sigterm.test.ts',
      'test/unit/api/keyset-walk.test.ts',
      'test/unit/api/governor/core.property.test.ts',
      'test/unit/config/retention-config.test.ts',
      'test/unit/store/status-running.test.ts',
      'test/integration/cli/stop-within.test.ts',
      'test/integration/sync/zoneless-timestamps.test.ts',
      'test/integration/daemon/schedules-off.test.ts',
    ])
      expect(badName(good), good).toBeUndefined()
  })

  test('every test file is named by the behaviour it pins down', () => {
    const files = testFiles()
    expect(files.length).toBeGreaterThan(150)
    expect(files.flatMap((f) => (badName(f) ? [`${f}: ${badName(f)}`] : []))).toEqual([])
  })

  test('every test file a comment or a doc names exists', () => {
    const names = new Set(testFiles().map((f) => path.posix.basename(f)))
    const markdown = ['README.md', ...['docs', 'src', 'emulator', 'bench', 'config', 'connectors'].flatMap((d) => mdFiles(d))]
    const scanned = [...['src', 'connectors', 'emulator', 'bench', 'soak', 'scripts', 'test'].flatMap((d) => sourceFiles(d)), ...markdown]
    const missing: string[] = []
    // This file's own examples of bad names are left out.
    for (const file of scanned.filter((f) => f !== 'test/unit/repo/test-file-names.test.ts')) {
      for (const m of readFileSync(path.join(ROOT, file), 'utf8').matchAll(/(?<![\w./*-])\w[\w./-]*\.test\.ts\b/g)) {
        const cited = m[0]
        const found = cited.includes('/')
          ? [cited, `test/${cited}`].some((p) => existsSync(path.join(ROOT, p.replace(/^(\.\.?\/)+/, ''))))
          : names.has(cited)
        if (!found) missing.push(`${file} names ${cited}`)
      }
    }
    expect(missing).toEqual([])
  })
})

function mdFiles(dir: string, out: string[] = []): string[] {
  for (const entry of readdirSync(path.join(ROOT, dir), { withFileTypes: true })) {
    const rel = `${dir}/${entry.name}`
    if (entry.isDirectory()) mdFiles(rel, out)
    else if (entry.isFile() && entry.name.endsWith('.md')) out.push(rel)
  }
  return out
}
