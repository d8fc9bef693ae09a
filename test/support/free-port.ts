// A loopback port that was free a moment ago: for a process that must keep one port across restarts
// (the daemon's webhook URL stays registered upstream). Used by the daemon tests and the soak.
import { createServer } from 'node:net'

export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer()
    s.once('error', reject)
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address() as { port: number }
      s.close(() => resolve(port))
    })
  })
}
