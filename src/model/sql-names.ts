// How a name or a text goes into SQL text: the one quoter for the mirror (SQLite), the Postgres
// destination and the export's DuckDB, which all quote the same way (SQL standard). Names from the
// account (custom object slugs, field names) are only ever written through these.

/** A SQL identifier, double-quoted with embedded double quotes doubled. */
export function quoteIdentifier(name: string): string {
  return `"${name.replaceAll('"', '""')}"`
}

/** A SQL string literal, single-quoted with embedded single quotes doubled. */
export function quoteText(value: string): string {
  return `'${value.replaceAll("'", "''")}'`
}
