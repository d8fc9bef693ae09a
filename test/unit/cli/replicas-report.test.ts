// `fsm-sync replicas` judges a replica silent by the configured lease time, not the default one.
import { describe, expect, test } from 'vitest'
import { replicasReport } from '../../../src/cli/replicas.js'

const replica = (name: string, silentMs: number) => ({
  name,
  incarnation: '00000000-0000-0000-0000-000000000000',
  stopping: false,
  silentMs,
})

describe('replicasReport', () => {
  test('a replica silent past sharding.leaseSeconds is silent, even within the default 15 s', () => {
    const report = replicasReport([replica('r1', 1_000), replica('r2', 8_000)], [], [], 6_000)
    expect(report.replicas.map((r) => [r.name, r.state])).toEqual([
      ['r1', 'live'],
      ['r2', 'silent'],
    ])
  })

  test('a longer lease keeps a replica live past 15 s', () => {
    expect(replicasReport([replica('r1', 20_000)], [], [], 60_000).replicas[0]!.state).toBe('live')
  })
})
