// A child process that opens (creates and migrates) the mirror named on its command line, so a test
// can SIGKILL it part-way through the migrations. The migrations of an empty mirror take about 2 ms
// here, too short a target for a kill sent from another process; so the child stands in for a slow
// disk: from the first statement that touches the migration bookkeeping on, each statement waits
// 1 ms before SQLite prepares it. It prints `migrating` at that first statement and `opened` once
// the mirror is open; a pipe is written synchronously on Linux, so the parent sees them in time.
import Database from 'better-sqlite3'
import { openMirror } from '../../src/store/sqlite/mirror-database.js'

const file = process.argv[2]
if (file === undefined) throw new Error('usage: open-mirror-child.ts <mirror file>')

const pause = new Int32Array(new SharedArrayBuffer(4))
let migrating = false
const slow = (source: string) => {
  if (!migrating && source.includes('kysely_migration')) {
    migrating = true
    process.stdout.write('migrating\n')
  }
  if (migrating) Atomics.wait(pause, 0, 0, 1)
}
// Called below with the connection as `this`, as the originals expect.
// eslint-disable-next-line @typescript-eslint/unbound-method
const { prepare, exec } = Database.prototype
Database.prototype.prepare = function (this: Database.Database, source: string) {
  slow(source)
  return prepare.call(this, source)
} as typeof prepare
Database.prototype.exec = function (this: Database.Database, source: string) {
  slow(source)
  return exec.call(this, source)
}

const mirror = await openMirror(file)
process.stdout.write('opened\n')
await mirror.close()
