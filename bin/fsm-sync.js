#!/usr/bin/env node
// The package's bin: runs the compiled CLI. `npm ci` builds dist/ through the `prepare` script.
import { existsSync } from 'node:fs'
import { fileURLToPath } from 'node:url'

const entry = new URL('../dist/src/cli/entry.js', import.meta.url)
if (!existsSync(fileURLToPath(entry))) {
  process.stderr.write('fsm-sync is not built yet: run `npm ci` (or `npm run build`) in the package folder first.\n')
  process.exit(2)
}
await import(entry.href)
