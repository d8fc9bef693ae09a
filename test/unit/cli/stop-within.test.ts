// The daemon's stop budget (src/cli/run.ts) counted on the FakeClock: a stop that overruns it, or a
// second stop signal, calls `overrun` once; a stop within it leaves no timer and no listener behind.
import { EventEmitter } from 'node:events'
import { expect, test } from 'vitest'
import { STOP_SIGNALS, stopWithin } from '../../../src/cli/stop-signals.js'
import { FakeClock } from '../../support/fake-clock.js'

function stopGate() {
  let end!: () => void
  const ended = new Promise<void>((r) => (end = r))
  return { end, stop: () => ended }
}

test('a stop that overruns its budget is forced once, when the clock passes the budget', async () => {
  const clock = new FakeClock()
  const signals = new EventEmitter()
  const gate = stopGate()
  let overruns = 0
  const done = stopWithin(gate.stop, { clock, budgetMs: 9_000, overrun: () => overruns++, signals })
  await clock.advance(8_999)
  expect(overruns).toBe(0)
  await clock.advance(1)
  expect(overruns).toBe(1)
  signals.emit('SIGTERM')
  expect(overruns).toBe(1)
  gate.end()
  await done
  for (const s of STOP_SIGNALS) expect(signals.listenerCount(s)).toBe(0)
})

test('a second stop signal forces the stop at once', async () => {
  const clock = new FakeClock()
  const signals = new EventEmitter()
  const gate = stopGate()
  let overruns = 0
  const done = stopWithin(gate.stop, { clock, budgetMs: 9_000, overrun: () => overruns++, signals })
  signals.emit('SIGINT')
  expect(overruns).toBe(1)
  gate.end()
  await done
  expect(clock.pending).toBe(0)
})

test('a stop within the budget is never forced and leaves nothing armed', async () => {
  const clock = new FakeClock()
  const signals = new EventEmitter()
  let overruns = 0
  const done = stopWithin(() => clock.sleep(5_000), { clock, budgetMs: 9_000, overrun: () => overruns++, signals })
  await clock.advance(5_000)
  await done
  expect(clock.pending).toBe(0)
  for (const s of STOP_SIGNALS) expect(signals.listenerCount(s)).toBe(0)
  await clock.advance(60_000)
  expect(overruns).toBe(0)
})
