// The mirror could not be opened, migrated or read. The message names the file, what is wrong with
// it and what to do; `code` tells callers (doctor, the CLI) which of those it was.
export type MirrorErrorCode = 'MIRROR_OPEN_FAILED' | 'MIGRATION_FAILED' | 'MIRROR_CORRUPT' | 'MIRROR_UNREADABLE'

export class MirrorError extends Error {
  readonly code: MirrorErrorCode
  constructor(code: MirrorErrorCode, message: string, options?: ErrorOptions) {
    super(message, options)
    this.name = 'MirrorError'
    this.code = code
  }
}
