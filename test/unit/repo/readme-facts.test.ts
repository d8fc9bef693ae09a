// Statements of the README and the docs pages that can be checked against the code: the commands
// of docs/commands.md are the CLI's, the environment variables they name exist with the defaults
// docs/configuration.md gives, the stream names listed for --stream are the ones the CLI takes, and
// every relative link resolves.
import { readFileSync } from 'node:fs'
import path from 'node:path'
import { existsSync, readdirSync } from 'node:fs'
import { describe, expect, test } from 'vitest'
import { DATA_TABLES, DATA_VIEWS } from '../../../connectors/index.js'
import { commands } from '../../../src/cli/commands.js'
import { GLOBAL_OPTIONS } from '../../../src/cli/main.js'
import { MAX_VIEW_FIELDS } from '../../../src/store/repositories/custom-object-views.js'
import { RECONCILABLE, streamOptionProblem } from '../../../src/cli/stream-option.js'
import { configKeys, envVariables } from '../../../src/config/config-doc.js'
import { ENV_VARIABLES, FLAG_KEYS } from '../../../src/config/index.js'
import { ROOT } from '../../support/run-cli.js'
import { tempMirror } from '../../support/temp-mirror.js'

const read = (file: string) => readFileSync(path.join(ROOT, file), 'utf8')
const README = read('README.md')
const COMMANDS = read('docs/commands.md')
const CONFIGURATION = read('docs/configuration.md')
const QUERYING = read('docs/querying.md')
/** The pages the README sends a reader to (docs/tables.md is generated and checked where it is written). */
const PAGES = readdirSync(path.join(ROOT, 'docs'))
  .filter((f) => f.endsWith('.md') && f !== 'tables.md')
  .map((f) => `docs/${f}`)
const DOCS = ['README.md', 'config/README.md', 'emulator/README.md', ...PAGES]
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

