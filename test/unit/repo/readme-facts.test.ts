// Statements of the README that can be checked against the code: the commands of its table are the
// CLI's, the environment variables it names exist with the defaults it gives, and the stream names
// it lists for --stream are the ones the CLI takes.
import { readFileSync } from 'node:fs'
import path from 'node:path'
import { existsSync, readdirSync } from 'node:fs'
import { describe, expect, test } from 'vitest'
import { DATA_TABLES, DATA_VIEWS } from '../../../connectors/index.js'
import { commands } from '../../../src/cli/commands.js'
import { MAX_VIEW_FIELDS } from '../../../src/store/custom-object-views.js'
import { RECONCILABLE, streamOptionProblem } from '../../../src/cli/stream-option.js'
import { configKeys, envVariables } from '../../../src/config/config-doc.js'
import { ENV_VARIABLES, FLAG_KEYS } from '../../../src/config/index.js'
import { ROOT } from '../../support/run-cli.js'
import { tempMirror } from '../../support/temp-mirror.js'

const read = (file: string) => readFileSync(path.join(ROOT, file), 'utf8')
const README = read('README.md')
const MAIN = read('src/cli/main.ts')
const DOCS = ['README.md', 'config/README.md', 'emulator/README.md', 'docs/architecture.md', 'docs/guarantees.md']
/** Variables read outside the schema's keys. */
const OTHER_VARIABLES = ENV_VARIABLES.filter((name) => ![...envVariables().values()].includes(name))

/** The rows of the markdown table whose header row starts with `| first |`, as cells. */
function table(text: string, first: string): string[][] {
  const lines = text.split('\n')
  const start = lines.findIndex((l) => new RegExp(`^\\|\\s*${first}\\s*\\|`).test(l))
  expect(start, `a table whose first column is "${first}"`).toBeGreaterThanOrEqual(0)
  const rows: string[][] = []
  for (const line of lines.slice(start + 2)) {
    if (!line.startsWith('|')) break
    rows.push(
      line
        .slice(1, -1)
        .split(/(?<!\\)\|/)
        .map((c) => c.trim()),
    )
  }
  return rows
}

