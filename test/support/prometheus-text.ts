// A strict reader of the Prometheus text exposition (version 0.0.4) for tests: every sample belongs
// to the family whose TYPE (and HELP) came just before it, once per family, label sets are well formed, values are numbers.
export interface Sample {
  name: string
  labels: Record<string, string>
  value: number
}

export interface Exposition {
  /** By family name: its TYPE and HELP. */
  families: Map<string, { type: string; help: string }>
  samples: Sample[]
}

const SUFFIXES: Record<string, readonly string[]> = { histogram: ['_bucket', '_sum', '_count'], summary: ['_sum', '_count'] }

export function parseExposition(text: string): Exposition {
  const families = new Map<string, { type: string; help: string }>()
  const helps = new Map<string, string>()
  const samples: Sample[] = []
  let current: string | undefined
  for (const [i, line] of text.split('\n').entries()) {
    const where = `line ${i + 1}: ${line}`
    if (line === '') continue
    const comment = /^# (HELP|TYPE) ([a-zA-Z_:][a-zA-Z0-9_:]*) (.*)$/.exec(line)
    if (comment !== null) {
      const [, kind, name, rest] = comment as unknown as [string, string, string, string]
      if (kind === 'HELP') {
        if (helps.has(name)) throw new Error(`a second HELP for ${name}, ${where}`)
        helps.set(name, rest)
      } else {
        if (families.has(name)) throw new Error(`a second TYPE for ${name}, ${where}`)
        if (!['counter', 'gauge', 'histogram', 'summary', 'untyped'].includes(rest)) throw new Error(`unknown type, ${where}`)
        families.set(name, { type: rest, help: helps.get(name) ?? '' })
        current = name
      }
      continue
    }
    if (line.startsWith('#')) continue
    const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$/.exec(line)
    if (m === null) throw new Error(`not a sample, ${where}`)
    const [, name, body, value] = m as unknown as [string, string, string | undefined, string]
    const labels: Record<string, string> = {}
    if (body !== undefined && body !== '') {
      const re = /([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"(,|$)/y
      let at = 0
      while (at < body.length) {
        re.lastIndex = at
        const l = re.exec(body)
        if (l === null) throw new Error(`bad labels, ${where}`)
        if (l[1]! in labels) throw new Error(`label ${l[1]} twice, ${where}`)
        labels[l[1]!] = l[2]!.replace(/\\n/g, '\n').replace(/\\(.)/g, '$1')
        at = re.lastIndex
      }
    }
    // A family's samples follow its TYPE line, together.
    const family = current
    if (family === undefined) throw new Error(`a sample before any TYPE, ${where}`)
    const suffixes = SUFFIXES[families.get(family)!.type] ?? []
    if (name !== family && !suffixes.some((s) => name === family + s))
      throw new Error(`a sample outside its family (after the TYPE of ${family}), ${where}`)
    const number = value === '+Inf' ? Infinity : value === '-Inf' ? -Infinity : Number(value)
    if (Number.isNaN(number) && value !== 'NaN') throw new Error(`not a number, ${where}`)
    samples.push({ name, labels, value: number })
  }
  return { families, samples }
}
