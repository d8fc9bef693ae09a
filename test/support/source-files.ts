// The repository's TypeScript files below a folder, for the tests that read the product's source.
import { readdirSync } from 'node:fs'
import path from 'node:path'
import { ROOT } from './run-cli.js'

/** Every `.ts` file below `dir` (relative to the repository root), as repository-relative paths with `/`. */
export function sourceFiles(dir: string, out: string[] = []): string[] {
  for (const entry of readdirSync(path.join(ROOT, dir), { withFileTypes: true })) {
    const rel = `${dir}/${entry.name}`
    if (entry.isDirectory()) sourceFiles(rel, out)
    else if (entry.isFile() && entry.name.endsWith('.ts')) out.push(rel)
  }
  return out
}
