// A tie bigger than a page on an upstream that orders the rows sharing one updatedAt differently on
// each request (the emulator's shuffleTies fault; the spec promises no order among them): stepping
// by `page` cannot rely on the tie's order, and the sweep still delivers every row of it.
import { expect, test } from 'vitest'
import { clients } from '../../../connectors/index.js'
import { emulatorEnv } from '../../support/emulator-env.js'
import { compareWithEmulator, syncEnv } from '../../support/sync-env.js'

const TIE_AT = '2030-01-01T00:00:00.000Z'

test('a 250-row tie shuffled on every request is read whole: the mirror is exact', async () => {
  const emu = await emulatorEnv({ seed: 11, counts: { clients: 260, jobs: 5, invoices: 5 } })
  const env = await syncEnv(emu)
  await env.sync({ streams: [clients] })
  await emu.control('POST', '/clock', { freezeAt: TIE_AT })
  await emu.control('POST', '/mutate', { resource: 'clients', op: 'update', count: 250 })
  await emu.control('POST', '/clock', { freezeAt: null })
  await emu.control('POST', '/faults', { route: 'GET /api/v1/clients', shuffleTies: true })

  // The fault works: the same page of the tie twice, two different sets of rows.
  const page = async () => {
    const res = await emu.api('GET', `/api/v1/clients?sort=updatedAt:asc&since=${TIE_AT}&limit=100&page=1`)
    return (res.body.data as { id: string }[]).map((r) => r.id).sort()
  }
  expect(await page()).not.toEqual(await page())

  const [run] = await env.sync({ streams: [clients] })
  expect(run!.outcome).toBe('success')
  expect(await compareWithEmulator(emu, env, [clients])).toEqual([])
  const tie = env.rows(`SELECT id FROM clients WHERE updated_at = ?`, TIE_AT)
  expect(tie).toHaveLength(250)
})
