// Child processes of the soak: the emulator, the daemon and one-shot CLI commands (the CLI from
// source through tsx, the way test/support/run-cli.ts runs it), the external reader; and the
// per-process figures read from /proc.
import { spawn, type ChildProcess } from 'node:child_process'
import { appendFileSync, readFileSync } from 'node:fs'
import path from 'node:path'
import { ROOT, withoutFsmSettings } from '../test/support/run-cli.js'

const HERE = path.join(ROOT, 'soak')
const ENTRY = path.join(ROOT, 'src/cli/entry.ts')

function node(args: readonly string[], env: Record<string, string>): ChildProcess {
  return spawn(process.execPath, ['--import', 'tsx', ...args], { cwd: ROOT, env, stdio: ['ignore', 'pipe', 'pipe'] })
}

export interface Child {
  child: ChildProcess
  pid: number
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>
  /** Everything it wrote so far (stdout and stderr), also appended to the log file when given. */
  output(): string
}

function track(child: ChildProcess, logFile?: string): Child {
  let out = ''
  const take = (d: string): void => {
    out += d
    if (logFile !== undefined) appendFileSync(logFile, d)
  }
  child.stdout?.setEncoding('utf8').on('data', take)
  child.stderr?.setEncoding('utf8').on('data', take)
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.on('close', (code, signal) => resolve({ code, signal })),
  )
  if (child.pid === undefined) throw new Error('could not spawn a child process (is node on PATH and tsx installed?)')
  return { child, pid: child.pid, exited, output: () => out }
}

export function startCli(args: readonly string[], env: Record<string, string>, logFile?: string): Child {
  return track(node([ENTRY, ...args], env), logFile)
}

export async function runCli(
  args: readonly string[],
  env: Record<string, string>,
  logFile?: string,
): Promise<{ code: number | null; output: string }> {
  const c = startCli(args, env, logFile)
  const { code } = await c.exited
  return { code, output: c.output() }
}

export interface EmulatorChild extends Child {
  url: string
  apiKey: string
}

export async function startEmulatorChild(options: Record<string, unknown>): Promise<EmulatorChild> {
  const c = track(node([path.join(HERE, 'emulator-child.ts'), JSON.stringify(options)], withoutFsmSettings({})))
  const first = await new Promise<string>((resolve, reject) => {
    const onData = (): void => {
      const line = c.output().split('\n')[0]
      if (c.output().includes('\n') && line !== undefined) {
        c.child.stdout?.off('data', onData)
        resolve(line)
      }
    }
    c.child.stdout?.on('data', onData)
    void c.exited.then(() => reject(new Error(`the emulator child exited before listening:\n${c.output()}`)))
  })
  const { url, apiKey } = JSON.parse(first) as { url: string; apiKey: string }
  return { ...c, url, apiKey }
}

export function startReader(db: string): Child {
  return track(node([path.join(HERE, 'reader-child.ts'), db], withoutFsmSettings({})))
}

/** Peak resident set (VmHWM) of a live process in bytes; undefined once it is gone. */
export function peakRss(pid: number): number | undefined {
  try {
    const m = /^VmHWM:\s+(\d+) kB$/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))
    return m?.[1] === undefined ? undefined : Number(m[1]) * 1024
  } catch {
    return undefined
  }
}

/** Sends `signal`, then SIGKILL if the process has not exited within `graceMs`. */
export async function stop(
  c: Child,
  signal: NodeJS.Signals,
  graceMs = 20_000,
): Promise<{ code: number | null; signal: NodeJS.Signals | null; forced: boolean }> {
  if (c.child.exitCode !== null || c.child.signalCode !== null) return { ...(await c.exited), forced: false }
  c.child.kill(signal)
  let forced = false
  const timer = setTimeout(() => {
    forced = true
    c.child.kill('SIGKILL')
  }, graceMs)
  const r = await c.exited
  clearTimeout(timer)
  return { ...r, forced }
}
