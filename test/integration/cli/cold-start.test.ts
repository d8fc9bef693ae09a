// A command loads the modules it runs and no others (commands.ts): `--version` and `--help` none of
// the configuration, the mirror or a destination, `query` and `status` no parser (plain-args.ts), no
// DuckDB, no daemon, no query builder and no Postgres driver, the image's `healthcheck` no database driver. Pinned by the modules a child actually loads (a loader
// hook lists them), not by its time; `npm run bench` measures the time (bench/cold-start.bench.ts).
import { spawn } from 'node:child_process'
import { readFileSync, writeFileSync } from 'node:fs'
import path from 'node:path'
import { pathToFileURL } from 'node:url'
import { afterAll, beforeAll, describe, expect, test } from 'vitest'
import { SyncStateStore } from '../../../src/store/repositories/sync-state.js'
import { cleanEnv, ROOT } from '../../support/run-cli.js'
import { tempDir, tempMirror, type TempMirror } from '../../support/temp-mirror.js'

const ENTRY = path.join(ROOT, 'src/cli/entry.ts')
const trace = tempDir('fsm-trace-')
let mirror: TempMirror

beforeAll(async () => {
  // The hook runs on the loader's thread and appends each module's URL to the file the child names.
  writeFileSync(
    path.join(trace, 'hooks.mjs'),
    `import { appendFileSync } from 'node:fs'
export async function load(url, context, next) {
  appendFileSync(process.env.MODULE_TRACE, url + '\\n')
  return next(url, context)
}\n`,
  )
  // CommonJS loads (a package required through createRequire) pass no hook: the child lists the
  // require cache as it exits.
  writeFileSync(
    path.join(trace, 'register.mjs'),
    `import { appendFileSync } from 'node:fs'
import Module, { register } from 'node:module'
import { pathToFileURL } from 'node:url'
register(${JSON.stringify(pathToFileURL(path.join(trace, 'hooks.mjs')).href)})
process.on('exit', () => {
  const urls = Object.keys(Module._cache).map((f) => pathToFileURL(f).href)
  appendFileSync(process.env.MODULE_TRACE, urls.join('\\n') + '\\n')
})\n`,
  )
  mirror = await tempMirror()
  const state = new SyncStateStore(mirror.sqlite)
  const now = new Date().toISOString()
  state.finishRun(state.startRun('sweep', 'jobs', now), { outcome: 'success', rows: 0, requests: 1 }, now)
})
afterAll(() => mirror.dispose())

let runs = 0

/** The modules `fsm-sync <args>` loads, as paths inside the repository or `<package>/...`. */
async function modulesLoaded(args: string[]): Promise<{ code: number | null; modules: string[] }> {
  const file = path.join(trace, `run-${runs++}.txt`)
  writeFileSync(file, '')
  const env = cleanEnv({ FSM_DB: path.join(mirror.dir, 'mirror.db'), MODULE_TRACE: file })
  const child = spawn(process.execPath, ['--import', 'tsx', '--import', path.join(trace, 'register.mjs'), ENTRY, ...args], {
    cwd: ROOT,
    env,
    stdio: 'ignore',
  })
  const code = await new Promise<number | null>((resolve) => child.on('close', resolve))
  const modules = readFileSync(file, 'utf8')
    .split('\n')
    .filter((u) => u.startsWith('file://'))
    .map((u) => {
      const p = new URL(u).pathname
      const i = p.lastIndexOf('/node_modules/')
      return i >= 0 ? p.slice(i + '/node_modules/'.length) : path.relative(ROOT, p)
    })
  return { code, modules }
}

const PACKAGES = {
  duckdb: /^@duckdb\//,
  pg: /^pg\//,
  kysely: /^kysely\//,
  zod: /^zod\//,
  pino: /^pino\//,
  sqlite: /^better-sqlite3\//,
  yargs: /^yargs\//,
}
const AREAS = {
  daemon: /^src\/daemon\//,
  store: /^src\/store\//,
  migrations: /^src\/store\/migrations\//,
  destination: /^src\/destination\//,
  config: /^src\/config\/schema\.ts$/,
}
type Name = keyof typeof PACKAGES | keyof typeof AREAS

