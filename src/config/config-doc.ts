// config/README.md's table of keys, written from the schema (`npm run docs:config`): each key's
// variable, description and unit from its `.meta()` (schema.ts, KeyDoc), its default as the schema
// parses it, and its allowed values from the schema's JSON Schema. A key added to the schema with
// its description is documented by regenerating; a test fails while the committed file is stale.
import { ConfigSchema } from './schema.js'
import { schemaKeys, type JsonSchemaNode } from './schema-keys.js'

export const CONFIG_DOC = 'config/README.md'
const BEGIN = '<!-- The table below is written by `npm run docs:config` from src/config/schema.ts: edit the descriptions there. -->'
const END = '<!-- end of the generated table -->'

export interface KeyRow {
  /** Dotted path, as in the config file (`http.bodyTimeoutMs`). */
  key: string
  env: string | undefined
  /** The default as shown: KeyDoc.shownDefault, or the parsed default as JSON, or "none". */
  shownDefault: string
  /** The parsed default (undefined: none). */
  parsedDefault: unknown
  unit: string | undefined
  allowed: string
  description: string
}

/** Environment variable of each dotted key. */
export function envVariables(): ReadonlyMap<string, string> {
  return new Map(schemaKeys().flatMap((k) => (k.doc.env === undefined ? [] : [[k.key, k.doc.env] as const])))
}

/** Every leaf key of the schema, in schema order. */
export function configKeys(): KeyRow[] {
  const defaults: unknown = ConfigSchema.parse({})
  return schemaKeys().map(({ path, key, doc, node }) => {
    const value = path.reduce<unknown>((v, k) => (isRecord(v) ? v[k] : undefined), defaults)
    return {
      key,
      env: doc.env,
      shownDefault: doc.shownDefault ?? (value === undefined ? 'none' : '`' + JSON.stringify(value) + '`'),
      parsedDefault: value,
      unit: doc.unit,
      allowed: doc.allowed ?? allowedValues(node),
      description: doc.description,
    }
  })
}

function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v)
}

/** What a key takes, from its JSON Schema: a range, a list of values, a form. */
function allowedValues(node: JsonSchemaNode): string {
  if (node.anyOf !== undefined) return node.anyOf.map(allowedValues).join(', or ')
  if (node.const !== undefined) return '`' + JSON.stringify(node.const) + '`'
  if (node.enum !== undefined) return node.enum.map((v) => '`' + String(v) + '`').join(', ')
  if (node.type === 'integer' || node.type === 'number') {
    const kind = node.type === 'integer' ? 'whole number' : 'number'
    if (node.minimum !== undefined && node.maximum !== undefined) return `${kind}, ${node.minimum} to ${node.maximum}`
    return kind
  }
  if (node.type === 'array') return 'list of ' + (node.items === undefined ? 'values' : allowedValues(node.items))
  if (node.format === 'uri') return 'URL'
  if (node.pattern !== undefined) return 'text matching `' + node.pattern + '`'
  if (node.minLength !== undefined && node.minLength > 0) return 'text, not empty'
  return 'text'
}

const cell = (s: string) => s.replaceAll('|', '\\|').replaceAll('\n', ' ')

/** The generated table, between its markers. */
export function configTable(rows: readonly KeyRow[] = configKeys()): string {
  const lines = [
    BEGIN,
    '',
    '| key | environment | default | unit | allowed | meaning |',
    '|---|---|---|---|---|---|',
    ...rows.map(
      (r) =>
        `| \`${r.key}\` | ${r.env === undefined ? '' : '`' + r.env + '`'} | ${cell(r.shownDefault)} | ${r.unit ?? ''} | ${cell(r.allowed)} | ${cell(r.description)} |`,
    ),
    '',
    END,
  ]
  return lines.join('\n')
}

/** config/README.md with its table replaced by a fresh one; the text around it is kept as written. */
export function withFreshTable(current: string): string {
  const start = current.indexOf(BEGIN)
  const end = current.indexOf(END)
  if (start < 0 || end < start) throw new Error(`${CONFIG_DOC} has lost the markers around its table; put back:\n${BEGIN}\n${END}`)
  return current.slice(0, start) + configTable() + current.slice(end + END.length)
}
