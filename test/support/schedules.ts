// Daemon schedules for tests: every job off the clock but the ones a test names.
import type { ScheduleName } from '../../src/config/schema.js'

/** Never fires in a test run (1 January at midnight). */
export const NEVER = '0 0 1 1 *'

/** Every schedule NEVER, but those in `set` (a cron expression, or "off" where the config allows it). */
export function idleSchedules(set: Partial<Record<ScheduleName, string>> = {}): Record<ScheduleName, string> {
  return {
    sweep: NEVER,
    reference: NEVER,
    reconcile: NEVER,
    calendarA: NEVER,
    calendarB: NEVER,
    accounting: NEVER,
    deliveries: NEVER,
    retention: NEVER,
    ...set,
  }
}
