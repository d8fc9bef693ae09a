// The package's own package.json (its version: `--version`, `status --json`, `fsm_build_info`),
// found by walking up from this file: the same code runs from src/ (tsx, tests) and from dist/src/
// (the built bin), at different depths. It sits in config/ so that every layer may read it.
import { existsSync, readFileSync } from 'node:fs'
import path from 'node:path'
import { fileURLToPath } from 'node:url'

export interface PackageInfo {
  name: string
  version: string
  root: string
}

export function packageInfo(): PackageInfo {
  let dir = path.dirname(fileURLToPath(import.meta.url))
  for (;;) {
    const file = path.join(dir, 'package.json')
    if (existsSync(file)) {
      const pkg = JSON.parse(readFileSync(file, 'utf8')) as { name?: string; version?: string }
      if (pkg.name === 'fsm-sync') return { name: pkg.name, version: pkg.version ?? '0.0.0', root: dir }
    }
    const parent = path.dirname(dir)
    if (parent === dir) return { name: 'fsm-sync', version: '0.0.0', root: process.cwd() }
    dir = parent
  }
}
