// A small seeded PRNG (mulberry32) so that the same seed gives the same account: ids, names and
// timestamps (deterministic data from a seed). Not for secrets: keys use node:crypto.

export class Prng {
  private state: number

  constructor(seed: number) {
    this.state = (Math.trunc(seed) ^ 0x9e3779b9) >>> 0
  }

  /** A float in [0, 1). */
  next(): number {
    this.state = (this.state + 0x6d2b79f5) >>> 0
    let t = this.state
    t = Math.imul(t ^ (t >>> 15), t | 1)
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }

  /** An integer in [min, max], both inclusive. */
  int(min: number, max: number): number {
    return min + Math.floor(this.next() * (max - min + 1))
  }

  chance(p: number): boolean {
    return this.next() < p
  }

  pick<T>(items: readonly T[]): T {
    const item = items[Math.floor(this.next() * items.length)]
    if (item === undefined) throw new RangeError('pick from an empty list')
    return item
  }

  /** `n` distinct items (fewer when the list is shorter). */
  sample<T>(items: readonly T[], n: number): T[] {
    const pool = [...items]
    const out: T[] = []
    while (out.length < n && pool.length > 0) {
      const [item] = pool.splice(Math.floor(this.next() * pool.length), 1)
      if (item !== undefined) out.push(item)
    }
    return out
  }

  hex(length: number): string {
    let out = ''
    while (out.length < length)
      out += Math.floor(this.next() * 0x10000)
        .toString(16)
        .padStart(4, '0')
    return out.slice(0, length)
  }

  /** A version-4 shaped UUID (spec: `recordId` is a uuid). */
  uuid(): string {
    const h = this.hex(32)
    const variant = ((parseInt(h[16] ?? '0', 16) & 0x3) | 0x8).toString(16)
    return `${h.slice(0, 8)}-${h.slice(8, 12)}-4${h.slice(13, 16)}-${variant}${h.slice(17, 20)}-${h.slice(20, 32)}`
  }
}

/**
 * ObjectId-shaped ids (spec: Conventions 2, 24 hex): 4 bytes of seconds, 5 random bytes, a 3-byte
 * counter, like MongoDB. Ids made later sort later, which the custom-object keyset relies on.
 */
export class ObjectIdFactory {
  private counter: number

  constructor(private readonly prng: Prng) {
    this.counter = prng.int(0, 0xffff)
  }

  make(atMs: number): string {
    this.counter = (this.counter + 1) % 0x1000000
    const seconds = Math.max(0, Math.floor(atMs / 1000)) % 0x100000000
    return seconds.toString(16).padStart(8, '0') + this.prng.hex(10) + this.counter.toString(16).padStart(6, '0')
  }
}
