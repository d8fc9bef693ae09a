// Reconciliation marks a record deleted and logs the change in one commit: when the change_log
// insert fails, the record stays live, so the next reconcile marks it again and logs it.
import { describe, expect, test } from 'vitest'
import { jobs } from '../../../connectors/index.js'
import { emulatorEnv } from '../../support/emulator-env.js'
import { syncEnv } from '../../support/sync-env.js'

describe('reconciliation writes', () => {
  test('a failed change_log insert during reconcile does not leave deleted_at set without its change_log row', async () => {
    const emu = await emulatorEnv({ seed: 5, counts: { clients: 20, jobs: 30, invoices: 5 } })
    const env = await syncEnv(emu)
    const [swept] = await env.sync({ streams: [jobs] })
    expect(swept!.outcome).toBe('success')
    const [victim] = (await emu.state('jobs')) as { id: string }[]
    await emu.control('POST', '/mutate', { resource: 'jobs', op: 'delete', id: victim!.id })

    env.app.mirror.sqlite.exec(
      `CREATE TRIGGER fail_change_log BEFORE INSERT ON change_log BEGIN SELECT RAISE(ABORT, 'change_log insert refused by the test'); END`,
    )
    const [failed] = await env.reconcile([jobs])
    expect(failed!.outcome).toBe('error')
    expect(env.rows(`SELECT deleted_at FROM jobs WHERE id = ?`, victim!.id)).toEqual([{ deleted_at: null }])

    env.app.mirror.sqlite.exec(`DROP TRIGGER fail_change_log`)
    const [again] = await env.reconcile([jobs])
    expect(again!.outcome).toBe('success')
    expect(again!.rows).toBe(1)
    expect(env.rows(`SELECT deleted_at IS NOT NULL AS deleted FROM jobs WHERE id = ?`, victim!.id)).toEqual([{ deleted: 1 }])
    expect(env.rows(`SELECT op FROM change_log WHERE table_name = 'jobs' AND record_id = ? ORDER BY seq DESC LIMIT 1`, victim!.id)).toEqual(
      [{ op: 'delete' }],
    )
  })
})
