import { defineConfig } from 'vitest/config'
import { SlowFirstSequencer } from './test/support/slow-first-sequencer.js'

// Every datetime the mirror handles is UTC, whatever the host's zone: the suite runs in a zone with
// a non-zero offset (and daylight saving), so code that reads a zone-less value in local time fails
// here rather than in production. Set before the workers start, so they and the CLI children they
// spawn inherit it.
process.env.TZ = 'America/New_York'

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    testTimeout: 30_000,
    hookTimeout: 30_000,
    pool: 'forks',
    // Most files wait on child processes, real timers and the rate-limited emulator rather than on the
    // CPU, and vitest's default on 2 cores is one file at a time (cores - 1): three at once took the
    // suite from 573 s to 246 s on 2 cores with every test passing.
    maxWorkers: 3,
    sequence: { sequencer: SlowFirstSequencer },
    // One Postgres server for the destination's tests (about half a second to start).
    globalSetup: ['test/support/postgres-global-setup.ts'],
  },
})
