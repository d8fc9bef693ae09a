// A sweep against a route that ignores `page` inside a tie bigger than a page (the emulator's
// ignorePage fault): the sweep fails cleanly instead of looping, recorded as an error naming the
// route, with its cursor where the last stored page left it, and nothing is lost once the route
// pages again.
import { expect, test } from 'vitest'
import { clients } from '../../../connectors/index.js'
import { emulatorEnv } from '../../support/emulator-env.js'
import { compareWithEmulator, syncEnv } from '../../support/sync-env.js'

const TIE_AT = '2030-01-01T00:00:00.000Z'

test('a route that ignores page inside a full tie fails the sweep cleanly: an error naming it, cursor kept, nothing lost', async () => {
  const emu = await emulatorEnv({ seed: 5, counts: { clients: 300, jobs: 10, invoices: 10 } })
  const env = await syncEnv(emu)
  await env.sync({ streams: [clients] })
  // 160 clients share one updatedAt: a tie larger than a page.
  await emu.control('POST', '/clock', { freezeAt: TIE_AT })
  await emu.control('POST', '/mutate', { resource: 'clients', op: 'update', count: 160 })
  await emu.control('POST', '/clock', { freezeAt: null })
  await emu.control('POST', '/faults', { route: 'GET /api/v1/clients', ignorePage: true })

  const cursorOf = () => JSON.parse(String(env.rows(`SELECT cursor FROM sync_state WHERE stream = 'clients'`)[0]!.cursor))
  const [first] = await env.sync({ streams: [clients] })
  expect(first!.outcome).toBe('error')
  expect(first!.error).toContain('Paging stalled on GET /api/v1/clients')
  expect(first!.error).toContain('ignores page')
  expect(first!.requests).toBeLessThanOrEqual(4)
  const state = env.rows(`SELECT last_error FROM sync_state WHERE stream = 'clients'`)[0]!
  expect(state.last_error).toBe(first!.error)
  const kept = cursorOf()
  expect(kept.since).toBe(TIE_AT)
  // Every id the cursor holds as delivered is in the mirror at the tie's time.
  const stored = new Set(env.rows(`SELECT id FROM clients WHERE updated_at = ?`, TIE_AT).map((r) => r.id))
  expect(kept.seenIdsAtCursor.filter((id: string) => !stored.has(id))).toEqual([])

  // Again: the same few requests, the same error, the cursor where it was.
  const [second] = await env.sync({ streams: [clients] })
  expect(second!.outcome).toBe('error')
  expect(second!.requests).toBeLessThanOrEqual(4)
  expect(cursorOf().since).toBe(kept.since)
  expect([...cursorOf().seenIdsAtCursor].sort()).toEqual([...kept.seenIdsAtCursor].sort())

  // The route pages again: the next sweep reads the rest of the tie and the mirror is exact.
  await emu.control('POST', '/faults', { clear: true })
  const [third] = await env.sync({ streams: [clients] })
  expect(third!.outcome).toBe('success')
  expect(await compareWithEmulator(emu, env, [clients])).toEqual([])
})
