// The config's `streams` name the streams the registry declares (connectors/selection.ts): the
// config layer checks the shape, and loadConfig checks the names against the choice it is given.
import { describe, expect, test } from 'vitest'
import { SELECTABLE_STREAMS, STREAM_CHOICE } from '../../../connectors/selection.js'
import { loadConfig } from '../../../src/config/index.js'
import { issuesOf } from '../../support/config-file.js'

describe('stream names in the config', () => {
  test('absent, every selectable stream of the registry is selected', () => {
    expect(loadConfig({ env: {}, streams: STREAM_CHOICE }).streams).toEqual(SELECTABLE_STREAMS)
    expect(SELECTABLE_STREAMS).toEqual(expect.arrayContaining(['clients', 'jobs', 'visits', 'invoices', 'objects', 'team', 'webhooks']))
  })

  test('declared names and objects:<slug> pass; an unknown one is an error naming it and the valid names', () => {
    expect(loadConfig({ env: {}, overrides: { streams: ['jobs', 'objects:equipment'] }, streams: STREAM_CHOICE }).streams).toEqual([
      'jobs',
      'objects:equipment',
    ])
    const issues = issuesOf(() => loadConfig({ env: {}, overrides: { streams: ['jobs', 'widgets', 'clients:x'] }, streams: STREAM_CHOICE }))
    expect(issues.map((i) => i.key)).toEqual(['streams.1', 'streams.2'])
    expect(issues[0]!.message).toBe(
      `widgets: no such stream; valid: ${SELECTABLE_STREAMS.join(', ')}, or objects:<slug> for one custom object`,
    )
  })

  test('FSM_STREAMS, comma-separated, sets them above the config file; a name in it that is none is an error naming FSM_STREAMS', () => {
    const file = { streams: ['invoices'] }
    expect(
      loadConfig({ env: { FSM_STREAMS: 'clients, jobs,objects:equipment' }, overrides: file, streams: STREAM_CHOICE }).streams,
    ).toEqual(['clients', 'jobs', 'objects:equipment'])
    expect(loadConfig({ env: { FSM_STREAMS: '' }, overrides: file, streams: STREAM_CHOICE }).streams).toEqual(['invoices'])
    const issues = issuesOf(() => loadConfig({ env: { FSM_STREAMS: 'jobs,widgets' }, streams: STREAM_CHOICE }))
    expect(issues).toEqual([{ key: 'FSM_STREAMS', message: expect.stringMatching(/^widgets: no such stream; valid: clients, /) }])
  })

  test('a name that is not even shaped like one is refused by the config layer alone', () => {
    expect(issuesOf(() => loadConfig({ env: {}, overrides: { streams: ['Jobs!'] } }))[0]!.message).toMatch(/must be a stream name/)
  })
})
