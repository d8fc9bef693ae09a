// Every leaf key of the config schema with what its `.meta()` says (schema.ts, KeyDoc), read once
// from the schema's JSON Schema. loadConfig takes the environment variables from here, and
// config/README.md's table is written from it (config-doc.ts), so a key is declared in one place.
import { z } from 'zod'
import { ConfigSchema, type KeyDoc } from './schema.js'

/** The parts of a JSON Schema node a key's documentation reads. */
export interface JsonSchemaNode {
  type?: string
  properties?: Record<string, JsonSchemaNode>
  minimum?: number
  maximum?: number
  minLength?: number
  pattern?: string
  format?: string
  enum?: unknown[]
  const?: unknown
  anyOf?: JsonSchemaNode[]
  items?: JsonSchemaNode
}

export interface SchemaKey {
  /** `['http', 'bodyTimeoutMs']` */
  path: readonly string[]
  /** Dotted, as in the config file: `http.bodyTimeoutMs`. */
  key: string
  doc: KeyDoc
  /** Its JSON Schema (input side), for the values it takes. */
  node: JsonSchemaNode
}

let cached: readonly SchemaKey[] | undefined

/** Every leaf key, in schema order. A key without a description is a programming error, said at once. */
export function schemaKeys(): readonly SchemaKey[] {
  if (cached !== undefined) return cached
  const out: SchemaKey[] = []
  const walk = (node: JsonSchemaNode, path: string[]): void => {
    for (const [name, child] of Object.entries(node.properties ?? {})) {
      const at = [...path, name]
      if (child.type === 'object' && child.properties !== undefined) {
        walk(child, at)
        continue
      }
      const doc = child as Partial<KeyDoc>
      const key = at.join('.')
      if (typeof doc.description !== 'string')
        throw new Error(`config key ${key} has no description: give it .meta(doc('...')) in src/config/schema.ts`)
      out.push({ path: at, key, doc: { ...doc, description: doc.description }, node: child })
    }
  }
  walk(z.toJSONSchema(ConfigSchema, { io: 'input', unrepresentable: 'any' }) as JsonSchemaNode, [])
  cached = out
  return out
}
