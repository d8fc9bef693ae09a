// The soak's report: the bench Figure list (bench/results/soak.json, so the results table includes
// it) and a readable table for the terminal.
import { atMost, type Figure } from '../bench/lib.js'
import type { SoakReport } from './soak.js'

const MiB = (bytes: number) => Math.round((bytes / 2 ** 20) * 10) / 10

export function soakFigures(r: SoakReport): Figure[] {
  const readerErrors = Object.values(r.reader.errors).reduce((a, b) => a + b, 0)
  const inboxErrors = Object.values(r.inbox.errors).reduce((a, b) => a + b, 0)
  const compared = Object.values(r.compared).reduce((a, b) => a + b, 0)
  return [
    { metric: 'missing records after the final sweep and reconcile', value: r.missing, unit: 'records', ...atMost(r.missing, 0) },
    { metric: 'stale records after the final sweep and reconcile', value: r.stale, unit: 'records', ...atMost(r.stale, 0) },
    { metric: 'phantom records after the final sweep and reconcile', value: r.phantom, unit: 'records', ...atMost(r.phantom, 0) },
    {
      metric: 'acknowledged deliveries missing from webhook_inbox',
      value: r.deliveries.ackedLost.length,
      unit: 'deliveries',
      ...atMost(r.deliveries.ackedLost.length, 0),
    },
    { metric: 'webhook_inbox rows kept with a processing error', value: inboxErrors, unit: 'rows', ...atMost(inboxErrors, 0) },
    {
      metric: 'most requests of one process in any 60 s window',
      value: r.requests.maxWindowOneProcess,
      unit: 'requests',
      ...atMost(r.requests.maxWindowOneProcess, r.budget),
    },
    {
      metric: 'most requests of our processes together in any 60 s window (daemon across SIGKILL restarts, final sync and reconcile)',
      value: r.requests.maxWindowAcrossProcesses,
      unit: 'requests',
      ...atMost(r.requests.maxWindowAcrossProcesses, r.budget),
    },
    { metric: 'external reader errors', value: readerErrors, unit: 'errors', ...atMost(readerErrors, 0) },
    { metric: 'external reader queries', value: r.reader.queries, unit: 'queries', goal: '' },
    { metric: 'daemon peak RSS (VmHWM)', value: MiB(r.peakRssBytes), unit: 'MiB', goal: '' },
    { metric: 'mirror WAL peak size', value: MiB(r.peakWalBytes), unit: 'MiB', goal: '' },
    { metric: 'SIGKILLs of the daemon', value: r.kills, unit: 'kills', goal: '' },
    { metric: 'churn writes upstream', value: r.churn.done, unit: 'writes', goal: '' },
    { metric: 'live records compared', value: compared, unit: 'records', goal: '' },
    {
      metric: 'mismatches left by the daemon alone (one cycle after churn, before the final pass)',
      value: r.beforeFinalPass.missing + r.beforeFinalPass.stale + r.beforeFinalPass.phantom,
      unit: 'records',
      goal: '',
    },
  ]
}

export function soakNotes(r: SoakReport): string[] {
  const notes = [
    `Soak of ${Math.round((r.durationMs / 60_000) * 10) / 10} min (seed ${r.seed}): budget ${r.budget}/min, churn ${r.churnPerSecond}/s over clients, jobs, visits, invoices and custom objects (half through the API), 5 % 5xx, 2 % connection resets, 20 ms latency, a 429 storm from a second client on the key, three forced 429s, ${r.kills} SIGKILLs;`,
    `then one \`fsm-sync sync\` and one \`fsm-sync reconcile\` and a record-by-record comparison. ${r.deliveries.acked} deliveries acknowledged, ${r.deliveries.notAcked} not (sent while the daemon was down: recovered by gap detection and sweeps).`,
  ]
  if (r.requests.maxWindowAcrossProcesses > r.budget && r.requests.maxWindowOneProcess <= r.budget) {
    notes.push(
      `Across restarts our processes started ${r.requests.maxWindowAcrossProcesses} requests in one 60 s window (each process at most ${r.requests.maxWindowOneProcess}): a restarted process should have counted its predecessor's starts of the last minute from the mirror's request ledger (request_starts); look for a failed ledger write in the daemon log.`,
    )
  }
  return notes
}

export function formatReport(r: SoakReport): string {
  const rows: [string, string][] = soakFigures(r).map((f) => [
    f.metric,
    `${f.value} ${f.unit}${f.goal === '' ? '' : `  (goal ${f.goal}: ${f.met === true ? 'met' : 'NOT MET'})`}`,
  ])
  rows.push(
    [
      'records compared per stream',
      Object.entries(r.compared)
        .map(([k, v]) => `${k} ${v}`)
        .join(', '),
    ],
    [
      'the daemon alone, one cycle after churn',
      `missing ${r.beforeFinalPass.missing}, stale ${r.beforeFinalPass.stale}, phantom ${r.beforeFinalPass.phantom}${r.beforeFinalPass.cycleDone ? '' : ' (it did not finish a sweep and a reconciliation of every stream within 3 min)'}`,
    ],
    ['final sync / reconcile exit codes', `${String(r.finalSync)} / ${String(r.finalReconcile)}`],
    [
      'webhook deliveries',
      `${r.deliveries.total} sent, ${r.deliveries.acked} acknowledged, ${r.deliveries.notAcked} not; inbox ${r.inbox.rows} rows; kept with a processing error: ${Object.keys(r.inbox.errors).length === 0 ? 'none' : JSON.stringify(r.inbox.errors)}`,
    ],
    [
      'our requests',
      `${r.requests.ours} (429: ${r.requests.ours429}, 5xx or reset: ${r.requests.ours5xxOrReset})${r.requests.logComplete ? '' : ' [request log incomplete]'}`,
    ],
    ['storm requests', `${r.requests.storm.requests} (429: ${r.requests.storm.limited}, failed: ${r.requests.storm.failed})`],
    ['churn errors', String(r.churn.errors)],
    [
      'reader errors',
      Object.keys(r.reader.errors).length === 0 ? 'none' : `${JSON.stringify(r.reader.errors)}; first: ${r.reader.firstError ?? ''}`,
    ],
    ['unexpected daemon exits', r.unexpectedExits.length === 0 ? 'none' : r.unexpectedExits.join(' | ')],
    ['API key in any output', r.secretInOutput ? 'YES' : 'no'],
    ['work folder (mirror, daemon.log)', r.dir],
  )
  const width = Math.max(...rows.map(([k]) => k.length))
  const lines = rows.map(([k, v]) => `${k.padEnd(width)}  ${v}`)
  for (const m of r.mismatches) lines.push(`  ${m.problem} ${m.stream} ${m.id}: ${m.detail}`)
  return lines.join('\n')
}