describe('README.md and docs/', () => {
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
    const documented = table(COMMANDS, 'command').map((row) => /^`fsm-sync ([a-z-]+)/.exec(row[0]!)?.[1])
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
    // And the Configuration page names each of them.
    for (const name of known) expect(CONFIGURATION, `docs/configuration.md does not name ${name}`).toContain('`' + name + '`')
  })

  test('the Configuration tables give each variable its flag and actual default', () => {
    const keyOf = new Map([...envVariables()].map(([key, env]) => [env, key]))
    const rows = new Map(configKeys().map((k) => [k.key, k]))
    // An empty list of secrets reads as none in the docs.
    const shown = (key: string) =>
      rows
        .get(key)!
        .shownDefault.replace(/^`"?|"?`$/g, '')
        .replace(/^\[\]$/, 'none')
    const flagOf = new Map(Object.entries(FLAG_KEYS).map(([flag, key]) => [key as string, `--${flag}`]))
    // Every flag loadConfig reads is one the CLI defines.
    for (const flag of Object.keys(FLAG_KEYS))
      expect(Object.keys(GLOBAL_OPTIONS), `--${flag} is a global option of the CLI`).toContain(flag)
    for (const [variables, flag, defaults] of table(CONFIGURATION, 'variable')) {
      const names = ticked(variables!)
      const values = defaults === 'none' ? names.map(() => 'none') : ticked(defaults!)
      expect(values.length, `defaults of ${variables}`).toBe(names.length)
      names.forEach((name, i) => {
        if (OTHER_VARIABLES.includes(name)) return
        const key = keyOf.get(name)!
        expect(values[i], `docs/configuration.md's default of ${name}`).toBe(shown(key))
        const flags = ticked(flag!).filter((f) => f.startsWith('--'))
        if (flags.length > 0) expect(flags, `docs/configuration.md's flag of ${name}`).toEqual([flagOf.get(key)])
        // A flag the page gives is one every command takes.
        for (const f of flags) expect(Object.keys(GLOBAL_OPTIONS), `${f} is a global option of the CLI`).toContain(f.slice(2))
      })
    }
    for (const [schedule, variable, value] of table(CONFIGURATION, 'schedule \\(`schedules\\.\\*`\\)')) {
      const key = `schedules.${ticked(schedule!)[0]!}`
      expect(keyOf.get(ticked(variable!)[0]!), schedule).toBe(key)
      expect(ticked(value!)[0], `docs/configuration.md's default of ${key}`).toBe(shown(key))
    }
  })

  test('the stream names --stream takes are the ones docs/commands.md lists', () => {
    const rows = table(COMMANDS, 'command')
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
      const section = QUERYING.slice(QUERYING.indexOf('\n## Tables\n'))
      const rows = table(section.slice(0, section.indexOf('\n## ', 1)), 'table')
      // Every row names a table (a stray separator row names none).
      for (const row of rows)
        expect(ticked(row[0]!), `docs/querying.md's Tables has a row naming no table: ${row.join(' | ')}`).not.toEqual([])
      const documented = rows.flatMap((row) => ticked(row[0]!)).filter((t) => t !== 'obj_<slug>')
      for (const t of documented) expect(names, `docs/querying.md's Tables names ${t}`).toContain(t)
      for (const t of [...DATA_TABLES, ...DATA_VIEWS]) expect(documented, `docs/querying.md's Tables omits ${t.name}`).toContain(t.name)
      // The width of a custom object's view (src/store/repositories/custom-object-views.ts).
      expect(section).toContain(`At most ${MAX_VIEW_FIELDS.toLocaleString('en-US')} field columns`)
      // The example queries name real tables and columns (a custom object's view needs the object).
      const examples = /```sql\n([\s\S]*?)```/.exec(QUERYING)![1]!
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

describe('README.md, the front page', () => {
  const README = read('README.md')
  const section = (title: string) => {
    const start = README.indexOf(`\n## ${title}\n`)
    expect(start, `README.md has a section ${title}`).toBeGreaterThanOrEqual(0)
    const end = README.indexOf('\n## ', start + 1)
    return README.slice(start, end < 0 ? undefined : end)
  }

  test('stays short: everything else is a docs page it links to', () => {
    expect(README.split('\n').length).toBeLessThanOrEqual(220)
    for (const page of PAGES) expect(README, `README.md links to ${page}`).toContain(`](${page})`)
  })

  test('"A real account into Postgres" is five commands or fewer, each a command the CLI has', () => {
    const block = /```sh\n([\s\S]*?)```/.exec(section('A real account into Postgres'))![1]!
    const lines = block.split('\n').filter((l) => l.trim() !== '')
    expect(lines.length).toBeLessThanOrEqual(5)
    const names = commands.map((c) => c.command.split(' ')[0]!)
    for (const m of block.matchAll(/npx fsm-sync ([a-z-]+)/g)) expect(names, m[0]).toContain(m[1])
  })

  test('the quick start says how long the whole suite takes and offers the fast subset', () => {
    const scripts = (JSON.parse(read('package.json')) as { scripts: Record<string, string> }).scripts
    const quick = section('Quick start')
    expect(quick).toMatch(/npm test .*about \d+ minutes/)
    expect(quick).toContain('npm run test:unit')
    expect(scripts['test:unit']).toBeDefined()
  })
})

describe('links', () => {
  // The README, the pages and the folders' own READMEs: the places a reader follows links through.
  const folderReadmes = readdirSync(path.join(ROOT, 'src'), { recursive: true, withFileTypes: true })
    .filter((e) => e.isFile() && e.name === 'README.md')
    .map((e) => path.relative(ROOT, path.join(e.parentPath, e.name)))
  const linked = [...DOCS, 'docs/tables.md', ...folderReadmes]

  test('every relative link goes to a file of the repository, and every #anchor to a heading of it', () => {
    for (const file of linked) {
      const text = read(file).replace(/```[\s\S]*?```/g, '')
      for (const m of text.matchAll(/\]\(([^)\s]+)\)/g)) {
        const target = m[1]!
        if (/^[a-z]+:/.test(target)) continue
        const [where, anchor] = target.split('#') as [string, string | undefined]
        const resolved = where === '' ? file : path.join(path.dirname(file), where)
        expect(existsSync(path.join(ROOT, resolved)), `${file} links to ${target}`).toBe(true)
        if (anchor !== undefined) expect(anchors(read(resolved)), `${file} links to ${target}`).toContain(anchor)
      }
    }
  })
})

/** The anchors of a markdown text: GitHub's slug of each heading, and explicit `<a id>`s. */
function anchors(text: string): Set<string> {
  const found = new Set<string>()
  const body = text.replace(/```[\s\S]*?```/g, '')
  for (const m of body.matchAll(/^#{1,6} (.*)$/gm)) {
    const slug = m[1]!
      .trim()
      .toLowerCase()
      .replace(/[^\p{L}\p{N}\s_-]/gu, '')
      .replace(/\s/g, '-')
    let unique = slug
    for (let n = 1; found.has(unique); n++) unique = `${slug}-${n}`
    found.add(unique)
  }
  for (const m of body.matchAll(/<a id="([^"]+)"/g)) found.add(m[1]!)
  return found
}

/** The text of every .ts file under `dir`. */
function sourcesUnder(dir: string): string {
  return readdirSync(path.join(ROOT, dir), { recursive: true, withFileTypes: true })
    .filter((e) => e.isFile() && e.name.endsWith('.ts'))
    .map((e) => readFileSync(path.join(e.parentPath, e.name), 'utf8'))
    .join('\n')
}
