// The backfill estimate's arithmetic (src/model/backfill-estimate.ts) and the live line that shows it.
import { Writable } from 'node:stream'
import { describe, expect, test } from 'vitest'
import { createLogger } from '../../../src/log/logger.js'
import { count, estimateBackfill, formatDuration, formatEstimate, requestsFor, secondsAt } from '../../../src/model/backfill-estimate.js'
import { createProgress } from '../../../src/sync/progress.js'

describe('backfill estimate', () => {
  test('counts are grouped as en-US groups them, without the locale machinery for whole numbers', () => {
    for (const n of [0, 7, 999, 1000, 1234, 99_999, 100_000, 1_234_567, -1234, -999, Number.MAX_SAFE_INTEGER, 12.5, 1234.5678])
      expect(count(n)).toBe(n.toLocaleString('en-US'))
  })

  test.each([
    [0, 100, 0],
    [1, 100, 1],
    [100, 100, 1],
    [101, 100, 2],
    [6000, 100, 60],
    [61, 20, 4],
  ])('%i rows at %i a page take %i requests', (rows, page, requests) => expect(requestsFor(rows, page)).toBe(requests))

  test.each([
    [60, 60, 60],
    [48, 60, 48],
    [1, 60, 1],
    [3, 6, 30],
    [200, 60, 200],
    [1, 7, 9],
  ])('%i requests at %i a minute take %i s', (requests, perMinute, seconds) => expect(secondsAt(requests, perMinute)).toBe(seconds))

  test('no budget, no time', () => {
    expect(secondsAt(10, 0)).toBeNull()
    expect(secondsAt(10, null)).toBeNull()
  })

  test('requests add up per stream (each stream ends on a page of its own); streams not started are named, not guessed', () => {
    const e = estimateBackfill(
      [
        { stream: 'clients', left: { rows: 150, requests: requestsFor(150, 100) } },
        { stream: 'jobs', left: { rows: 50, requests: requestsFor(50, 100) } },
        { stream: 'visits', left: null },
        { stream: 'invoices', left: { rows: 0, requests: 0 } },
      ],
      60,
    )
    // 200 rows would fit two pages; as two streams they take three requests.
    expect(e).toEqual({ rowsRemaining: 200, requestsRemaining: 3, secondsRemaining: 3, budgetPerMinute: 60, sizeUnknown: ['visits'] })
    expect(formatEstimate(e)).toBe('~200 rows, ~3 requests, ~3s at 60 requests/min (+ visits: size not known yet)')
    expect(formatEstimate(estimateBackfill([{ stream: 'clients', left: { rows: 12_000, requests: 120 } }], 30))).toBe(
      '~12,000 rows, ~120 requests, ~4m00s at 30 requests/min',
    )
  })

  test.each([
    [5, '5s'],
    [65, '1m05s'],
    [3725, '1h02m'],
  ])('%i s reads %s', (s, text) => expect(formatDuration(s)).toBe(text))
})

describe('the live line', () => {
  function sink() {
    let text = ''
    const tty = new Writable({
      write(chunk: Buffer, _enc, done) {
        text += chunk.toString()
        done()
      },
    })
    const logger = createLogger({ level: 'silent' })
    const progress = createProgress({ logger, now: () => 0, budgetPerMinute: () => 60, pageSize: 100, tty })
    return { progress, lines: () => text.split('\r\x1b[2K').filter((l) => l !== '') }
  }

  test('rows read and rows changed apart, and the backfill left over every planned stream', () => {
    const { progress, lines } = sink()
    progress.plan?.([
      { stream: 'clients', rowsRemaining: 150 },
      { stream: 'jobs', rowsRemaining: undefined },
    ])
    progress.update({ stream: 'clients', rowsRead: 100, rowsChanged: 98, rowsRemaining: 150, requests: 1, backfill: true, done: false })
    progress.update({ stream: 'clients', rowsRead: 250, rowsChanged: 248, rowsRemaining: 0, requests: 3, backfill: true, done: true })
    progress.update({ stream: 'jobs', rowsRead: 100, rowsChanged: 100, rowsRemaining: 1_900, requests: 1, backfill: true, done: false })
    expect(lines()).toEqual([
      'clients: 100 rows read, 98 changed, 1 request | backfill left: ~150 rows, ~2 requests, ~2s at 60 requests/min (+ jobs: size not known yet)',
      'clients: 250 rows read, 248 changed, 3 requests (done) | backfill left: jobs: size not known yet\n',
      'jobs: 100 rows read, 100 changed, 1 request | backfill left: ~1,900 rows, ~19 requests, ~19s at 60 requests/min',
    ])
  })

  test('sizes planned up front: the first line already counts every stream', () => {
    const { progress, lines } = sink()
    progress.plan?.([
      { stream: 'clients', rowsRemaining: 150 },
      { stream: 'jobs', rowsRemaining: 1_900 },
    ])
    progress.update({ stream: 'clients', rowsRead: 100, rowsChanged: 100, rowsRemaining: 150, requests: 1, backfill: true, done: false })
    expect(lines()).toEqual([
      'clients: 100 rows read, 100 changed, 1 request | backfill left: ~2,050 rows, ~21 requests, ~21s at 60 requests/min',
    ])
  })

  test('an incremental sweep shows no backfill', () => {
    const { progress, lines } = sink()
    progress.update({ stream: 'jobs', rowsRead: 3, rowsChanged: 1, rowsRemaining: 0, requests: 1, backfill: false, done: true })
    expect(lines()).toEqual(['jobs: 3 rows read, 1 changed, 1 request (done)\n'])
  })
})

describe('without a terminal: log lines', () => {
  function logged() {
    const out: { msg: string; backfill?: unknown }[] = []
    const destination = new Writable({
      write(chunk: Buffer, _enc, done) {
        for (const l of chunk.toString().split('\n')) if (l !== '') out.push(JSON.parse(l) as { msg: string })
        done()
      },
    })
    let t = 1_000_000
    const progress = createProgress({
      logger: createLogger({ level: 'info', destination }),
      now: () => t,
      budgetPerMinute: () => 60,
      pageSize: 100,
    })
    return { progress, out, advance: (ms: number) => (t += ms) }
  }

  test('the estimate once when the sizes are known; progress only for a sweep that runs past 10 s; no line at its end', () => {
    const { progress, out, advance } = logged()
    progress.plan?.([
      { stream: 'clients', rowsRemaining: 900 },
      { stream: 'jobs', rowsRemaining: 100 },
    ])
    const page = (rowsRead: number, rowsRemaining: number, done = false) =>
      progress.update({ stream: 'clients', rowsRead, rowsChanged: rowsRead, rowsRemaining, requests: rowsRead / 100, backfill: true, done })
    page(100, 900)
    advance(5_000)
    page(200, 800)
    advance(6_000)
    page(300, 700)
    page(1000, 0, true)
    expect(out.map((l) => l.msg)).toEqual(['backfill: ~1,000 rows, ~10 requests, ~10s at 60 requests/min', 'sweep progress'])
  })
})
