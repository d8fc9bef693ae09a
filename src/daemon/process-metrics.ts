// The process's half of /metrics: the series that belong to no account (the release running, the
// shared listener's refusals), and the one exposition of the process's registry with every
// account's (each account's series labelled `account`, daemon-metrics.ts), each family's HELP and
// TYPE written once.
import { Counter, Gauge, Registry } from 'prom-client'
import { packageInfo } from '../config/package-info.js'

export class ProcessMetrics {
  readonly registry = new Registry()
  /** Counted by the listener (http-server.ts), not by an account's intake. */
  readonly listener = {
    /** Connections closed on arrival, past webhooks.maxConnections. */
    connectionsDropped: 0,
    /** Requests to `<webhooks.path>/<id>` for an id no running account has (404). */
    unknownAccount: 0,
  }

  constructor() {
    const registers = [this.registry]
    // Which release (and Node) runs: `count by (version) (fsm_build_info)` shows a half-done upgrade.
    new Gauge({
      name: 'fsm_build_info',
      help: 'Always 1; the labels name the fsm-sync version and the Node.js version running it',
      labelNames: ['version', 'node'],
      registers,
    }).set({ version: packageInfo().version, node: process.versions.node }, 1)
    const listener = this.listener
    const counter = (name: string, help: string, key: keyof ProcessMetrics['listener']) =>
      new Counter({
        name,
        help,
        registers,
        collect() {
          this.reset()
          this.inc(listener[key])
        },
      })
    counter(
      'fsm_webhook_intake_connections_dropped_total',
      "Connections the daemon's listener closed on arrival, past webhooks.maxConnections",
      'connectionsDropped',
    )
    counter('fsm_webhook_intake_unknown_account_total', 'Requests to a webhook path of no running account, answered 404', 'unknownAccount')
  }
}

/**
 * One Prometheus text exposition of several registries: a family (a metric name) present in more
 * than one gets its HELP and TYPE once, then every registry's samples, in the order given.
 */
export async function exposition(registries: readonly Registry[]): Promise<string> {
  const texts = await Promise.all(registries.map((r) => Promise.all(r.getMetricsAsArray().map((m) => r.getSingleMetricAsString(m.name)))))
  // prom-client writes a family as its HELP line, its TYPE line, then one line per sample (label
  // values and help texts have their newlines escaped).
  const families = new Map<string, string[]>()
  for (const text of texts.flat()) {
    const lines = text.split('\n')
    const name = lines[0]!.split(' ')[2]!
    const family = families.get(name)
    if (family === undefined) families.set(name, lines)
    else family.push(...lines.slice(2))
  }
  return `${[...families.values()].map((lines) => lines.join('\n')).join('\n\n')}\n`
}
