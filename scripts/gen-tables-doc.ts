// Writes docs/tables.md from the table declarations: `npm run docs:tables`. A test fails when the
// committed file differs from what this writes.
import { writeFileSync } from 'node:fs'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { catalogTables } from '../src/catalog/catalog.js'
import { TABLES_DOC, tablesMarkdown } from '../src/catalog/render.js'

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..')
writeFileSync(path.join(root, TABLES_DOC), tablesMarkdown(catalogTables()))
process.stdout.write(`wrote ${TABLES_DOC}\n`)
