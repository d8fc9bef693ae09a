// What the tests of `fsm-sync run` replicas as child processes share: the live leases by owner, a
// replica's listener and /metrics, and a loopback proxy per replica in front of the emulator that
// names the replica in each request's user agent, so the emulator's request log says who sent what.
import { createServer, request as httpRequest, Agent } from 'node:http'
import type { AddressInfo } from 'node:net'
import { request } from 'undici'
import { keyVariable } from '../../support/accounts-env.js'
import { startRun, type Running } from '../../support/daemon-env.js'
import type { AccountHandle } from '../../../emulator/index.js'
import { parseExposition, type Sample } from '../../support/prometheus-text.js'
import { pgQuery } from '../../support/postgres-server.js'
import { cleanEnv } from '../../support/run-cli.js'

/** The live leases by owner: account ids held unexpired by the server's clock. */
export async function owners(url: string): Promise<Map<string, string[]>> {
  const rows = await pgQuery<{ owner: string; account_id: string }>(
    url,
    `SELECT owner, account_id FROM fsm_coordination.account_leases WHERE owner IS NOT NULL AND expires_at > now() ORDER BY account_id`,
  ).catch((err: unknown) => {
    // Before the first replica created the tables.
    if ((err as { code?: string }).code === '42P01') return []
    throw err
  })
  const by = new Map<string, string[]>()
  for (const r of rows) by.set(r.owner, [...(by.get(r.owner) ?? []), r.account_id])
  return by
}

/** Starts one `fsm-sync run` replica as a child: its name, data folder, upstream and every account's key. */
export function startReplica(o: {
  name: string
  config: string
  baseUrl: string
  dataDir: string
  accounts: readonly AccountHandle[]
  secretsKey?: string
}): Running {
  return startRun(
    cleanEnv({
      FSM_CONFIG: o.config,
      FSM_BASE_URL: o.baseUrl,
      FSM_DATA_DIR: o.dataDir,
      FSM_HTTP_HOST: '127.0.0.1',
      FSM_HTTP_PORT: '0',
      FSM_REPLICA_NAME: o.name,
      ...(o.secretsKey === undefined ? {} : { FSM_SECRETS_KEY: o.secretsKey }),
      FSM_LOG_LEVEL: 'info',
      ...Object.fromEntries(o.accounts.map((a) => [keyVariable(a), a.apiKey])),
    }),
  )
}

/** The owner of each account, from `owners`. */
export function ownerOf(by: ReadonlyMap<string, readonly string[]>): Map<string, string> {
  return new Map([...by].flatMap(([name, ids]) => ids.map((id): [string, string] => [id, name])))
}

/** The replica's listener, as its first log lines say. */
export function baseUrl(run: Running): string {
  return /listening on (http:\/\/[^ ]+) /.exec(run.output())![1]!
}

/** The replica's `fsm_replica_*` samples. */
export async function replicaSamples(run: Running): Promise<Sample[]> {
  const res = await request(`${baseUrl(run)}/metrics`)
  const { samples } = parseExposition(await res.body.text())
  return samples.filter((s) => s.name.startsWith('fsm_replica_'))
}

/** The value of one sample (0 when absent). */
export function sampleValue(samples: readonly Sample[], name: string, labels: Record<string, string> = {}): number {
  const found = samples.find((s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v))
  return found?.value ?? 0
}

export const userAgentOf = (replica: string) => `fsm-sync via ${replica}`

/** Forwards every request to `target` with the user agent `fsm-sync via <replica>`. */
export async function taggingProxy(target: string, replica: string): Promise<{ url: string; close: () => Promise<void> }> {
  const t = new URL(target)
  const agent = new Agent({ keepAlive: true })
  const server = createServer((req, res) => {
    const headers = { ...req.headers, host: t.host, 'user-agent': userAgentOf(replica) }
    const up = httpRequest({ host: t.hostname, port: t.port, method: req.method, path: req.url, headers, agent }, (answer) => {
      res.writeHead(answer.statusCode ?? 502, answer.headers)
      answer.pipe(res)
    })
    up.on('error', () => res.destroy())
    req.pipe(up)
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const { port } = server.address() as AddressInfo
  return {
    url: `http://127.0.0.1:${port}`,
    close: async () => {
      server.closeAllConnections()
      agent.destroy()
      await new Promise((resolve) => server.close(resolve))
    },
  }
}
