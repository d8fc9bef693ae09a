// Counts the transactions committed to a SQLite file in WAL mode since its WAL last restarted, from
// the WAL itself: a frame whose header holds the database size after it is a commit's last frame.
// Read before and after some work, the difference is how many commits that work made (as long as no
// checkpoint restarted the WAL in between: a test keeps its work small).
import fs from 'node:fs'

const HEADER = 32
const FRAME_HEADER = 24

export function walCommits(db: string): number {
  let wal: Buffer
  try {
    wal = fs.readFileSync(`${db}-wal`)
  } catch {
    return 0
  }
  if (wal.length < HEADER) return 0
  const pageSize = wal.readUInt32BE(8)
  const salt1 = wal.readUInt32BE(16)
  const salt2 = wal.readUInt32BE(20)
  let commits = 0
  // Frames left from before the WAL restarted carry older salts: the valid log ends at the first one.
  for (let at = HEADER; at + FRAME_HEADER + pageSize <= wal.length; at += FRAME_HEADER + pageSize) {
    if (wal.readUInt32BE(at + 8) !== salt1 || wal.readUInt32BE(at + 12) !== salt2) break
    if (wal.readUInt32BE(at + 4) !== 0) commits++
  }
  return commits
}
