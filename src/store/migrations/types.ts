/** A migration as a list of single SQL statements (better-sqlite3 prepares one statement at a time). */
export type MigrationStatements = readonly string[]
