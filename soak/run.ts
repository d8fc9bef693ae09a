// `npm run soak [-- --minutes N] [--seed S]`: the soak (soak/soak.ts; docs/development.md, Soak). Prints the
// report, writes bench/results/soak.json in the benches' format and regenerates the results table;
// exits 1 when a goal is missed.
import { spawnSync } from 'node:child_process'
import { writeFileSync } from 'node:fs'
import path from 'node:path'
import { parseArgs } from 'node:util'
import { machine } from '../bench/lib.js'
import { ROOT } from '../test/support/run-cli.js'
import { formatReport, soakFigures, soakNotes } from './report.js'
import { runSoak } from './soak.js'

const { values } = parseArgs({
  options: { minutes: { type: 'string', default: '10' }, seed: { type: 'string', default: '1' } },
  strict: true,
})
const minutes = Number(values.minutes)
const seed = Number(values.seed)
if (!(minutes > 0) || !Number.isInteger(seed)) {
  process.stderr.write('usage: npm run soak -- [--minutes N (default 10)] [--seed S (an integer)]\n')
  process.exit(2)
}

const report = await runSoak({ durationMs: minutes * 60_000, seed, log: (line) => process.stdout.write(`[soak] ${line}\n`) })
const figures = soakFigures(report)
process.stdout.write(`\n${formatReport(report)}\n`)
const stored = { name: 'soak', topic: 'soak', figures, notes: soakNotes(report), date: new Date().toISOString(), machine: machine() }
writeFileSync(path.join(ROOT, 'bench/results/soak.json'), JSON.stringify(stored, null, 2) + '\n')
// bench/run.ts with a name that matches no *.bench.ts runs no bench and only rewrites the table.
spawnSync(process.execPath, ['--import', 'tsx', path.join(ROOT, 'bench/run.ts'), 'soak'], { cwd: ROOT, stdio: 'inherit' })
process.exit(figures.every((f) => f.met !== false) ? 0 : 1)
