// The CLI in the test's process (no child to start) against a mirror, its output captured.
import { Writable } from 'node:stream'
import { main } from '../../src/cli/main.js'

export async function cliInProcess(args: string[], db: string): Promise<{ code: number; stdout: string; stderr: string }> {
  let stdout = ''
  let stderr = ''
  const sink = (f: (s: string) => void) => new Writable({ write: (c: Buffer, _e, cb) => (f(c.toString('utf8')), cb()) })
  const code = await main(args, {
    stdout: sink((s) => (stdout += s)),
    stderr: sink((s) => (stderr += s)),
    env: { FSM_DB: db, FSM_LOG_LEVEL: 'silent' },
  })
  return { code, stdout, stderr }
}
