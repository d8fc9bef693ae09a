// The destination's commands as a user runs them: doctor's checks with their fixes, replicate (its
// summary, a clear refusal, never the password), status with the destination's lag, consumers.
import { rmSync } from 'node:fs'
import { expect, inject, test } from 'vitest'
import { destinationConsumerName } from '../../../src/destination/postgres-destination.js'
import { RecordWriter } from '../../../src/store/repositories/record-writer.js'
import { SyncStateStore } from '../../../src/store/repositories/sync-state.js'
import { createDatabase, pgQuery } from '../../support/postgres-server.js'
import { cleanEnv, runCli } from '../../support/run-cli.js'
import { tempMirror } from '../../support/temp-mirror.js'

test('doctor, replicate, status and consumers with a Postgres destination', async () => {
  const url = await createDatabase(inject('postgresUrl'))
  const m = await tempMirror()
  const now = new Date().toISOString()
  new RecordWriter(m.sqlite, 'jobs').upsert(
    Array.from({ length: 5 }, (_, i) => ({ id: `j${i}`, updated_at: now, raw: '{}', columns: { job_status: 'open' } })),
    { now, replaceTies: true },
  )
  // A mirror a sweep succeeded in: replicate and consumers refuse one never synced (never-synced.test.ts).
  const state = new SyncStateStore(m.sqlite)
  state.finishRun(state.startRun('sweep', 'jobs', now), { outcome: 'success', rows: 5, requests: 1 }, now)
  await m.close()
  const env = (extra: Record<string, string>) => cleanEnv({ FSM_DB: m.path, ...extra })
  try {
    // A user that may log in but not create the schema: doctor says so, with the GRANT that fixes it.
    const limited = new URL(url)
    limited.username = 'limited_user'
    limited.password = 'limited-secret-4417'
    await pgQuery(url, `CREATE ROLE limited_user LOGIN PASSWORD 'limited-secret-4417'`)
    const doctor = await runCli(['doctor'], env({ FSM_POSTGRES_URL: limited.toString() }))
    expect(doctor.stdout).toMatch(/✓ Postgres connection: connected to 127\.0\.0\.1:\d+\/fsm_test\w+ as limited_user/)
    expect(doctor.stdout).toMatch(/✓ Postgres server version: 18\./)
    expect(doctor.stdout).toMatch(
      /✗ Postgres privileges on schema fsm: the schema does not exist and limited_user may not create it: run GRANT CREATE ON DATABASE "fsm_test\w+" TO "limited_user";/,
    )
    expect(doctor.stdout + doctor.stderr).not.toContain('limited-secret-4417')

    const wrong = new URL(url)
    wrong.password = 'not-the-password-8812'
    const refused = await runCli(['replicate'], env({ FSM_POSTGRES_URL: wrong.toString(), FSM_LOG_LEVEL: 'info' }))
    expect(refused.code).toBe(1)
    expect(refused.stderr).toMatch(/refused the login of postgres .*check the user and password in FSM_POSTGRES_URL/)
    expect(refused.stdout + refused.stderr).not.toContain('not-the-password-8812')
    // Said once at the default level (the command's message, no log line repeating it).
    expect(refused.stderr.match(/refused the login/g)).toHaveLength(1)
    // A destination that never loaded registers nothing: a mistyped URL holds no change_log rows back.
    expect(JSON.parse((await runCli(['consumers', 'list', '--json'], env({}))).stdout)).toEqual([])

    const ok = await runCli(['replicate', '--json'], env({ FSM_POSTGRES_URL: url }))
    expect(ok.stderr).toBe('')
    expect(JSON.parse(ok.stdout)).toMatchObject({ schema: 'fsm', loaded: 'a new destination', cursor: 5, lagChanges: 0 })
    expect(await pgQuery(url, `SELECT id, job_status FROM fsm.jobs ORDER BY id LIMIT 2`)).toEqual([
      { id: 'j0', job_status: 'open' },
      { id: 'j1', job_status: 'open' },
    ])

    const status = await runCli(['status', '--json'], env({ FSM_POSTGRES_URL: url }))
    expect(JSON.parse(status.stdout).destination).toMatchObject({ kind: 'postgres', schema: 'fsm', seq: 5, lagChanges: 0, lastError: null })
    // Another shell, without the URL (a daemon replicates): the destination as it recorded itself in the mirror.
    const target = `127.0.0.1:${new URL(url).port}${new URL(url).pathname}`
    const elsewhere = await runCli(['status', '--json'], env({}))
    expect(JSON.parse(elsewhere.stdout).destination).toMatchObject({
      kind: 'postgres',
      configured: false,
      target,
      schema: 'fsm',
      seq: 5,
      lagChanges: 0,
      lagSeconds: 0,
      lastError: null,
      loadedAt: expect.stringMatching(/^\d{4}-/),
    })
    expect((await runCli(['status'], env({}))).stdout).toMatch(
      new RegExp(
        `destination postgres \\(${target.replace(/\./g, '\\.')}, schema fsm\\): 0 changes behind \\(0s\\), at change 5; last load \\d{4}-`,
      ),
    )

    const add = await runCli(['consumers', 'add', 'etl', '--json'], env({}))
    expect(JSON.parse(add.stdout)).toMatchObject({ name: 'etl', kind: 'user', seq: 5 })
    // A usage error is one JSON document on stdout too, with exit 2.
    const bad = await runCli(['consumers', 'ack', 'etl', 'five', '--json'], env({}))
    expect(bad.code).toBe(2)
    expect(JSON.parse(bad.stdout)).toEqual({ error: { message: expect.stringContaining('SEQ must be'), exitCode: 2 } })
    // A seq past the newest change (5) would stop the consumer from holding anything back for good.
    for (const seq of ['5000000', '12345678901234567890']) {
      const past = await runCli(['consumers', 'ack', 'etl', seq], env({}))
      expect(past.code).toBe(2)
      expect(past.stderr).toContain(`SEQ ${seq} is past the newest change (5)`)
    }
    const unknown = await runCli(['consumers', 'ack', 'nobody', '3', '--json'], env({}))
    expect(unknown.code).toBe(1)
    expect(JSON.parse(unknown.stdout).error.message).toContain('no consumer named nobody; add it first')

    // The destination's row is named after its target (never the password), and is removed only with --force.
    const own = { name: destinationConsumerName(url, 'fsm') }
    expect(own.name).toMatch(/^postgres:127\.0\.0\.1:\d+:fsm_test\w+:fsm$/)
    expect(own.name).not.toContain(new URL(url).password)
    const refusedRemove = await runCli(['consumers', 'remove', own.name], env({}))
    expect(refusedRemove.code).toBe(2)
    expect(refusedRemove.stderr).toContain('Add --force')
    expect((await runCli(['consumers', 'remove', own.name, '--force'], env({}))).code).toBe(0)
  } finally {
    rmSync(m.dir, { recursive: true, force: true })
  }
}, 240_000)
