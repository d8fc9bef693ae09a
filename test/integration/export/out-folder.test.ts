// The --out folder of `fsm-sync export`: one export at a time (a second is refused, a lock left by a
// killed one is taken over with its work folder), nothing written through a link planted there,
// file errors that name the file, and a value that does not fit its column named with an example.
import { spawnSync } from 'node:child_process'
import { chmodSync, existsSync, lstatSync, mkdirSync, readdirSync, readFileSync, statSync, symlinkSync, writeFileSync } from 'node:fs'
import { hostname } from 'node:os'
import path from 'node:path'
import { afterAll, beforeAll, describe, expect, test } from 'vitest'
import { mirrorCatalog } from '../../../src/catalog/catalog.js'
import { exportMirror, type ExportManifest } from '../../../src/export/export-mirror.js'
import { ExportBusyError, fileError, LOCK_FILE } from '../../../src/export/out-dir.js'
import { openMirror, type Mirror } from '../../../src/store/sqlite/mirror-database.js'
import { cliInProcess } from '../../support/cli-in-process.js'
import { emulatorEnv, type EmulatorEnv } from '../../support/emulator-env.js'
import { syncEnv, type SyncEnv } from '../../support/sync-env.js'
import { tempDir } from '../../support/temp-mirror.js'

let emu: EmulatorEnv
let env: SyncEnv
let reader: Mirror

beforeAll(async () => {
  emu = await emulatorEnv({ counts: { clients: 6, jobs: 4, visitsPerJob: 1, invoices: 2, customRecords: 1 } })
  env = await syncEnv(emu)
  await env.sync()
  reader = await openMirror(env.db, { readonly: true })
})
afterAll(async () => {
  await reader.close()
  await env.close()
  await emu.close()
})

const exportTo = (outDir: string, options: Partial<Parameters<typeof exportMirror>[2]> = {}) =>
  exportMirror(reader.sqlite, (s) => mirrorCatalog(s), { format: 'jsonl', outDir, tables: ['clients', 'jobs'], now: 0, ...options })

const lines = (file: string) =>
  readFileSync(file, 'utf8')
    .split('\n')
    .filter((l) => l !== '').length

/** The pid of a process that has ended. */
function endedPid(): number {
  const child = spawnSync(process.execPath, ['-e', ''])
  return child.pid
}

