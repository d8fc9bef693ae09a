// `sharding`: off by default; FSM_SHARDING=on with the replica's name and lease time from the
// environment; on without the destination's Postgres URL, refused with the reason (exit 2).
import { describe, expect, test } from 'vitest'
import { ConfigError, loadConfig } from '../../../src/config/index.js'

const PG = 'postgres://fsm:pw@127.0.0.1:5432/warehouse'

describe('sharding settings', () => {
  test('off by default, with a 15 s lease and no name (the host name is taken then)', () => {
    expect(loadConfig({ env: {} }).sharding).toEqual({ enabled: false, leaseSeconds: 15 })
  })

  test('FSM_SHARDING=on, FSM_REPLICA_NAME and FSM_SHARDING_LEASE_SECONDS', () => {
    const env = { FSM_SHARDING: 'on', FSM_REPLICA_NAME: 'fsm-sync-1', FSM_SHARDING_LEASE_SECONDS: '6', FSM_POSTGRES_URL: PG }
    expect(loadConfig({ env }).sharding).toEqual({ enabled: true, replicaName: 'fsm-sync-1', leaseSeconds: 6 })
    expect(loadConfig({ env: { FSM_SHARDING: 'off' } }).sharding.enabled).toBe(false)
    expect(() => loadConfig({ env: { FSM_SHARDING: 'yes', FSM_POSTGRES_URL: PG } })).toThrow(/FSM_SHARDING: must be on or off/)
    expect(() => loadConfig({ env: { FSM_SHARDING: 'on', FSM_POSTGRES_URL: PG, FSM_REPLICA_NAME: 'a b' } })).toThrow(ConfigError)
  })

  test('on without the destination: refused, naming the URL it needs', () => {
    expect(() => loadConfig({ env: { FSM_SHARDING: 'on' } })).toThrow(
      /FSM_SHARDING: is on but destination.postgres.url \(FSM_POSTGRES_URL\) is not set/,
    )
  })
})
