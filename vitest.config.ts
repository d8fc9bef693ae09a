import { defineConfig } from 'vitest/config'

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
    // One Postgres server for the destination's tests (about half a second to start).
    globalSetup: ['test/support/postgres-global-setup.ts'],
  },
})
