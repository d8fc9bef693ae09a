// Kills a process while it creates and migrates an empty mirror, at seeded random moments, and
// checks that the next open always goes on: each migration commits with its bookkeeping row or not
// at all, whatever instruction the kill interrupts.
import { spawn } from 'node:child_process'
import { rmSync } from 'node:fs'
import path from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import { MIGRATIONS } from '../../../src/store/migrations/index.js'
import { openMirror } from '../../../src/store/sqlite/mirror-database.js'
import { ROOT, cleanEnv } from '../../support/run-cli.js'
import { seededRandom } from '../../support/seeded-random.js'
import { tempDir } from '../../support/temp-mirror.js'

const CHILD = path.join(ROOT, 'test/support/open-mirror-child.ts')
const TRIALS = 24
/** The child's migrations, slowed to about 1 ms a statement, take about 80 ms from `migrating`. */
const MAX_OFFSET_MS = 80

/** Runs the child on `file` and SIGKILLs it `offsetMs` after its migrations start; true if it was still opening. */
function openAndKill(file: string, offsetMs: number): Promise<boolean> {
  const child = spawn(process.execPath, ['--import', 'tsx', CHILD, file], { cwd: ROOT, env: cleanEnv(), stdio: ['ignore', 'pipe', 'pipe'] })
  let out = ''
  return new Promise((resolve, reject) => {
    child.on('error', reject)
    child.stdout.setEncoding('utf8').on('data', (d: string) => {
      const before = out
      out += d
      if (!before.includes('migrating') && out.includes('migrating')) setTimeout(() => child.kill('SIGKILL'), offsetMs)
    })
    child.on('close', () => resolve(!out.includes('opened')))
  })
}

describe('a SIGKILL during the first migrations leaves a mirror the next start opens', () => {
  const dir = tempDir('fsm-migration-kill-')
  afterAll(() => rmSync(dir, { recursive: true, force: true }))

  it(`opens after ${TRIALS} kills at seeded random moments of the migrations, every migration applied`, { timeout: 60_000 }, async () => {
    const next = seededRandom(20_260_117)
    const failures: string[] = []
    let interrupted = 0
    const trial = async (i: number) => {
      const file = path.join(dir, `mirror-${i}.db`)
      const offset = next() * MAX_OFFSET_MS
      if (await openAndKill(file, offset)) interrupted++
      try {
        // Nothing half-applied to clean up: each migration committed whole or not at all.
        const repaired: unknown[] = []
        const mirror = await openMirror(file, { logger: { warn: (fields: unknown) => repaired.push(fields) } })
        const applied = mirror.sqlite.prepare('SELECT name FROM kysely_migration ORDER BY name').pluck().all()
        await mirror.close()
        expect(applied).toEqual(Object.keys(MIGRATIONS).sort())
        expect(repaired).toEqual([])
      } catch (err) {
        failures.push(`trial ${i} (killed ${offset.toFixed(1)} ms in): ${(err as Error).message}`)
      }
    }
    // Two at a time: the machine has two cores, and the children spend most of their life starting.
    for (let i = 0; i < TRIALS; i += 2) await Promise.all([trial(i), trial(i + 1)])
    expect(failures).toEqual([])
    // Most kills must land while the migrations run, or this test proves nothing.
    expect(interrupted).toBeGreaterThanOrEqual(TRIALS / 2)
  })

  it(
    'two processes migrating one empty mirror at once both open it; the second skips what the first applied',
    { timeout: 30_000 },
    async () => {
      const file = path.join(dir, 'shared.db')
      const run = () =>
        new Promise<{ code: number | null; out: string; err: string }>((resolve, reject) => {
          const child = spawn(process.execPath, ['--import', 'tsx', CHILD, file], {
            cwd: ROOT,
            env: cleanEnv(),
            stdio: ['ignore', 'pipe', 'pipe'],
          })
          let out = ''
          let err = ''
          child.stdout.setEncoding('utf8').on('data', (d: string) => (out += d))
          child.stderr.setEncoding('utf8').on('data', (d: string) => (err += d))
          child.on('error', reject)
          child.on('close', (code) => resolve({ code, out, err }))
        })
      const results = await Promise.all([run(), run()])
      for (const r of results) expect(r).toMatchObject({ code: 0, out: expect.stringContaining('opened') as unknown, err: '' })
      const mirror = await openMirror(file)
      const applied = mirror.sqlite.prepare('SELECT name FROM kysely_migration ORDER BY name').pluck().all()
      await mirror.close()
      expect(applied).toEqual(Object.keys(MIGRATIONS).sort())
    },
  )
})
