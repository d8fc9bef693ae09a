// The webhook signing secrets, in their own small file next to the mirror. The mirror is meant to be
// shared with warehouse readers (sqlite3, DuckDB, `fsm-sync query`); anyone holding a secret can
// forge deliveries, so no secret lives in it. The file is JSON rather than a second SQLite file: it
// is replaced whole by a rename (all or nothing, never half written), its change is seen by a
// `stat`, it has no -wal or -journal beside it to leak from, and `ATTACH` cannot open it as a
// database. It is created readable by its owner only (0600) and written durably (temp file, fsync,
// rename, fsync of the folder) before a caller reports success: a lost secret fails every delivery
// until the next `webhooks register`.
import { randomBytes } from 'node:crypto'
import fs from 'node:fs'
import path from 'node:path'
import { z } from 'zod'

export const SECRETS_FILE_MODE = 0o600

const EntrySchema = z.strictObject({
  endpointId: z.string().min(1),
  url: z.string(),
  secret: z.string().min(1),
  createdAt: z.string(),
  supersededAt: z.string().nullable(),
})
const FileSchema = z.strictObject({ version: z.literal(1), secrets: z.array(EntrySchema) })

/** One issued secret; `supersededAt` starts the grace period of a rotated one. Oldest first in the file. */
export type SecretEntry = z.infer<typeof EntrySchema>

export class SecretsFileError extends Error {
  readonly code: 'SECRETS_FILE_INVALID' | 'SECRETS_FILE_UNREADABLE' | 'SECRETS_FILE_WRITE_FAILED'
  readonly file: string
  constructor(code: SecretsFileError['code'], file: string, message: string, options?: ErrorOptions) {
    super(message, options)
    this.name = 'SecretsFileError'
    this.code = code
    this.file = file
  }
}

/** `data/fsm-mirror.db` -> `data/fsm-mirror.secrets.json`: beside the mirror, named after it. */
export function secretsPathFor(mirrorPath: string): string {
  const resolved = path.resolve(mirrorPath)
  const ext = path.extname(resolved)
  const base = ext === '' ? path.basename(resolved) : path.basename(resolved, ext)
  return path.join(path.dirname(resolved), `${base}.secrets.json`)
}

/**
 * What identifies one version of the file: a write replaces it by a rename, so the inode changes
 * every time, and the nanosecond times and size guard against an inode number being reused.
 * undefined when there is no file.
 */
export function secretsFileStamp(file: string): string | undefined {
  const st = fs.statSync(file, { bigint: true, throwIfNoEntry: false })
  return st === undefined ? undefined : `${st.ino}:${st.size}:${st.mtimeNs}:${st.ctimeNs}`
}

/** The stored secrets, oldest first; none when the file does not exist yet. */
export function readSecretsFile(file: string): SecretEntry[] {
  let text: string
  try {
    text = fs.readFileSync(file, 'utf8')
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return []
    throw new SecretsFileError(
      'SECRETS_FILE_UNREADABLE',
      file,
      `cannot read the webhook secrets file ${file}: ${(err as Error).message}; it must be readable by the user fsm-sync runs as`,
      { cause: err },
    )
  }
  let value: unknown
  try {
    value = JSON.parse(text)
  } catch (err) {
    // No cause and no message of the parser's: V8 quotes the text around the fault, which is a
    // secret here, and error serializers log causes. The position is enough to find it.
    throw new SecretsFileError(
      'SECRETS_FILE_INVALID',
      file,
      `the webhook secrets file ${file} is not valid JSON (${jsonFault(text, err)}); restore it from a backup, or delete it and run \`fsm-sync webhooks register\` again`,
    )
  }
  const parsed = FileSchema.safeParse(value)
  if (!parsed.success) {
    // Paths only: the values are secrets.
    const where = parsed.error.issues.map((i) => i.path.join('.') || '(top)').join(', ')
    throw new SecretsFileError(
      'SECRETS_FILE_INVALID',
      file,
      `the webhook secrets file ${file} does not have the expected shape (at ${where}); restore it from a backup, or delete it and run \`fsm-sync webhooks register\` again`,
    )
  }
  return parsed.data.secrets
}