describe('export: the --out folder', () => {
  test('a second export into a folder one is writing is refused; the manifest then describes its own files', async () => {
    const dir = tempDir()
    let refused: { code: number; stderr: string } | undefined
    let second: unknown
    const manifest = await exportTo(dir, {
      onTable: async (t) => {
        if (t.name !== 'clients') return
        second = await exportTo(dir, { tables: ['clients'] }).catch((err: unknown) => err)
        refused = await cliInProcess(['export', '--format', 'jsonl', '--out', dir], env.db)
      },
    })
    expect(second).toBeInstanceOf(ExportBusyError)
    expect(refused?.code).toBe(1)
    expect(refused?.stderr).toMatch(
      new RegExp(`another export \\(pid ${process.pid} on .+, since 1970-01-01T00:00:00.000Z\\) is writing into ${dir}: wait for it`),
    )
    const written = JSON.parse(readFileSync(path.join(dir, 'manifest.json'), 'utf8')) as ExportManifest
    expect(written).toEqual(manifest)
    for (const t of written.tables) expect(lines(path.join(dir, t.file)), t.file).toBe(t.rows)
    expect(readdirSync(dir).sort()).toEqual(['clients.jsonl', 'jobs.jsonl', 'manifest.json'])
  })

  test('a lock and a work folder left by a killed export are taken over and removed; a lock of another host is not', async () => {
    const dir = tempDir()
    writeFileSync(path.join(dir, LOCK_FILE), JSON.stringify({ pid: endedPid(), host: hostname(), startedAt: 'then', token: 'x' }))
    mkdirSync(path.join(dir, '.export-killed'))
    writeFileSync(path.join(dir, '.export-killed', 'clients.jsonl'), 'half a file')
    await exportTo(dir)
    expect(readdirSync(dir).sort()).toEqual(['clients.jsonl', 'jobs.jsonl', 'manifest.json'])

    writeFileSync(path.join(dir, LOCK_FILE), JSON.stringify({ pid: 1, host: 'elsewhere', startedAt: 'then', token: 'y' }))
    await expect(exportTo(dir)).rejects.toThrow(
      `another export (pid 1 on elsewhere, since then) is writing into ${dir}: wait for it to end, or export into another --out; if no export runs there, remove ${path.join(dir, LOCK_FILE)}`,
    )
  })

  test('a link planted in --out, before or during the export, is replaced, never written through', async () => {
    const dir = tempDir()
    const outside = tempDir()
    const targets = ['manifest-target', 'data-target'].map((n) => path.join(outside, n))
    for (const t of targets) {
      writeFileSync(t, 'keep me')
      chmodSync(t, 0o600)
    }
    // One before the export starts, one while it runs (after an earlier manifest was removed).
    symlinkSync(targets[1]!, path.join(dir, 'clients.jsonl'))
    await exportTo(dir, {
      onTable: (t) => {
        if (t.name === 'clients') symlinkSync(targets[0]!, path.join(dir, 'manifest.json'))
      },
    })
    for (const t of targets) {
      expect(readFileSync(t, 'utf8')).toBe('keep me')
      expect(statSync(t).mode & 0o777).toBe(0o600)
    }
    for (const f of ['manifest.json', 'clients.jsonl']) {
      expect(lstatSync(path.join(dir, f)).isFile(), f).toBe(true)
      expect(statSync(path.join(dir, f)).mode & 0o777).toBe(0o640)
    }
  })

  test('file errors name the file or folder and say what to do', async () => {
    const file = path.join(tempDir(), 'not-a-folder')
    writeFileSync(file, '')
    const exists = await cliInProcess(['export', '--format', 'csv', '--out', file], env.db)
    expect([exists.code, exists.stderr]).toEqual([
      1,
      `fsm-sync: cannot create the folder ${file}: EEXIST: ${file} exists and is not a folder; export into another --out, or move it away\n`,
    ])
    const under = await cliInProcess(['export', '--format', 'csv', '--out', path.join(file, 'out')], env.db)
    expect(under.stderr).toMatch(/cannot create the folder .*not-a-folder\/out: ENOTDIR: a part of .* is a file, not a folder/)
    // A full disk (not made here): the file being written and the fix.
    const full = Object.assign(new Error('ENOSPC: no space left on device, write'), { code: 'ENOSPC', syscall: 'write' })
    expect(fileError(full, 'write', '/exports/full/clients.parquet').message).toBe(
      'cannot write /exports/full/clients.parquet: ENOSPC: no space left on the device holding /exports/full; free some or export into another --out',
    )
    expect(existsSync(path.join(file, 'out'))).toBe(false)
  })

  test('a value that does not fit its column is named with table, column and an example', async () => {
    const db = path.join(tempDir(), 'misfit.db')
    env.app.mirror.sqlite.exec(`VACUUM INTO '${db}'`)
    const copy = await openMirror(db)
    try {
      copy.sqlite.exec(`UPDATE clients SET created_at = 'next Tuesday' WHERE id = (SELECT min(id) FROM clients)`)
    } finally {
      await copy.close()
    }
    const dir = tempDir()
    const r = await cliInProcess(['export', '--format', 'jsonl', '--out', dir, '--tables', 'clients,api_keys'], db)
    expect(r.code).toBe(0)
    expect(r.stderr).toBe(
      `fsm-sync: clients.created_at: 1 value did not fit the column's type and was written as NULL (e.g. "next Tuesday"); the row's raw column keeps them as received\n`,
    )
    const manifest = JSON.parse(readFileSync(path.join(dir, 'manifest.json'), 'utf8')) as ExportManifest
    expect(manifest.tables.map((t) => [t.name, t.nulledValues, t.nulledColumns])).toEqual([
      ['clients', 1, [{ column: 'created_at', values: 1, example: '"next Tuesday"' }]],
      ['api_keys', 0, []],
    ])
  })
})