/** The backticked values of a cell. */
const ticked = (cell: string) => [...cell.matchAll(/`([^`]+)`/g)].map((m) => m[1]!)

describe('README.md', () => {
  test("the Node version it asks for is package.json's engines, and no demo folder is suggested inside the clone", () => {
    const engines = (JSON.parse(read('package.json')) as { engines: { node: string } }).engines.node
    const minimum = /^>=(\d+\.\d+\.\d+)$/.exec(engines)?.[1]
    expect(minimum, `package.json engines.node ${engines}`).toBeDefined()
    const stated = [...README.matchAll(/Node (\d+(?:\.\d+)*) or newer/g)].map((m) => m[1])
    expect(stated.length).toBeGreaterThan(0)
    for (const version of stated) expect(version).toBe(minimum)
    // A relative --dir run from the clone leaves an untracked folder in it.
    expect(README).not.toMatch(/--dir (\.{1,2}\/|[a-z])/)
  })

  test('the Commands table lists exactly the commands the CLI has', () => {
    const documented = table(README, 'command').map((row) => /^`fsm-sync ([a-z-]+)/.exec(row[0]!)?.[1])
    expect(documented.every((c) => c !== undefined)).toBe(true)
    expect([...documented].sort()).toEqual(commands.map((c) => c.command.split(' ')[0]!).sort())
  })

  test('every environment variable the docs name exists', () => {
    const known = new Set(ENV_VARIABLES)
    for (const file of DOCS) {
      for (const m of read(file).matchAll(/\bFSM_[A-Z0-9_]*[A-Z0-9]\b/g)) {
        // FSM_SCHEDULE_<NAME> stands for the family.
        if (
          m[0] === 'FSM_SCHEDULE_' ||
          read(file)
            .slice(m.index, m.index + 20)
            .startsWith('FSM_SCHEDULE_<')
        )
          continue
        expect(known, `${file} names ${m[0]}`).toContain(m[0])
      }
    }
    // And the README names each of them.
    for (const name of known) expect(README, `README.md does not name ${name}`).toContain('`' + name + '`')
  })

  test('the Configuration tables give each variable its flag and actual default', () => {
    const keyOf = new Map([...envVariables()].map(([key, env]) => [env, key]))
    const rows = new Map(configKeys().map((k) => [k.key, k]))
    // An empty list of secrets reads as none in the README.
    const shown = (key: string) =>
      rows
        .get(key)!
        .shownDefault.replace(/^`"?|"?`$/g, '')
        .replace(/^\[\]$/, 'none')
    const flagOf = new Map(Object.entries(FLAG_KEYS).map(([flag, key]) => [key as string, `--${flag}`]))
    // Every flag loadConfig reads is one the CLI defines.
    for (const flag of Object.keys(FLAG_KEYS)) expect(MAIN, `--${flag} is a global option of the CLI`).toContain(`.option('${flag}', {`)
    for (const [variables, flag, defaults] of table(README, 'variable')) {
      const names = ticked(variables!)
      const values = defaults === 'none' ? names.map(() => 'none') : ticked(defaults!)
      expect(values.length, `defaults of ${variables}`).toBe(names.length)
      names.forEach((name, i) => {
        if (OTHER_VARIABLES.includes(name)) return
        const key = keyOf.get(name)!
        expect(values[i], `README.md's default of ${name}`).toBe(shown(key))
        const flags = ticked(flag!).filter((f) => f.startsWith('--'))
        if (flags.length > 0) expect(flags, `README.md's flag of ${name}`).toEqual([flagOf.get(key)])
        // A flag the README gives is one every command takes.
        for (const f of flags) expect(MAIN, `${f} is a global option of the CLI`).toContain(`.option('${f.slice(2)}', {`)
      })
    }
    for (const [schedule, variable, value] of table(README, 'schedule \\(`schedules\\.\\*`\\)')) {
      const key = `schedules.${ticked(schedule!)[0]!}`
      expect(keyOf.get(ticked(variable!)[0]!), schedule).toBe(key)
      expect(ticked(value!)[0], `README.md's default of ${key}`).toBe(shown(key))
    }
  })

  test('the stream names --stream takes are the ones the README lists', () => {
    const rows = table(README, 'command')
    const namesIn = (command: string) => {
      const cell = rows.find((r) => r[0]!.startsWith('`fsm-sync ' + command))![1]!
      return ticked(/`--stream` takes (.*?)(?:\.|;|\()/.exec(cell)![1]!).filter((n) => n !== 'objects:<slug>')
    }
    // The names the CLI takes, from its own refusal of a name that is none of them.
    const takes = (command: 'sync' | 'reconcile') =>
      /takes: (.*), or objects:<slug>/.exec(streamOptionProblem(command, 'no-such-stream')!)![1]!.split(', ')
    expect(namesIn('sync')).toEqual(takes('sync'))
    expect(namesIn('reconcile')).toEqual(takes('reconcile'))
    expect(namesIn('reconcile')).toEqual([...RECONCILABLE])
    expect(streamOptionProblem('sync', 'objects:equipment')).toBeUndefined()
  })

  test("the Tables section names every table and view of the account's data, each in a new mirror; the example queries prepare", async () => {
    const mirror = await tempMirror()
    try {
      const names = new Set(
        (mirror.sqlite.prepare("SELECT name FROM sqlite_master WHERE type IN ('table', 'view')").all() as { name: string }[]).map(
          (r) => r.name,
        ),
      )
      const section = README.slice(README.indexOf('\n## Tables\n'))
      const rows = table(section.slice(0, section.indexOf('\n## ', 1)), 'table')
      // Every row names a table (a stray separator row names none).
      for (const row of rows) expect(ticked(row[0]!), `README.md's Tables has a row naming no table: ${row.join(' | ')}`).not.toEqual([])
      const documented = rows.flatMap((row) => ticked(row[0]!)).filter((t) => t !== 'obj_<slug>')
      for (const t of documented) expect(names, `README.md's Tables names ${t}`).toContain(t)
      for (const t of [...DATA_TABLES, ...DATA_VIEWS]) expect(documented, `README.md's Tables omits ${t.name}`).toContain(t.name)
      // The width of a custom object's view (src/store/custom-object-views.ts).
      expect(section).toContain(`At most ${MAX_VIEW_FIELDS.toLocaleString('en-US')} field columns`)
      // The example queries name real tables and columns (a custom object's view needs the object).
      const examples = /```sql\n([\s\S]*?)```/.exec(README)![1]!
      const statements = examples
        .split(';')
        .map((st) => st.replace(/^--.*$/gm, '').trim())
        .filter((st) => st !== '' && !st.includes('obj_'))
      expect(statements.length).toBeGreaterThan(5)
      for (const st of statements) expect(() => mirror.sqlite.prepare(st), st).not.toThrow()
    } finally {
      await mirror.dispose()
    }
  })

  test('every metric the docs name is one the code defines', () => {
    const source = sourcesUnder('src')
    for (const file of DOCS) {
      for (const m of read(file).matchAll(/\bfsm_[a-z_]*[a-z]\b/g)) {
        // A family (fsm_webhook_intake_*_total) is named by its prefix.
        expect(source, `${file} names the metric ${m[0]}`).toContain(m[0])
      }
    }
  })

  test('every file the docs point at exists (test paths may be written from test/)', () => {
    const tree = /^(src|test|connectors|emulator|bench|soak|docs|scripts|config|unit|integration)\/[\w./-]*\.(ts|md|json)$/
    for (const file of DOCS) {
      for (const m of read(file).matchAll(/`([^`\s]+)`/g)) {
        if (!tree.test(m[1]!)) continue
        expect(existsSync(path.join(ROOT, m[1]!)) || existsSync(path.join(ROOT, 'test', m[1]!)), `${file} points at ${m[1]}`).toBe(true)
      }
    }
  })
})

/** The text of every .ts file under `dir`. */
function sourcesUnder(dir: string): string {
  return readdirSync(path.join(ROOT, dir), { recursive: true, withFileTypes: true })
    .filter((e) => e.isFile() && e.name.endsWith('.ts'))
    .map((e) => readFileSync(path.join(e.parentPath, e.name), 'utf8'))
    .join('\n')
}