/** Where JSON.parse failed, without any of the text: a position when V8 gives one. */
function jsonFault(text: string, err: unknown): string {
  const message = err instanceof Error ? err.message : ''
  const at = /at position (\d+)/.exec(message)
  if (at !== null) {
    const position = Number(at[1])
    const before = text.slice(0, position).split('\n')
    return `at position ${position}, line ${before.length} column ${before[before.length - 1]!.length + 1}`
  }
  if (/end of JSON input/.test(message)) return `it ends early, after ${text.length} characters`
  return 'an unexpected character in it'
}

/** Replaces the file with `entries`, durably: on return the new content survives a power loss. */
export function writeSecretsFile(file: string, entries: readonly SecretEntry[]): void {
  const dir = path.dirname(file)
  const temp = path.join(dir, `.${path.basename(file)}.${process.pid}.${randomBytes(4).toString('hex')}.tmp`)
  const text = JSON.stringify({ version: 1, secrets: entries }, null, 2) + '\n'
  let fd: number | undefined
  try {
    fs.mkdirSync(dir, { recursive: true })
    // 'wx' with mode 0600: the file never exists with a wider mode, whatever the umask.
    fd = fs.openSync(temp, 'wx', SECRETS_FILE_MODE)
    fs.writeFileSync(fd, text)
    fs.fsyncSync(fd)
    fs.closeSync(fd)
    fd = undefined
    fs.renameSync(temp, file)
    syncFolder(dir)
  } catch (err) {
    if (fd !== undefined) fs.closeSync(fd)
    fs.rmSync(temp, { force: true })
    throw new SecretsFileError(
      'SECRETS_FILE_WRITE_FAILED',
      file,
      `cannot write the webhook secrets file ${file}: ${(err as Error).message}; check that its folder is writable and the disk has room, then run the command again`,
      { cause: err },
    )
  }
}

/** The rename is durable only once the folder holding the name is synced. */
function syncFolder(dir: string): void {
  let fd: number | undefined
  try {
    fd = fs.openSync(dir, 'r')
    fs.fsyncSync(fd)
  } catch (err) {
    // Some platforms (Windows) cannot open or sync a folder; the rename itself has happened.
    if (!['EISDIR', 'EPERM', 'EINVAL', 'EBADF'].includes((err as NodeJS.ErrnoException).code ?? '')) throw err
  } finally {
    if (fd !== undefined) fs.closeSync(fd)
  }
}

/**
 * `incoming` added to `stored`, each secret once (a migration re-run after a kill adds nothing
 * twice), oldest first; only the newest entry stays current, the others are superseded from the
 * time it was issued at the latest.
 */
export function mergeSecrets(stored: readonly SecretEntry[], incoming: readonly SecretEntry[]): SecretEntry[] {
  const known = new Set(stored.map((e) => e.secret))
  const added = incoming.filter((e) => !known.has(e.secret) && known.add(e.secret))
  if (added.length === 0) return [...stored]
  const all = [...stored, ...added].map((e, i) => ({ e, i }))
  all.sort((a, b) => (a.e.createdAt < b.e.createdAt ? -1 : a.e.createdAt > b.e.createdAt ? 1 : a.i - b.i))
  const out = all.map(({ e }) => ({ ...e }))
  const newest = out[out.length - 1]!
  for (const e of out) if (e !== newest && e.supersededAt === null) e.supersededAt = newest.createdAt
  return out
}

/** Adds `incoming` to the file (mergeSecrets), writing it durably only when something was added. */
export function mergeIntoSecretsFile(file: string, incoming: readonly SecretEntry[]): void {
  const stored = readSecretsFile(file)
  const merged = mergeSecrets(stored, incoming)
  if (merged.length !== stored.length) writeSecretsFile(file, merged)
}
