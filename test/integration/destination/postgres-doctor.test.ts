// doctor's Postgres checks against a real server with real roles: each privilege is checked on its
// own (a role holding one of several does not pass), the GRANTs suggested are ones that work for
// tables another role owns, and a database that is not UTF8 is named with the fix (and refused by
// the destination before it writes anything).
import pino from 'pino'
import { afterAll, beforeAll, expect, inject, test } from 'vitest'
import { destinationTables } from '../../../src/destination/destination-tables.js'
import { postgresChecks } from '../../../src/destination/postgres-doctor.js'
import { PostgresDestination } from '../../../src/destination/postgres-destination.js'
import { systemClock } from '../../../src/model/clock.js'
import { RecordWriter } from '../../../src/store/repositories/record-writer.js'
import { createDatabase, pgQuery, withDatabase } from '../../support/postgres-server.js'
import { tempMirror, type TempMirror } from '../../support/temp-mirror.js'

const tables = destinationTables().filter((t) => ['jobs', 'job_assignees', 'change_log'].includes(t.name))
const suffix = `${process.pid}_${Date.now().toString(36)}`
let m: TempMirror
let url: string

function destination(target: string): PostgresDestination {
  return new PostgresDestination({
    url: target,
    schema: 'fsm',
    mirrorPath: m.path,
    mirror: m.sqlite,
    tables,
    logger: pino({ level: 'silent' }),
    clock: systemClock,
  })
}

function writeJob(id: string): void {
  const now = new Date().toISOString()
  new RecordWriter(m.sqlite, 'jobs').upsert([{ id, updated_at: now, raw: '{}', columns: { job_status: 'open' } }], {
    now,
    replaceTies: true,
  })
}

/** A new login role (roles are the server's, shared by every test file: the name is unique) and its URL. */
async function role(name: string, grants: string): Promise<{ user: string; url: string }> {
  const user = `${name}_${suffix}`
  await pgQuery(url, `CREATE ROLE "${user}" LOGIN PASSWORD 'pw-${user}'; ${grants.replaceAll('$ROLE', `"${user}"`)}`)
  const u = new URL(url)
  u.username = user
  u.password = `pw-${user}`
  return { user, url: u.toString() }
}

const privileges = async (target: string) => (await postgresChecks(target, 'fsm', tables)).find((c) => c.label.includes('privileges'))!

beforeAll(async () => {
  m = await tempMirror()
  url = await createDatabase(inject('postgresUrl'))
  writeJob('j1')
  // The replica made by the superuser: every table is owned by postgres.
  const owner = destination(url)
  await owner.catchUp()
  await owner.close()
})

afterAll(async () => {
  await m.dispose()
})

test('privileges: each is checked on its own, and the GRANT suggested for tables another role owns works', async () => {
  // USAGE and SELECT only: a list of privileges would be "held" on one of them.
  const reader = await role('doc_reader', `GRANT USAGE ON SCHEMA fsm TO $ROLE; GRANT SELECT ON ALL TABLES IN SCHEMA fsm TO $ROLE`)
  const readerCheck = await privileges(reader.url)
  expect(readerCheck.ok).toBe(false)
  expect(readerCheck.detail).toContain(`lacks INSERT, UPDATE, DELETE on jobs, job_assignees, change_log, _fsm_sync_state`)

  // CREATE on the schema does not make tables another role owns writable.
  const creator = await role('doc_creator', `GRANT USAGE, CREATE ON SCHEMA fsm TO $ROLE`)
  const creatorCheck = await privileges(creator.url)
  expect(creatorCheck.ok).toBe(false)
  expect(creatorCheck.detail).toMatch(
    new RegExp(
      `lacks SELECT, INSERT, UPDATE, DELETE on jobs, .*: run as postgres \\(owner of jobs, .*\\) GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA "fsm" TO "${creator.user}";`,
    ),
  )
  // It cannot replicate, as doctor says.
  writeJob('j2')
  const refused = destination(creator.url)
  await expect(refused.catchUp()).rejects.toThrow(/lacks a privilege/)
  await refused.close()

  // CREATE without USAGE: nothing in the schema can be reached.
  const blind = await role('doc_blind', `GRANT CREATE ON SCHEMA fsm TO $ROLE`)
  expect((await privileges(blind.url)).detail).toMatch(
    /lacks USAGE on the schema; and .*: run as postgres \(the schema's owner\) GRANT USAGE ON SCHEMA "fsm"/,
  )

  // The GRANTs doctor suggests, run as the owner it names: doctor passes and the role replicates.
  const grants = creatorCheck.detail.match(/GRANT [^;]+;/g)!
  for (const g of grants) await pgQuery(url, g)
  expect(await privileges(creator.url)).toMatchObject({ ok: true, detail: `${creator.user} may write every table of the replica` })
  const works = destination(creator.url)
  expect((await works.catchUp()).changesApplied).toBeGreaterThanOrEqual(1)
  await works.close()
  expect(await pgQuery(url, `SELECT id FROM fsm.jobs ORDER BY id`)).toEqual([{ id: 'j1' }, { id: 'j2' }])
})

test('a database that is not UTF8: doctor names the encoding and the fix; the destination refuses it before writing', async () => {
  const name = `fsm_latin1_${suffix}`
  await pgQuery(url, `CREATE DATABASE "${name}" ENCODING 'LATIN1' LC_COLLATE 'C' LC_CTYPE 'C' TEMPLATE template0`)
  const latin1 = withDatabase(url, name)
  const checks = await postgresChecks(latin1, 'fsm', tables)
  expect(checks.find((c) => c.label === 'Postgres database encoding')).toEqual({
    ok: false,
    label: 'Postgres database encoding',
    detail: expect.stringMatching(
      new RegExp(`"${name}" is encoded in LATIN1, .*CREATE DATABASE "${name}_utf8" ENCODING 'UTF8' TEMPLATE template0;`),
    ),
  })
  expect((await postgresChecks(url, 'fsm', tables)).find((c) => c.label === 'Postgres database encoding')).toMatchObject({
    ok: true,
    detail: 'UTF8',
  })
  const d = destination(latin1)
  await expect(d.catchUp()).rejects.toThrow(/is encoded in LATIN1, which cannot hold every character/)
  await d.close()
  expect(await pgQuery(latin1, `SELECT 1 FROM pg_namespace WHERE nspname = 'fsm'`)).toEqual([])
})
