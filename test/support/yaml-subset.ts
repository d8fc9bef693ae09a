// A reader of the YAML the repository's deployment files are written in, for tests that check them
// against the code: block mappings and sequences, plain and quoted scalars, `|` literal blocks,
// one-line `[a, b]` lists, `{}`, comments and `---` documents. Anything else (anchors, folded
// blocks, tabs, flow mappings) is refused with its line, so a file cannot drift out of what is checked.

interface Line {
  n: number
  indent: number
  text: string
}

/** Every document of `source`, in order. */
export function parseYamlDocuments(source: string): unknown[] {
  const docs: string[][] = [[]]
  for (const raw of source.split('\n')) {
    if (raw === '---') docs.push([])
    else docs.at(-1)!.push(raw)
  }
  return docs.map((d) => parseDocument(d)).filter((d) => d !== undefined)
}

function parseDocument(raws: string[]): unknown {
  return new Reader(raws).document()
}

class Reader {
  #i = 0
  constructor(readonly raws: string[]) {}

  document(): unknown {
    const first = this.#peek()
    if (first === undefined) return undefined
    const value = this.#block(first.indent)
    const rest = this.#peek()
    if (rest !== undefined) throw new Error(`line ${rest.n}: unexpected indentation: ${rest.text}`)
    return value
  }

  /** The next meaningful line (comments and blanks skipped), not consumed. */
  #peek(): Line | undefined {
    while (this.#i < this.raws.length) {
      const raw = this.raws[this.#i]!
      if (raw.includes('\t')) throw new Error(`line ${this.#i + 1}: a tab`)
      const text = stripComment(raw.trimEnd())
      if (text.trim() === '') {
        this.#i++
        continue
      }
      const indent = text.length - text.trimStart().length
      return { n: this.#i + 1, indent, text: text.trimStart() }
    }
    return undefined
  }

  #block(indent: number): unknown {
    const line = this.#peek()!
    return line.text === '-' || line.text.startsWith('- ') ? this.#sequence(indent) : this.#mapping(indent)
  }

  #sequence(indent: number): unknown[] {
    const out: unknown[] = []
    for (let line = this.#peek(); line !== undefined && line.indent === indent && /^-( |$)/.test(line.text); line = this.#peek()) {
      const rest = line.text.slice(1).trimStart()
      if (rest === '') {
        this.#i++
        const next = this.#peek()
        if (next === undefined || next.indent <= indent) throw new Error(`line ${line.n}: an empty list item`)
        out.push(this.#block(next.indent))
      } else if (/^[^'"[{][^:]*:( |$)/.test(rest) || /^(['"]).*\1:( |$)/.test(rest)) {
        // `- key: value` opens a mapping whose keys sit two columns in: read this line as one of them.
        const inner = indent + line.text.length - rest.length
        this.raws[this.#i] = ' '.repeat(inner) + rest
        out.push(this.#mapping(inner))
      } else {
        this.#i++
        out.push(scalar(rest, line.n))
      }
    }
    return out
  }

  #mapping(indent: number): Record<string, unknown> {
    const out: Record<string, unknown> = {}
    for (let line = this.#peek(); line !== undefined && line.indent === indent; line = this.#peek()) {
      const m = /^("(?:[^"\\]|\\.)*"|'[^']*'|[^'"\s][^:]*?):(?: (.*))?$/.exec(line.text)
      if (m === null) throw new Error(`line ${line.n}: not a "key: value" line: ${line.text}`)
      const key = String(scalar(m[1]!, line.n))
      if (key in out) throw new Error(`line ${line.n}: a second ${key}`)
      const rest = (m[2] ?? '').trim()
      this.#i++
      if (rest === '|' || rest === '|-') out[key] = this.#literal(indent, rest === '|', line.n)
      else if (rest !== '') out[key] = scalar(rest, line.n)
      else {
        const next = this.#peek()
        if (next !== undefined && (next.indent > indent || (next.indent === indent && /^-( |$)/.test(next.text))))
          out[key] = this.#block(next.indent)
        else out[key] = null
      }
    }
    return out
  }

  #literal(indent: number, keepNewline: boolean, n: number): string {
    const body: string[] = []
    let inner: number | undefined
    while (this.#i < this.raws.length) {
      const raw = this.raws[this.#i]!
      const own = raw.length - raw.trimStart().length
      if (raw.trim() !== '' && own <= indent) break
      if (raw.trim() !== '') inner ??= own
      body.push(raw)
      this.#i++
    }
    if (inner === undefined) throw new Error(`line ${n}: an empty literal block`)
    while (body.length > 0 && body.at(-1)!.trim() === '') body.pop()
    const text = body.map((l) => l.slice(inner)).join('\n')
    return keepNewline ? `${text}\n` : text
  }
}

function stripComment(line: string): string {
  let quote: string | undefined
  for (let i = 0; i < line.length; i++) {
    const c = line[i]!
    if (quote !== undefined) {
      if (c === '\\' && quote === '"') i++
      else if (c === quote) quote = undefined
    } else if (c === '"' || c === "'") quote = c
    else if (c === '#' && (i === 0 || line[i - 1] === ' ')) return line.slice(0, i)
  }
  return line
}

function scalar(text: string, n: number): unknown {
  const t = text.trim()
  if (/^[&*!>]/.test(t)) throw new Error(`line ${n}: anchors, aliases, tags and folded blocks are not read here: ${t}`)
  if (t === '{}') return {}
  if (t.startsWith('{')) throw new Error(`line ${n}: a flow mapping: ${t}`)
  if (t.startsWith('[')) {
    if (!t.endsWith(']')) throw new Error(`line ${n}: a list not closed on its line: ${t}`)
    const inner = t.slice(1, -1).trim()
    return inner === '' ? [] : splitFlow(inner).map((x) => scalar(x, n))
  }
  if (t.startsWith('"')) return JSON.parse(t) as string
  if (t.startsWith("'")) {
    if (!t.endsWith("'")) throw new Error(`line ${n}: an unclosed quote: ${t}`)
    return t.slice(1, -1).replaceAll("''", "'")
  }
  if (t === 'true' || t === 'false') return t === 'true'
  if (t === 'null' || t === '~') return null
  if (/^-?0\d+$/.test(t)) throw new Error(`line ${n}: a number with a leading zero (octal in YAML 1.1, decimal in 1.2): ${t}`)
  if (/^-?\d+$/.test(t)) return Number(t)
  return t
}

function splitFlow(text: string): string[] {
  const out: string[] = []
  let quote: string | undefined
  let start = 0
  for (let i = 0; i < text.length; i++) {
    const c = text[i]!
    if (quote !== undefined) {
      if (c === '\\' && quote === '"') i++
      else if (c === quote) quote = undefined
    } else if (c === '"' || c === "'") quote = c
    else if (c === '[' || c === '{') throw new Error(`a nested flow collection: ${text}`)
    else if (c === ',') {
      out.push(text.slice(start, i))
      start = i + 1
    }
  }
  out.push(text.slice(start))
  return out.map((s) => s.trim())
}
