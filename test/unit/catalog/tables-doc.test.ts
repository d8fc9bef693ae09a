// docs/tables.md is generated from the table declarations; this fails when the committed file is
// stale, and says how to regenerate it.
import { readFileSync } from 'node:fs'
import path from 'node:path'
import { expect, test } from 'vitest'
import { catalogTables } from '../../../src/catalog/catalog.js'
import { TABLES_DOC, tablesMarkdown } from '../../../src/catalog/render.js'
import { ROOT } from '../../support/run-cli.js'

test('docs/tables.md is up to date with the declarations', () => {
  const committed = readFileSync(path.join(ROOT, TABLES_DOC), 'utf8')
  const fresh = tablesMarkdown(catalogTables())
  // A plain comparison first, so the failure leads with the fix rather than a long diff.
  if (committed !== fresh)
    expect.fail(`${TABLES_DOC} is out of date with the table declarations: run \`npm run docs:tables\` and commit it`)
  // Every declared table and column is in it.
  for (const t of catalogTables()) {
    expect(committed).toContain(`### \`${t.name}\``)
    for (const c of t.columns) expect(committed).toContain(`| \`${c.name}\` |`)
  }
})
