// zod schemas of the upstream envelope (spec, Conventions 5-6 and Errors). Tolerant: every object is
// loose, so fields the spec does not list pass through untouched.
import { z } from 'zod'
import { parseInstant } from '../model/timestamps.js'

const count = z.coerce.number().int().nonnegative()

/** `meta` of the page-numbered lists (clients, jobs, visits, invoices, webhooks, deliveries). */
export const ListMetaSchema = z.looseObject({
  page: count.optional(),
  limit: count.optional(),
  total: count.optional(),
})
export type ListMeta = z.infer<typeof ListMetaSchema>

/** `meta` of custom-object lists: `next` is `{cursor, limit}` while pages remain, else null. */
export const CursorMetaSchema = z.looseObject({
  next: z
    .looseObject({ cursor: z.string().min(1), limit: count.optional() })
    .nullable()
    .optional(),
})
export type CursorMeta = z.infer<typeof CursorMetaSchema>

export const EnvelopeSchema = z.looseObject({
  success: z.boolean(),
  data: z.unknown().optional(),
  meta: z.record(z.string(), z.unknown()).nullable().optional(),
})
export type Envelope = z.infer<typeof EnvelopeSchema>

/** A failure body: `message` and `error` (a string, or a nested object on older endpoints), `code`. */
export const FailureBodySchema = z.looseObject({
  success: z.boolean().optional(),
  code: z.string().optional(),
  message: z.string().optional(),
  error: z.unknown().optional(),
})
export type FailureBody = z.infer<typeof FailureBodySchema>

/** The least a row needs for the updatedAt keyset: an id and a parseable updatedAt. */
export const KeysetRowSchema = z.looseObject({
  id: z.string().min(1),
  updatedAt: z.string().refine((s) => !Number.isNaN(parseInstant(s)), { message: 'not a date' }),
})
export type KeysetRow = z.infer<typeof KeysetRowSchema>

export const RowsSchema = z.array(z.record(z.string(), z.unknown()))
export type Row = Record<string, unknown>
