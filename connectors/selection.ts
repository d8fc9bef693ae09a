// The one reading of a list of stream names (the config's `streams`, `--stream`, a delivery-gap
// plan): which declared streams it selects, by kind, in registry order. The sweeps, reconciliation
// and the webhook processor's choice of what to apply all start from here.
import {
  objectStream,
  parseObjectStream,
  SELECTABLE_KINDS,
  type MetadataStream,
  type RecordStream,
  type ReferenceStream,
} from '../src/model/streams.js'
import { STREAMS } from './index.js'

/** `<stream>:<slug>` (the stream and the slug captured): one custom object, when the stream is the custom-objects one. */
export const OBJECT_STREAM = /^([a-z_]+):([A-Za-z0-9_-]+)$/

export interface Selection {
  records: RecordStream[]
  reference: ReferenceStream[]
  metadata: MetadataStream[]
  /** Custom objects: every one (`objects`), the named slugs (`objects:<slug>`), or none. */
  objects: 'all' | string[] | undefined
  /** Named streams with no connector. */
  notBuilt: string[]
}

/** Names the config's `streams` accepts: every selectable stream of the registry, in its order. */
export const SELECTABLE_STREAMS: readonly string[] = STREAMS.filter((s) => SELECTABLE_KINDS.includes(s.kind)).map((s) => s.name)

/** Whether any selected stream has this name (`objects` when some custom object is). */
export function selects(selection: Selection, name: string): boolean {
  if (selection.objects !== undefined && STREAMS.some((s) => s.kind === 'objects' && s.name === name)) return true
  return [...selection.records, ...selection.reference, ...selection.metadata].some((s) => s.name === name)
}

/** The stream names the config accepts, for loadConfig (src/config/load-config.ts) and `--stream`. */
export const STREAM_CHOICE = {
  all: SELECTABLE_STREAMS,
  problem: (name: string): string | undefined =>
    selectStreams([name]).notBuilt.length === 0
      ? undefined
      : `${name}: no such stream; valid: ${SELECTABLE_STREAMS.join(', ')}, or ${objectStream('<slug>')} for one custom object`,
}

/** The streams `names` selects; undefined (no `streams` setting) selects every selectable stream. */
export function selectStreams(names: readonly string[] | undefined = SELECTABLE_STREAMS): Selection {
  const picked = new Set<string>()
  const slugs: string[] = []
  let allObjects = false
  const notBuilt: string[] = []
  for (const name of names) {
    const slug = parseObjectStream(name)
    const stream = slug === undefined ? STREAMS.find((s) => s.name === name) : undefined
    if (slug !== undefined) {
      if (!slugs.includes(slug)) slugs.push(slug)
    } else if (stream === undefined || !SELECTABLE_STREAMS.includes(stream.name)) {
      if (!notBuilt.includes(name)) notBuilt.push(name)
    } else {
      picked.add(name)
      if (stream.kind === 'objects') allObjects = true
    }
  }
  // Registry order: parents before children, whatever order the names came in.
  const chosen = STREAMS.filter((s) => picked.has(s.name))
  return {
    records: chosen.filter((s): s is RecordStream => s.kind === 'records'),
    reference: chosen.filter((s): s is ReferenceStream => s.kind === 'reference'),
    metadata: chosen.filter((s): s is MetadataStream => s.kind === 'metadata'),
    objects: allObjects ? 'all' : slugs.length > 0 ? slugs : undefined,
    notBuilt,
  }
}

/**
 * The streams a delivery-gap plan names, as far as `configured` selects them: a plan names the
 * custom-object stream for any custom object (deliveries do not carry the slug), which sweeps the
 * objects `configured` selects.
 */
export function selectWithin(configured: Selection, names: readonly string[]): Selection {
  const picked = selectStreams(names.filter((n) => selects(configured, n)))
  return { ...picked, objects: picked.objects === undefined ? undefined : configured.objects }
}
