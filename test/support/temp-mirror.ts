// A real mirror file in a fresh temporary folder, with the real migrations.
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { openMirror, type Mirror } from '../../src/store/sqlite/mirror-database.js'

export interface TempMirror extends Mirror {
  dir: string
  dispose(): Promise<void>
}

export function tempDir(prefix = 'fsm-test-'): string {
  return mkdtempSync(path.join(tmpdir(), prefix))
}

export async function tempMirror(): Promise<TempMirror> {
  const dir = tempDir()
  const mirror = await openMirror(path.join(dir, 'mirror.db'))
  return {
    ...mirror,
    dir,
    dispose: async () => {
      await mirror.close()
      rmSync(dir, { recursive: true, force: true })
    },
  }
}
