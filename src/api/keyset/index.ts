// The keyset walk's public surface (README.md in this folder). Its parts are imported by file only by their tests.
export { KeysetCursorSchema, type KeysetCursor } from './keyset-cursor.js'
export { stallLimit } from './next-step.js'
export { updatedAtKeyset, type KeysetOptions, type KeysetPage, type PageSource } from './updated-at-keyset.js'
