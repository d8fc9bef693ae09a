// Instants from upstream text: a zone-less ISO-8601 value is UTC (spec, Conventions: datetimes are
// UTC), whatever the host's zone; explicit zones are kept. The suite runs under a non-UTC TZ
// (vitest.config.ts), so a parse in local time shows up here as a 4 or 5 h shift.
import { readFileSync } from 'node:fs'
import path from 'node:path'
import ts from 'typescript'
import { describe, expect, test } from 'vitest'
import { RECORD_STREAMS } from '../../../connectors/index.js'
import { calendarChangeRow } from '../../../src/sync/calendar-feed.js'
import { canonicalTime, canonicalTimeOrText, isInstant, parseInstant } from '../../../src/model/timestamps.js'
import { ROOT } from '../../support/run-cli.js'

describe('the suite runs in a non-UTC zone', () => {
  test('local time here is not UTC, in winter and in summer', () => {
    expect(process.env.TZ).toBe('America/New_York')
    expect(new Date(Date.UTC(2026, 0, 15)).getTimezoneOffset()).toBe(300)
    expect(new Date(Date.UTC(2026, 6, 15)).getTimezoneOffset()).toBe(240)
  })
})

describe('zone-less timestamps are read as UTC, not in the host zone', () => {
  test.each([
    ['2026-01-05T10:00:00.000', '2026-01-05T10:00:00.000Z'],
    ['2026-07-05T10:00:00', '2026-07-05T10:00:00.000Z'],
    ['2026-01-05T10:00', '2026-01-05T10:00:00.000Z'],
    ['2026-01-05 10:00:00.5', '2026-01-05T10:00:00.500Z'],
    ['2026-01-05T10:00:00.123456', '2026-01-05T10:00:00.123Z'],
    ['2026-01-05', '2026-01-05T00:00:00.000Z'],
    ['2026-01-05T10:00:00Z', '2026-01-05T10:00:00.000Z'],
    ['2026-01-05T10:00:00+02:00', '2026-01-05T08:00:00.000Z'],
    ['2026-01-05T10:00:00-0500', '2026-01-05T15:00:00.000Z'],
    ['Mon, 05 Jan 2026 10:00:00 GMT', '2026-01-05T10:00:00.000Z'],
  ])('%s is %s', (text, utc) => {
    expect(new Date(parseInstant(text)).toISOString()).toBe(utc)
    expect(canonicalTime(text)).toBe(utc)
  })

  test.each(['', 'yesterday', '2026-13-45T99:00:00', '01/05/2026 10:00', 'Mon, 05 Jan 2026 10:00:00'])(
    'a value that is not a date, or whose zone only the host could supply (%j), is not an instant',
    (text) => {
      expect(parseInstant(text)).toBeNaN()
      expect(canonicalTimeOrText(text)).toBe(text === '' ? null : text)
    },
  )

  test('an instant is a year from 0001 to 9999: year 0000 (which Postgres refuses) and wider years are kept as text, never as an instant', () => {
    for (const t of ['0001-01-01T00:00:00.000Z', '9999-12-31T23:59:59.999Z', '2024-02-29T12:00:00.000Z']) {
      expect(isInstant(t)).toBe(true)
      expect(canonicalTime(t)).toBe(t)
    }
    for (const t of [
      '0000-01-01T00:00:00.000Z',
      '0000-06-30T12:00:00.000Z',
      '0000-01-01',
      '+010000-01-01T00:00:00.000Z',
      '-000001-01-01T00:00:00.000Z',
    ]) {
      expect(isInstant(t)).toBe(false)
      expect(() => canonicalTime(t)).toThrow(/between years 0001 and 9999/)
      expect(canonicalTimeOrText(t)).toBe(t)
    }
    expect(isInstant('2026-02-30T00:00:00.000Z')).toBe(false)
    expect(() => canonicalTime(8.7e15)).toThrow(/not a date-time/)
    // A record whose updatedAt is one is refused; a createdAt is kept as text.
    expect(() => RECORD_STREAMS[0]!.toRow({ id: 'r1', updatedAt: '0000-01-01T00:00:00.000Z' })).toThrow(/without a valid updatedAt/)
    expect(RECORD_STREAMS[0]!.toRow({ id: 'r1', updatedAt: '2026-01-01', createdAt: '0000-01-01T00:00:00.000Z' }).columns.created_at).toBe(
      '0000-01-01T00:00:00.000Z',
    )
  })

  test.each(RECORD_STREAMS.map((s) => [s.name, s] as const))(
    'a %s row with a zone-less updatedAt is stored at that UTC instant',
    (_name, stream) => {
      const row = stream.toRow({ id: 'r1', updatedAt: '2026-01-05T10:00:00.000', createdAt: '2026-01-04T09:30:00' })
      expect(row.updated_at).toBe('2026-01-05T10:00:00.000Z')
      expect(row.columns.created_at).toBe('2026-01-04T09:30:00.000Z')
    },
  )

  test('a calendar change read without a zone keeps its UTC instant and change key', () => {
    const row = calendarChangeRow({ action: 'updated', visitId: 'v1', externalEventId: 'e1', changedAt: '2026-01-05T10:00:00' })
    expect(row?.changed_at).toBe('2026-01-05T10:00:00.000Z')
    expect(row?.change_key).toBe('e1@2026-01-05T10:00:00.000Z')
  })
})

// Where upstream text becomes an instant outside the one parser: Date.parse anywhere, or
// `new Date(x)` where x may be a string (read through the type checker, so a variable named
// innocently is caught as well as a literal).
function strayParses(): string[] {
  const config = ts.readConfigFile(path.join(ROOT, 'tsconfig.json'), (p) => readFileSync(p, 'utf8'))
  const parsed = ts.parseJsonConfigFileContent(config.config, ts.sys, ROOT)
  const files = parsed.fileNames.filter((f) => /\/(src|connectors)\//.test(f) && !f.endsWith('/src/model/timestamps.ts'))
  const program = ts.createProgram(files, parsed.options)
  const checker = program.getTypeChecker()
  const found: string[] = []
  const stringish = ts.TypeFlags.StringLike | ts.TypeFlags.Any | ts.TypeFlags.Unknown
  for (const file of files) {
    const sf = program.getSourceFile(file)!
    const where = (node: ts.Node) =>
      `${path.relative(ROOT, file)}:${sf.getLineAndCharacterOfPosition(node.getStart(sf)).line + 1} ${node.getText(sf)}`
    const visit = (node: ts.Node): void => {
      if (ts.isPropertyAccessExpression(node) && node.expression.getText(sf) === 'Date' && node.name.text === 'parse')
        found.push(where(node.parent))
      if (ts.isNewExpression(node) && node.expression.getText(sf) === 'Date' && node.arguments?.length === 1) {
        const type = checker.getTypeAtLocation(node.arguments[0]!)
        const flags = type.isUnion() ? type.types.reduce((all, t) => all | t.flags, 0) : type.flags
        if ((flags & stringish) !== 0) found.push(where(node))
      }
      if (ts.isPropertyAccessExpression(node) && /^z\.coerce$/.test(node.expression.getText(sf)) && node.name.text === 'date')
        found.push(where(node.parent))
      ts.forEachChild(node, visit)
    }
    visit(sf)
  }
  return found
}

describe('one parser for upstream instants', () => {
  test('nothing in src/ or connectors/ turns text into an instant except parseInstant', () => {
    expect(strayParses()).toEqual([])
  })
})
