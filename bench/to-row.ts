// The row mapping alone, the hot path of every sweep page: toRow rows per second of CPU for the
// record streams, over 100,000 job-shaped payloads, best of six rounds after two of warm-up. CPU
// time (process.cpuUsage) rather than wall time, so a loaded machine skews it less. Given the root
// of another checkout (`npx tsx bench/to-row.ts /path/to/other/tree`), it measures that tree's
// connectors in the same process, rounds interleaved, for a before/after comparison.
import path from 'node:path'
import { fileURLToPath, pathToFileURL } from 'node:url'
import { jobPayload } from './job-payload.js'

interface Mapper {
  toRow(p: Record<string, unknown>): { raw: string }
}

const N = 100_000
const here = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..')

/** A job payload with the fields the client and invoice mappings read as well. */
function payload(i: number): Record<string, unknown> {
  const job = jobPayload(i)
  return {
    ...job,
    firstName: 'Ada',
    email: 'ada@example.com',
    phoneNumber: job['jobPhone'],
    items: [
      { itemId: 'x', name: 'n', quantity: 1, rate: 2, taxes: [] },
      { itemId: 'y', name: 'm', quantity: 3, rate: 4 },
    ],
  }
}

async function mappers(root: string): Promise<Record<string, Mapper>> {
  const load = async (name: string) =>
    ((await import(pathToFileURL(path.join(root, 'connectors', `${name}.ts`)).href)) as Record<string, Mapper>)[name]!
  return { clients: await load('clients'), jobs: await load('jobs'), invoices: await load('invoices') }
}

const trees: Record<string, Record<string, Mapper>> = { this: await mappers(here) }
if (process.argv[2] !== undefined) trees.other = await mappers(path.resolve(process.argv[2]))
const payloads = Array.from({ length: N }, (_, i) => payload(i))
const best: Record<string, number> = {}
let sink = 0
for (let round = 0; round < 8; round++) {
  for (const [tree, streams] of Object.entries(trees)) {
    for (const [name, stream] of Object.entries(streams)) {
      const start = process.cpuUsage()
      for (const p of payloads) sink += stream.toRow(p).raw.length
      const used = process.cpuUsage(start)
      const key = `${name} (${tree})`
      if (round >= 2) best[key] = Math.min(best[key] ?? Infinity, used.user + used.system)
    }
  }
}
for (const key of Object.keys(best).sort()) process.stdout.write(`${key}: ${Math.round(N / (best[key]! / 1e6))} rows/s of CPU\n`)
if (sink === 0) process.stdout.write('(nothing mapped)\n')
