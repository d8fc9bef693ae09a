// What the Dockerfile promises, read from it (no Docker engine needed): a numeric non-root user that
// owns /data, the HEALTHCHECK asking `fsm-sync healthcheck` with room for its own timeout, no
// variable that would hide the config file's listener, one Node version for both stages as the
// deployment page says, and a better-sqlite3 pruned to what runs (its commands run here on a copy).
import { execFileSync } from 'node:child_process'
import { cpSync, readFileSync } from 'node:fs'
import path from 'node:path'
import { createRequire } from 'node:module'
import { describe, expect, test } from 'vitest'
import { commands } from '../../../src/cli/commands.js'
import { DEFAULT_TIMEOUT_SECONDS } from '../../../src/cli/healthcheck.js'
import { ROOT } from '../../support/run-cli.js'
import { tempDir } from '../../support/temp-mirror.js'

const DOCKERFILE = readFileSync(path.join(ROOT, 'Dockerfile'), 'utf8')
const DEPLOYMENT = readFileSync(path.join(ROOT, 'docs/deployment.md'), 'utf8')
/** Instructions with their continuation lines joined. */
const instructions = DOCKERFILE.replace(/\\\n/g, ' ')
  .split('\n')
  .filter((l) => l.trim() !== '' && !l.startsWith('#'))
const runtime = instructions.slice(instructions.findLastIndex((l) => l.startsWith('FROM ')))

describe('Dockerfile', () => {
  test('runs as a numeric non-root user that owns /data, the uid docs/deployment.md names', () => {
    const user = runtime.filter((l) => l.startsWith('USER '))
    expect(user).toEqual([expect.stringMatching(/^USER [1-9]\d*:\d+$/)])
    const uid = /^USER (\d+):(\d+)$/.exec(user[0]!)!
    expect(runtime.join('\n')).toContain(`chown ${uid[1]}:${uid[2]} /data`)
    expect(DEPLOYMENT).toContain(`writable by uid ${uid[1]}`)
  })

  test('its HEALTHCHECK is `fsm-sync healthcheck`, given more time than the command waits', () => {
    const check = runtime.filter((l) => l.startsWith('HEALTHCHECK '))
    expect(check).toHaveLength(1)
    expect(check[0]).toMatch(/ CMD \["fsm-sync", "healthcheck"\]$/)
    expect(commands.map((c) => c.command)).toContain('healthcheck')
    expect(Number(/--timeout=(\d+)s/.exec(check[0]!)?.[1])).toBeGreaterThan(DEFAULT_TIMEOUT_SECONDS)
  })

  test('sets no listener variable: the config file may set httpHost and httpPort', () => {
    const env = runtime.filter((l) => l.startsWith('ENV ')).join(' ')
    expect(env).toContain('FSM_DB=/data/')
    expect(env).not.toMatch(/FSM_HTTP_/)
  })

  test('builds both stages on the Node version docs/deployment.md names', () => {
    const version = /^ARG NODE_VERSION=(\d+)$/m.exec(DOCKERFILE)?.[1]
    expect(version).toBeDefined()
    const froms = instructions.filter((l) => l.startsWith('FROM '))
    expect(froms).toHaveLength(2)
    for (const f of froms) expect(f).toMatch(/^FROM node:\$\{NODE_VERSION\}-bookworm-slim\b/)
    expect(DEPLOYMENT).toContain(`image on Node ${version} LTS`)
    const engines = (JSON.parse(readFileSync(path.join(ROOT, 'package.json'), 'utf8')) as { engines: { node: string } }).engines.node
    expect(Number(version)).toBeGreaterThanOrEqual(Number(/^>=(\d+)/.exec(engines)?.[1]))
  })

  test("its pruning keeps better-sqlite3 working and drops the compiler's leftovers", () => {
    // The build stage's commands from `cd node_modules/better-sqlite3` to `cd /app`, run on a copy.
    const build = instructions.find((l) => l.includes('cd node_modules/better-sqlite3'))!
    const steps = build.split('&&').map((s) => s.trim())
    const from = steps.indexOf('cd node_modules/better-sqlite3')
    const prune = steps.slice(from + 1, steps.indexOf('cd /app'))
    expect(prune.length).toBeGreaterThan(0)
    const app = tempDir('fsm-image-')
    const copy = path.join(app, 'node_modules/better-sqlite3')
    const require = createRequire(import.meta.url)
    cpSync(path.dirname(require.resolve('better-sqlite3/package.json')), copy, { recursive: true, dereference: true })
    execFileSync('sh', ['-ec', prune.join('\n')], { cwd: copy })
    const size = Number(execFileSync('du', ['-sk', copy], { encoding: 'utf8' }).split('\t')[0])
    expect(size).toBeLessThan(4 * 1024)
    // Loaded from the pruned copy (its own bindings found through the real node_modules).
    const out = execFileSync(
      process.execPath,
      ['-e', `console.log(new (require(${JSON.stringify(copy)}))(':memory:').prepare('select 41 + 1 AS n').get().n)`],
      {
        encoding: 'utf8',
        env: { ...process.env, NODE_PATH: path.join(ROOT, 'node_modules') },
      },
    )
    expect(out.trim()).toBe('42')
  })
})
