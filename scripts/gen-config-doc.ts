// Writes the table of config/README.md from the config schema: `npm run docs:config`. A test fails
// when the committed file differs from what this writes.
import { readFileSync, writeFileSync } from 'node:fs'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { CONFIG_DOC, withFreshTable } from '../src/config/config-doc.js'

const file = path.join(path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..'), CONFIG_DOC)
writeFileSync(file, withFreshTable(readFileSync(file, 'utf8')))
process.stdout.write(`wrote ${CONFIG_DOC}\n`)
