// Building blocks of the config schema (schema.ts, postgres-settings.ts): whole numbers read in
// decimal only, and what `.meta()` holds of a key.
import { z } from 'zod'

// Decimal digits only: z.coerce.number() would also take "0x10" (16), "1e3", " 12 " and "" (0).
// A JSON number from the config file passes as it is.
const INT_MESSAGE = 'must be a whole number in decimal digits, e.g. 60'

export const int = (min: number, max: number, rangeMessage?: string) =>
  z.preprocess(
    (v) => (typeof v === 'string' && /^-?\d+$/.test(v) ? Number(v) : v),
    z
      .number({ error: (issue) => (issue.code === 'invalid_type' ? INT_MESSAGE : undefined) })
      .int({ error: INT_MESSAGE })
      .min(min, rangeMessage === undefined ? undefined : { error: rangeMessage })
      .max(max, rangeMessage === undefined ? undefined : { error: rangeMessage }),
  )

/**
 * What is declared of a key besides its type: the `env` variable that sets it (loadConfig reads
 * these), and what config/README.md says of it (`npm run docs:config` writes its table from these,
 * with the default as parsed and the allowed values): `description`, the `unit` of a number,
 * `shownDefault` where the parsed default would read wrong (a mode, a default that follows another
 * key), and `allowed` where the JSON Schema's form would not say it plainly.
 */
export type KeyDoc = {
  description: string
  env?: `FSM_${string}`
  unit?: string
  shownDefault?: string
  allowed?: string
}
export const doc = (description: string, extra: Omit<KeyDoc, 'description'> = {}): KeyDoc => ({ description, ...extra })
