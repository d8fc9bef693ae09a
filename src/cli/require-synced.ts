// The cron trap: `reconcile`, `trigger`, `query` and `status` on a mirror nothing was ever synced
// into. A container started on the wrong volume (Compose prefixes volume names with the project
// name) would otherwise create an empty mirror, reconcile nothing and exit 0 night after night.
// "Never synced" is defined in src/store/read-models/mirror-use.ts: no mirror file, or a file in which no
// sweep or reference read ever succeeded and no webhook delivery was applied. Those commands then exit
// 1 with this message.
import { existsSync } from 'node:fs'
import path from 'node:path'
import { explainMirrorError, openMirror, type Sqlite } from '../store/sqlite/mirror-database.js'
import { mirrorUse, type MirrorUse } from '../store/read-models/mirror-use.js'
import { CommandError } from './output.js'

/**
 * Where else the mirror may be, for what `db` is: a relative path (the default is one) depends on the
 * folder the command runs in; an absolute one that misses is another path, or in a container (the
 * image's is absolute) another volume.
 */
function whereElse(db: string): string {
  if (!path.isAbsolute(db))
    return `The mirror path ${db} is relative to the folder the command runs in (${process.cwd()}): run it from the folder the mirror was made in, or set FSM_DB (or --db) to an absolute path.`
  return `If the mirror is elsewhere, point FSM_DB (or --db, or "db" in the config file) at it; in a container, check the volume mounted at ${path.dirname(db)} (Compose names it <project>_<volume>: see \`docker volume ls\`).`
}

export function noMirrorError(db: string): CommandError {
  return new CommandError(
    `no mirror at ${path.resolve(db)}: nothing was ever synced there. ${whereElse(db)} To start a mirror there, run \`fsm-sync sync\`.`,
  )
}

export function neverSyncedError(db: string, history: MirrorUse): CommandError {
  const running =
    history.running > 0 ? ` ${history.running} run(s) are in progress: the first sync has not finished yet, try again when it has.` : ''
  return new CommandError(
    `the mirror ${path.resolve(db)} was never synced: no sweep or reference read has succeeded in it and no webhook delivery was applied.${running} ${whereElse(db)} ` +
      'Otherwise run `fsm-sync sync` first (`fsm-sync status` shows why earlier runs failed).',
  )
}

/** Reads the sync history of an open mirror; a corrupt file is reported as such (one line). */
export function readMirrorUse(db: string, sqlite: Sqlite): MirrorUse {
  try {
    return mirrorUse(sqlite)
  } catch (err) {
    throw explainMirrorError(db, err)
  }
}

/** Throws unless `db` is a mirror something was synced into; opens it read-only, creates nothing. */
export async function requireSynced(db: string): Promise<void> {
  if (!existsSync(db)) throw noMirrorError(db)
  const mirror = await openMirror(db, { readonly: true })
  try {
    const history = readMirrorUse(db, mirror.sqlite)
    if (!history.synced) throw neverSyncedError(db, history)
  } finally {
    await mirror.close()
  }
}
