// Starts one Postgres server for the whole run (vitest globalSetup) and hands its URL to the test
// files through `inject('postgresUrl')`; each file that uses it creates its own database.
import type { TestProject } from 'vitest/node'
import { startPostgres } from './postgres-server.js'

declare module 'vitest' {
  export interface ProvidedContext {
    postgresUrl: string
  }
}

export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  const server = await startPostgres()
  project.provide('postgresUrl', server.url)
  return () => server.stop()
}
