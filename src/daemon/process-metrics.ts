// The process's half of /metrics: the series that belong to no account (the release running, the
// shared listener's refusals), and the one exposition of the process's registry with every
// account's (each account's series labelled `account`, daemon-metrics.ts), each family's HELP and
// TYPE written once.
import { Gauge, Registry } from 'prom-client'
import { packageInfo } from '../config/package-info.js'
import { eventFamilies, SummedFamilies, type PerAccountMetrics, type SharedFamilies } from './account-metric-families.js'
import { mirroredCounter } from './mirrored-counter.js'

export class ProcessMetrics {
  readonly registry = new Registry()
  /** Counted by the listener (http-server.ts), not by an account's intake. */
  readonly listener = {
    /** Connections closed on arrival, past webhooks.maxConnections. */
    connectionsDropped: 0,
    /** Requests to `<webhooks.path>/<id>` for an id no running account has (404). */
    unknownAccount: 0,
  }
  /** The intake journal's group commits (webhooks/group-commit.ts), with an accounts list: one for the process. */
  readonly journal = { groupCommits: 0, groupedDeliveries: 0, commitMicros: 0, walSyncMicros: 0 }

  /** With `metrics.perAccount` "summary": the families every account adds to, without `account`. */
  readonly shared: SharedFamilies | undefined

  /** `accounts`: each account of the list and whether it runs (`fsm_account_up`), read when scraped. */
  constructor(perAccount: PerAccountMetrics = 'full', accounts?: () => Iterable<readonly [string, boolean]>) {
    const registers = [this.registry]
    this.shared = perAccount === 'summary' ? { events: eventFamilies(this.registry), summed: new SummedFamilies(this.registry) } : undefined
    if (accounts !== undefined)
      new Gauge({
        name: 'fsm_account_up',
        help: '1 while the account runs, 0 while it opens, stops or has failed (fsm-sync accounts and /readyz say why)',
        labelNames: ['account'],
        registers,
        collect() {
          this.reset()
          for (const [account, up] of accounts()) this.set({ account }, up ? 1 : 0)
        },
      })
    // Which release (and Node) runs: `count by (version) (fsm_build_info)` shows a half-done upgrade.
    new Gauge({
      name: 'fsm_build_info',
      help: 'Always 1; the labels name the fsm-sync version and the Node.js version running it',
      labelNames: ['version', 'node'],
      registers,
    }).set({ version: packageInfo().version, node: process.versions.node }, 1)
    const listener = this.listener
    const counter = (name: string, help: string, key: keyof ProcessMetrics['listener']) =>
      mirroredCounter(registers, name, help, () => listener[key])
    counter(
      'fsm_webhook_intake_connections_dropped_total',
      "Connections the daemon's listener closed on arrival, past webhooks.maxConnections",
      'connectionsDropped',
    )
    counter('fsm_webhook_intake_unknown_account_total', 'Requests to a webhook path of no running account, answered 404', 'unknownAccount')
  }

  /** With an accounts list: the intake journal's series (none without one). */
  registerJournal(): void {
    const journal = this.journal
    const journalCounter = (name: string, help: string, key: keyof ProcessMetrics['journal']) =>
      mirroredCounter([this.registry], name, help, () => journal[key])
    journalCounter(
      'fsm_webhook_journal_group_commits_total',
      "Durable group commits of the process's intake journal (commit, then its log synced)",
      'groupCommits',
    )
    journalCounter(
      'fsm_webhook_journal_grouped_deliveries_total',
      'Deliveries the journal commits carried (divided by the commits: the group size)',
      'groupedDeliveries',
    )
    journalCounter('fsm_webhook_journal_commit_micros_total', 'Time spent committing journal groups, in microseconds', 'commitMicros')
    journalCounter(
      'fsm_webhook_journal_wal_sync_micros_total',
      "Time from each journal group's commit until its log sync returned, in microseconds",
      'walSyncMicros',
    )
  }
}

/**
 * One Prometheus text exposition of several registries: a family (a metric name) present in more
 * than one gets its HELP and TYPE once, then every registry's samples, in the order given. The
 * event loop turns every few thousand series or a hundred accounts, so acks do not wait behind all of it;
 * not after each registry, since on a busy loop each turn waits behind everything queued, and a
 * thousand turns made one scrape of a thousand accounts last minutes.
 * A registry that fails to collect (an account whose mirror closed as it left this replica) is left
 * out of this scrape and handed to `onSkipped`, rather than failing the whole answer.
 */
export async function exposition(registries: readonly Registry[], onSkipped?: (err: unknown) => void): Promise<string> {
  // prom-client writes a family as its HELP line, its TYPE line, then one line per sample (label
  // values and help texts have their newlines escaped).
  const families = new Map<string, { head: string; samples: string[] }>()
  let sinceTurn = 0
  let registriesSinceTurn = 0
  for (const registry of registries) {
    let texts: string[]
    try {
      texts = await Promise.all(registry.getMetricsAsArray().map((m) => registry.getSingleMetricAsString(m.name)))
    } catch (err) {
      onSkipped?.(err)
      continue
    }
    for (const text of texts) {
      const name = text.slice(HELP.length, text.indexOf(' ', HELP.length))
      const afterType = text.indexOf('\n', text.indexOf('\n') + 1)
      const head = afterType < 0 ? text : text.slice(0, afterType)
      const family = families.get(name) ?? { head, samples: [] }
      families.set(name, family)
      if (afterType >= 0) family.samples.push(text.slice(afterType + 1))
      sinceTurn += text.length
    }
    if (sinceTurn < YIELD_BYTES && ++registriesSinceTurn < YIELD_REGISTRIES) continue
    sinceTurn = 0
    registriesSinceTurn = 0
    await new Promise<void>((resolve) => setImmediate(resolve))
  }
  const out: string[] = []
  for (const { head, samples } of families.values()) out.push(samples.length === 0 ? head : `${head}\n${samples.join('\n')}`)
  return `${out.join('\n\n')}\n`
}

const HELP = '# HELP '
/**
 * Between two turns of the event loop: about 2,000 series of text, or 128 accounts (each costs
 * about 0.3 ms however few its series): some 20 to 40 ms of rendering.
 */
const YIELD_BYTES = 256 * 1024
const YIELD_REGISTRIES = 128
