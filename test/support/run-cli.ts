// Runs the CLI from source in a child process (through tsx), the way a user runs the bin.
import { spawn, type ChildProcess } from 'node:child_process'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { createRequire } from 'node:module'

export const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..')
const ENTRY = path.join(ROOT, 'src/cli/entry.ts')
/** tsx resolved from the repo, so that a child run from another folder (`cwd`) finds it too. */
const TSX = createRequire(path.join(ROOT, 'package.json')).resolve('tsx')

export interface CliResult {
  code: number | null
  signal: NodeJS.Signals | null
  stdout: string
  stderr: string
}

/** The parent's environment without any FSM_* setting of the developer's, plus `extra`. */
export function withoutFsmSettings(extra: Record<string, string>): Record<string, string> {
  const env: Record<string, string> = {}
  for (const [k, v] of Object.entries(process.env)) if (v !== undefined && !k.startsWith('FSM_')) env[k] = v
  return { ...env, ...extra }
}

/** Environment for a child: nothing from the developer's FSM_* settings leaks into a test. */
export function cleanEnv(extra: Record<string, string> = {}): Record<string, string> {
  return withoutFsmSettings({ FSM_LOG_LEVEL: 'warn', ...extra })
}

export function spawnCli(args: readonly string[], env: Record<string, string> = cleanEnv(), cwd = ROOT): ChildProcess {
  return spawn(process.execPath, ['--import', TSX, ENTRY, ...args], { cwd, env, stdio: ['ignore', 'pipe', 'pipe'] })
}

export function runCli(args: readonly string[], env?: Record<string, string>, cwd?: string): Promise<CliResult> {
  const child = spawnCli(args, env, cwd)
  let stdout = ''
  let stderr = ''
  child.stdout?.setEncoding('utf8').on('data', (d: string) => (stdout += d))
  child.stderr?.setEncoding('utf8').on('data', (d: string) => (stderr += d))
  return new Promise((resolve, reject) => {
    child.on('error', reject)
    child.on('close', (code, signal) => resolve({ code, signal, stdout, stderr }))
  })
}
