// A schedule is checked with croner itself at config time: a value croner refuses, or one it
// accepts but can never fire (30 February), would otherwise leave the daemon up with nothing ever
// scheduled. The field count is ours: croner also takes "@daily", which docs/configuration.md does not promise.
import { Cron } from 'croner'

export const CRON_FORMS =
  'use a cron expression of 5 fields (minute hour day-of-month month day-of-week, e.g. "*/5 * * * *") or 6 with seconds first (e.g. "0 */5 * * * *"), or "off" to switch the schedule off'

/** Why `expression` cannot be a schedule, or undefined when croner gives it a next run after `from`. */
export function cronProblem(expression: string, from: Date = new Date()): string | undefined {
  const fields = expression
    .trim()
    .split(/\s+/)
    .filter((f) => f !== '').length
  if (fields !== 5 && fields !== 6) return `"${expression}" has ${fields} field${fields === 1 ? '' : 's'}: ${CRON_FORMS}`
  let cron: Cron
  try {
    // No callback: croner then arms no timer, it only parses.
    cron = new Cron(expression.trim())
  } catch (err) {
    return `"${expression}" is not a valid cron expression (${(err as Error).message.replace(/^CronPattern:\s*/, '')}): ${CRON_FORMS}`
  }
  const next = cron.nextRun(from)
  cron.stop()
  if (next === null) return `"${expression}" never fires (no date matches it, e.g. 30 February): ${CRON_FORMS}`
  return undefined
}
