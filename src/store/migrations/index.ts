// The static list of migrations, in order. Names sort in application order; never rename one that
// has shipped, only append.
import type { MigrationStatements } from './types.js'
import { core } from './0001-core.js'

export const MIGRATIONS: Readonly<Record<string, MigrationStatements>> = {
  '0001-core': core,
}
