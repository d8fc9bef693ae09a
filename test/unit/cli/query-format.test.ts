// The query formats read rows lazily (a result is never collected), json stays one document, and
// the table fixes its widths from the first rows, letting later wider values run over.
import { describe, expect, test } from 'vitest'
import { formatRows, TABLE_MAX_WIDTH, TABLE_WIDTH_SAMPLE } from '../../../src/cli/query-format.js'

function* endless(): Generator<unknown[]> {
  for (let i = 1; ; i++) yield [i, `row ${i}`]
}

function take(chunks: Iterator<string>, n: number): string[] {
  const out: string[] = []
  for (let c = chunks.next(); !c.done && out.length < n; c = chunks.next()) out.push(c.value)
  return out
}

describe('query formats stream rows', () => {
  test.each(['table', 'json', 'csv'] as const)('%s reads rows as it writes them: an endless result still yields', (format) => {
    const out = take(formatRows({ columns: ['n', 'text'], origins: [], rows: endless() }, format), TABLE_WIDTH_SAMPLE + 10)
    expect(out.join('')).toContain(`row ${TABLE_WIDTH_SAMPLE + 5}`)
  })

  test('json is one valid document, empty or not', () => {
    const doc = (rows: unknown[][]) => JSON.parse([...formatRows({ columns: ['a', 'b'], origins: [], rows }, 'json')].join('')) as unknown
    expect(doc([])).toEqual([])
    expect(
      doc([
        [1, null],
        ['x', 'y,"z"'],
      ]),
    ).toEqual([
      { a: 1, b: null },
      { a: 'x', b: 'y,"z"' },
    ])
  })

  test('table widths come from the header and the first rows; a later wider value runs over; very long values are cut', () => {
    const rows: unknown[][] = Array.from({ length: TABLE_WIDTH_SAMPLE }, (_, i) => [i, 'ab'])
    rows.push([-1, 'a much wider value'], [-2, 'x'.repeat(TABLE_MAX_WIDTH + 10)])
    const lines = [...formatRows({ columns: ['n', 'text'], origins: [], rows }, 'table')].join('').split('\n')
    expect(lines[0]).toBe('n    text')
    expect(lines[1]).toBe('---  ----')
    expect(lines[2]).toBe('0    ab')
    expect(lines).toContain('-1   a much wider value')
    expect(lines).toContain(`-2   ${'x'.repeat(TABLE_MAX_WIDTH - 1)}…`)
    expect(lines.at(-2)).toBe(`(${TABLE_WIDTH_SAMPLE + 2} rows)`)
  })
})
