// A real SIGHUP sent to a process that runs the config watcher (test/support/config-watch-child.ts):
// it loads at once instead of ending the process, and stop() takes the handler away.
import { spawn } from 'node:child_process'
import { rmSync, writeFileSync } from 'node:fs'
import path from 'node:path'
import { expect, test } from 'vitest'
import { ROOT, cleanEnv } from '../../support/run-cli.js'
import { tempDir } from '../../support/temp-mirror.js'

const CHILD = path.join(ROOT, 'test/support/config-watch-child.ts')

test('SIGHUP makes the watcher load at once; after stop() no handler is left and the process ends on its own', async () => {
  const dir = tempDir('fsm-watch-signal-')
  const file = path.join(dir, 'config.json')
  writeFileSync(file, JSON.stringify({ accounts: ['a'] }))
  const child = spawn(process.execPath, ['--import', 'tsx', CHILD, file], { cwd: ROOT, env: cleanEnv(), stdio: ['pipe', 'pipe', 'pipe'] })
  let out = ''
  let err = ''
  const lines = () => out.split('\n').filter((l) => l !== '')
  /** Resolves once the child's output holds `n` lines equal to `line`. */
  const seen = (line: string, n = 1) =>
    new Promise<void>((resolve, reject) => {
      const look = () => {
        if (lines().filter((l) => l === line).length < n) return
        child.stdout.off('data', look)
        resolve()
      }
      child.stdout.on('data', look)
      child.once('exit', () => reject(new Error(`the child ended before "${line}": ${out}${err}`)))
      look()
    })
  child.stdout.setEncoding('utf8').on('data', (d: string) => (out += d))
  child.stderr.setEncoding('utf8').on('data', (d: string) => (err += d))
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.on('exit', (code, signal) => resolve({ code, signal })),
  )
  try {
    await seen('ready')
    writeFileSync(file, JSON.stringify({ accounts: ['a', 'b'] }))
    child.kill('SIGHUP')
    await seen('applied {"accounts":["a","b"]}')
    // Nothing changed: it loads anyway, and applies nothing.
    child.kill('SIGHUP')
    await seen('loaded', 2)
    child.stdin.end('stop\n')
    expect(await exited, out + err).toEqual({ code: 0, signal: null })
    expect(lines()).toEqual(['ready', 'loaded', 'applied {"accounts":["a","b"]}', 'loaded', 'stopped, SIGHUP listeners: 0'])
  } finally {
    child.kill('SIGKILL')
    rmSync(dir, { recursive: true, force: true })
  }
})
