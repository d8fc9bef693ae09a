// `fsm-sync replicas [--json]`: the replicas sharing the configuration's accounts, read from the
// coordination tables in the destination's Postgres server (docs/sharding.md): each replica (live,
// stopping or silent, its heartbeat's age by the server's clock, the accounts it holds) and the
// accounts waiting for an owner. Exit 1 when an account waits or Postgres cannot be read.
import type { Command } from './command.js'
import { DEFAULT_COORDINATION_SCHEMA, coordinationTables } from '../coordination/coordination-schema.js'
import { DEFAULT_LEASE_TTL_MS } from '../coordination/coordinator.js'
import { listLeases, type LeaseRow } from '../coordination/leases.js'
import { listReplicas, type ReplicaRow } from '../coordination/membership.js'
import { CommandError, jsonOption, printResult } from './output.js'

export interface ReplicaReport {
  name: string
  /** `silent`: no heartbeat within the lease time; its leases lapse, its accounts move. */
  state: 'live' | 'stopping' | 'silent'
  heartbeatAgeMs: number
  accounts: string[]
}

export interface ReplicasReport {
  schema: string
  replicas: ReplicaReport[]
  /** Accounts of the configuration without an unexpired lease. */
  waiting: string[]
}

export const replicasCommand: Command = {
  builder: (y) => jsonOption(y),
  run: async (args, ctx) => {
    const url = ctx.config().destination.postgres.url
    if (url === undefined) {
      throw new CommandError(
        'no coordinator is configured: set FSM_POSTGRES_URL (or destination.postgres.url in the config file) to the Postgres server the replicas share',
        2,
      )
    }
    const accounts = ctx.accounts().accounts.map((a) => a.id)
    const { replicas, leases } = await readCoordination(url)
    const report = replicasReport(replicas, leases, accounts, ctx.config().sharding.leaseSeconds * 1000)
    printResult(args, ctx.io, report, render)
    return report.waiting.length > 0 ? 1 : 0
  },
}

/** Builds the report from the two tables' rows, the configured accounts and the lease time (sharding.leaseSeconds). Pure. */
export function replicasReport(
  replicas: readonly ReplicaRow[],
  leases: readonly LeaseRow[],
  accounts: readonly string[],
  ttlMs = DEFAULT_LEASE_TTL_MS,
): ReplicasReport {
  const held = leases.filter((l) => l.owner !== null && l.remainingMs > 0)
  return {
    schema: DEFAULT_COORDINATION_SCHEMA,
    replicas: replicas.map((r) => ({
      name: r.name,
      state: r.stopping ? 'stopping' : r.silentMs < ttlMs ? 'live' : 'silent',
      heartbeatAgeMs: Math.max(0, r.silentMs),
      accounts: held.filter((l) => l.owner === r.name).map((l) => l.accountId),
    })),
    waiting: accounts.filter((a) => !held.some((l) => l.accountId === a)).sort(),
  }
}

async function readCoordination(url: string): Promise<{ replicas: ReplicaRow[]; leases: LeaseRow[] }> {
  // Loaded here, not at the top: the driver is paid for only when the command runs.
  const { default: pg } = await import('pg')
  const { describeTarget } = await import('../destination/postgres-errors.js')
  const client = new pg.Client({ connectionString: url, application_name: 'fsm-sync replicas', connectionTimeoutMillis: 10_000 })
  const t = coordinationTables()
  try {
    await client.connect()
    return { replicas: await listReplicas(client, t), leases: await listLeases(client, t) }
  } catch (err) {
    // No replica ever ran sharded against this server: no tables yet, so nobody owns anything.
    if ((err as { code?: unknown }).code === '42P01') return { replicas: [], leases: [] }
    const why = err instanceof Error ? err.message : String(err)
    throw new CommandError(`cannot read the coordination tables at ${describeTarget(url)}: ${why}`, 1)
  } finally {
    await client.end().catch(() => undefined)
  }
}

function render(r: ReplicasReport): string {
  const lines =
    r.replicas.length === 0
      ? ['no replica has registered (fsm-sync run in sharded mode registers each replica)']
      : r.replicas.map((x) => {
          const age = `heartbeat ${(x.heartbeatAgeMs / 1000).toFixed(1)} s ago`
          const owned = x.accounts.length === 0 ? 'no account' : `${x.accounts.length} accounts: ${x.accounts.join(', ')}`
          return `${x.name}  ${x.state}  ${age}  ${owned}`
        })
  lines.push(r.waiting.length === 0 ? 'every account has an owner' : `waiting for an owner (${r.waiting.length}): ${r.waiting.join(', ')}`)
  return lines.join('\n') + '\n'
}
