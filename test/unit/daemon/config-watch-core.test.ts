// The config watcher's decisions without files or timers: when a stat alone is trusted, when a
// check loads, that checks never overlap, that a load is followed by a check, which failures are logged.
import { describe, expect, test } from 'vitest'
import { fingerprint, ReloadGate, StatTrust, statKey, TRUST_AFTER_MS, type FileStat } from '../../../src/daemon/config-watch-core.js'

const st = (ino: number, size = 10, mtime = 1000, ctime = mtime): FileStat => ({
  dev: 1n,
  ino: BigInt(ino),
  size: BigInt(size),
  mtimeNs: BigInt(mtime),
  ctimeNs: BigInt(ctime),
})

describe('statKey and fingerprint', () => {
  test.each([
    ['a write in place (mtime, ctime)', st(5, 10, 2000)],
    ['a write of another size', st(5, 11)],
    ['a rename over the file or a ..data swap (same size and times, new inode)', st(6)],
    ['a chmod (ctime alone)', st(5, 10, 1000, 3000)],
  ] as const)('%s changes the stat key', (_name, after) => {
    expect(statKey(after)).not.toBe(statKey(st(5)))
  })

  test('the same tokens give the same text; another list of paths another', () => {
    expect(fingerprint(['c.json', 'key'], ['s1', 's2'])).toBe(fingerprint(['c.json', 'key'], ['s1', 's2']))
    expect(fingerprint(['c.json'], ['s1'])).not.toBe(fingerprint(['c.json', 'key'], ['s1', 's2']))
    expect(fingerprint(['c.json'], ['s1'])).not.toBe(fingerprint(['c.json'], ['ENOENT']))
  })
})

describe('StatTrust', () => {
  test('a new stat is hashed at every check until one TRUST_AFTER_MS later finds the same content', () => {
    const t = new StatTrust()
    expect(t.known('c', 's1')).toBeUndefined()
    const token = t.record('c', 's1', 'h1', 0)
    // A check right after (the one that follows a load) reads again: a second write in the same
    // timestamp tick, of the same size, shows only in the content.
    expect(t.known('c', 's1')).toBeUndefined()
    expect(t.record('c', 's1', 'h1', TRUST_AFTER_MS - 1)).toBe(token)
    expect(t.known('c', 's1')).toBeUndefined()
    expect(t.record('c', 's1', 'h1', TRUST_AFTER_MS)).toBe(token)
    // From now on one stat settles it, with the same token.
    expect(t.known('c', 's1')).toBe(token)
    expect(t.known('c', 's2')).toBeUndefined()
  })

  test('the same stat with other content is a change, and trust starts over', () => {
    const t = new StatTrust()
    const first = t.record('c', 's1', 'h1', 0)
    const second = t.record('c', 's1', 'h2', 10)
    expect(second).not.toBe(first)
    t.record('c', 's1', 'h2', 10 + TRUST_AFTER_MS - 1)
    expect(t.known('c', 's1')).toBeUndefined()
  })

  test('keep forgets the files no longer watched', () => {
    const t = new StatTrust()
    t.record('key', 's', 'h', 0)
    t.record('key', 's', 'h', TRUST_AFTER_MS)
    t.keep(['c'])
    expect(t.known('key', 's')).toBeUndefined()
  })
})

describe('ReloadGate', () => {
  test('a check loads only when the fingerprint changed; a force loads anyway', () => {
    const g = new ReloadGate('A')
    expect(g.begin('check')).toBe(true)
    expect(g.shouldLoad('A')).toBe(false)
    expect(g.end({ kind: 'unchanged' })).toEqual({ log: false, next: undefined })
    expect(g.busy).toBe(false)
    expect(g.begin('force')).toBe(true)
    expect(g.shouldLoad('A')).toBe(true)
  })

  test('checks never overlap: one asked for during a check is queued, a force outranks a check', () => {
    const g = new ReloadGate('A')
    expect(g.begin('check')).toBe(true)
    expect(g.begin('force')).toBe(false)
    expect(g.begin('check')).toBe(false)
    expect(g.shouldLoad('B')).toBe(true)
    // The queued force runs next, and the gate stays busy with it.
    expect(g.end({ kind: 'loaded' })).toEqual({ log: false, next: 'force' })
    expect(g.busy).toBe(true)
    expect(g.shouldLoad('B')).toBe(true)
  })

  test('every load is followed by one check, which sees a change made while the loader read', () => {
    const g = new ReloadGate('A')
    g.begin('check')
    expect(g.shouldLoad('B')).toBe(true)
    expect(g.end({ kind: 'loaded' })).toEqual({ log: false, next: 'check' })
    expect(g.shouldLoad('C')).toBe(true)
    expect(g.end({ kind: 'loaded' }).next).toBe('check')
    expect(g.shouldLoad('C')).toBe(false)
    expect(g.end({ kind: 'unchanged' }).next).toBeUndefined()
  })

  test('a bad file is logged once: unchanged it does not load again, changed with the same message it is not logged again', () => {
    const g = new ReloadGate('A')
    g.begin('check')
    g.shouldLoad('bad1')
    expect(g.end({ kind: 'failed', message: 'x: invalid' })).toEqual({ log: true, next: 'check' })
    expect(g.shouldLoad('bad1')).toBe(false)
    g.end({ kind: 'unchanged' })
    g.begin('check')
    expect(g.shouldLoad('bad2')).toBe(true)
    expect(g.end({ kind: 'failed', message: 'x: invalid' }).log).toBe(false)
    g.shouldLoad('bad2')
    g.end({ kind: 'unchanged' })
    // Another problem is news; so is a forced reload (the operator asked).
    g.begin('check')
    g.shouldLoad('bad3')
    expect(g.end({ kind: 'failed', message: 'y: missing' }).log).toBe(true)
    g.shouldLoad('bad3')
    g.end({ kind: 'unchanged' })
    g.begin('force')
    g.shouldLoad('bad3')
    expect(g.end({ kind: 'failed', message: 'y: missing' }).log).toBe(true)
  })

  test('after a good load the same failure is news again', () => {
    const g = new ReloadGate('A')
    g.begin('check')
    g.shouldLoad('bad')
    expect(g.end({ kind: 'failed', message: 'm' }).log).toBe(true)
    g.shouldLoad('good')
    expect(g.end({ kind: 'loaded' }).next).toBe('check')
    g.shouldLoad('bad again')
    expect(g.end({ kind: 'failed', message: 'm' }).log).toBe(true)
  })
})