function loaded(modules: readonly string[]): Set<Name> {
  const all = { ...PACKAGES, ...AREAS }
  return new Set((Object.keys(all) as Name[]).filter((name) => modules.some((m) => all[name].test(m))))
}

describe('what a command loads', () => {
  test('--version: no parser, no configuration, no database', async () => {
    const r = await modulesLoaded(['--version'])
    expect(r.code).toBe(0)
    expect([...loaded(r.modules)]).toEqual([])
  })

  test('--help: the parser and the command list only', async () => {
    const r = await modulesLoaded(['--help'])
    expect(r.code).toBe(0)
    expect([...loaded(r.modules)]).toEqual(['yargs'])
    // No command's own file: each is imported when it is chosen.
    expect(r.modules.filter((m) => m.startsWith('src/cli/')).sort()).toEqual(
      ['src/cli/commands.ts', 'src/cli/entry.ts', 'src/cli/main.ts', 'src/cli/output.ts', 'src/cli/plain-args.ts'].sort(),
    )
  })

  test('query: the mirror and the configuration, no parser, migrations, query builder, logger, DuckDB, Postgres or daemon', async () => {
    const r = await modulesLoaded(['query', 'select 1'])
    expect(r.code).toBe(0)
    const names = loaded(r.modules)
    for (const n of ['sqlite', 'zod', 'store', 'config'] as const) expect(names).toContain(n)
    for (const n of ['yargs', 'duckdb', 'pg', 'kysely', 'pino', 'migrations', 'daemon', 'destination'] as const)
      expect(names).not.toContain(n)
  })

  test('query with options yargs is needed for (--help): the parser too', async () => {
    const r = await modulesLoaded(['query', '--help'])
    expect(r.code).toBe(0)
    expect(loaded(r.modules)).toContain('yargs')
  })

  test('status: plain statements on the mirror, no parser, migrations, query builder, logger, Postgres driver, DuckDB or daemon', async () => {
    const r = await modulesLoaded(['status', '--json'])
    expect(r.code).toBe(0)
    const names = loaded(r.modules)
    for (const n of ['sqlite', 'store'] as const) expect(names).toContain(n)
    for (const n of ['yargs', 'duckdb', 'pg', 'kysely', 'pino', 'migrations', 'daemon'] as const) expect(names).not.toContain(n)
    // The destination's consumer name only, not the modules that replicate.
    expect(r.modules.filter((m) => m.startsWith('src/destination/')).sort()).toEqual([
      'src/destination/consumer-name.ts',
      'src/destination/postgres-errors.ts',
    ])
  })

  test('replicas: the driver only once the command reads Postgres; no daemon, store or replication modules', async () => {
    // No FSM_POSTGRES_URL: the usage error comes before the driver is loaded.
    const r = await modulesLoaded(['replicas'])
    expect(r.code).toBe(2)
    const names = loaded(r.modules)
    for (const n of ['pg', 'duckdb', 'kysely', 'sqlite', 'migrations', 'daemon', 'destination'] as const) expect(names).not.toContain(n)
    expect(r.modules).toContain('src/cli/replicas.ts')
  })

  test('accounts: what status reads, per account, no migrations, query builder, logger, Postgres driver, DuckDB or daemon', async () => {
    const r = await modulesLoaded(['accounts'])
    expect(r.code).toBe(0)
    const names = loaded(r.modules)
    for (const n of ['sqlite', 'store'] as const) expect(names).toContain(n)
    for (const n of ['duckdb', 'pg', 'kysely', 'pino', 'migrations', 'daemon'] as const) expect(names).not.toContain(n)
  })

  test('healthcheck (every 30 s in the image): the configuration, no database driver', async () => {
    const r = await modulesLoaded(['healthcheck', '--timeout', '1'])
    expect(r.code).toBe(1)
    const names = loaded(r.modules)
    expect(names).toContain('config')
    for (const n of ['duckdb', 'pg', 'kysely', 'sqlite', 'daemon', 'store', 'destination'] as const) expect(names).not.toContain(n)
  })
})
