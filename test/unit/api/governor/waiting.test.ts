// Who waits for the budget: the governor and a budget share list the requests waiting for a start
// slot, with what each is for (the demo's live line names them). Fake time.
import { expect, test } from 'vitest'
import { FakeClock } from '../../../support/fake-clock.js'
import { BudgetShare, RequestGovernor } from '../../../../src/api/governor/index.js'

test('the governor lists its waiting requests, longest first, until each starts or is cancelled', async () => {
  const clock = new FakeClock()
  const t0 = clock.now()
  // 6 a minute, a burst of 2: the third request waits about 10 s.
  const governor = new RequestGovernor({ clock, limitPerMinute: 6, marginMs: 0 })
  const first = await governor.acquire('sweep', undefined, 'sweep clients')
  const second = await governor.acquire('sweep', undefined, 'sweep jobs')
  expect(governor.waiting()).toEqual([])
  const trigger = governor.acquire('trigger', undefined, 'trigger calendar-a')
  await clock.advance(1_000)
  const stop = new AbortController()
  const followUp = governor.acquire('webhook', stop.signal)
  followUp.catch(() => undefined)
  expect(governor.waiting()).toEqual([
    { who: 'trigger calendar-a', priority: 'trigger', since: t0 },
    { who: undefined, priority: 'webhook', since: t0 + 1_000 },
  ])
  stop.abort()
  await expect(followUp).rejects.toThrow()
  expect(governor.waiting().map((w) => w.who)).toEqual(['trigger calendar-a'])
  for (const s of [first, second]) s.release()
  await clock.advance(11_000)
  ;(await trigger).release()
  expect(governor.waiting()).toEqual([])
})

test("a share lists the requests waiting for its turn; once in the governor they are the governor's", async () => {
  const clock = new FakeClock()
  const governor = new RequestGovernor({ clock, limitPerMinute: 60 })
  // A tenth of 60: 6 a minute, a burst of 2.
  const share = new BudgetShare(governor, { fraction: 0.1, clock })
  const t0 = clock.now()
  const slots = ['sweep clients', 'sweep jobs'].map((who) => share.acquire('sweep', undefined, who))
  const third = share.acquire('sweep', undefined, 'sweep visits')
  await clock.advance(1)
  for (const slot of await Promise.all(slots)) slot.release()
  expect(share.waiting()).toEqual([{ who: 'sweep visits', priority: 'sweep', since: t0 }])
  expect(governor.waiting()).toEqual([])
  // Its turn comes one spacing (a sixth of the guarded window) after the burst.
  await clock.advance(11_000)
  ;(await third).release()
  expect(share.waiting()).toEqual([])
})
