// Which owners' running runs may be abandoned: only those of a process that is gone.
import { describe, expect, test } from 'vitest'
import { ownerLiveness, type RunOwner } from '../../../src/store/repositories/owner-liveness.js'

const NOW = Date.parse('2026-06-01T12:00:00.000Z')
const ago = (s: number) => new Date(NOW - s * 1000).toISOString()
const self = { id: 1, pid: 100, host: 'box', pidNamespace: 'pid:[1]' }
const owner = (o: Partial<RunOwner>): RunOwner => ({
  id: 2,
  pid: 200,
  host: 'box',
  pidNamespace: 'pid:[1]',
  startedAt: ago(600),
  heartbeatAt: ago(5),
  ...o,
})
const rules = (alive: number[] = [100, 200]) => ({ now: NOW, staleAfterMs: 60_000, pidExists: (pid: number) => alive.includes(pid) })

describe('owner liveness', () => {
  test.each([
    ['a live process on this host with a fresh heartbeat', owner({}), rules(), false],
    ['this process itself', owner({ id: 1, pid: 100 }), rules(), false],
    ['a process on another host with a fresh heartbeat, whatever its pid', owner({ host: 'other', pid: 999 }), rules(), false],
    ['the same hostname in another pid namespace (another container), fresh', owner({ pidNamespace: 'pid:[2]', pid: 100 }), rules(), false],
    ['a pid on this host that no longer exists, even with a fresh heartbeat', owner({}), rules([100]), true],
    ['a pid that is now this process (a container restarted as pid 1)', owner({ pid: 100 }), rules(), true],
    ['a pid reused by another process: it exists but stopped beating', owner({ heartbeatAt: ago(61) }), rules(), true],
    ['another host whose heartbeat is older than the bound', owner({ host: 'other', heartbeatAt: ago(61) }), rules(), true],
    ['another host at the bound exactly', owner({ host: 'other', heartbeatAt: ago(60) }), rules(), false],
    ['a heartbeat that cannot be read', owner({ heartbeatAt: 'garbage' }), rules(), true],
    ['no owner recorded (runs from before owners were kept)', undefined, rules(), true],
  ])('%s', (_what, o, r, gone) => {
    expect(ownerLiveness(o, self, r).gone).toBe(gone)
  })

  test('a gone owner comes with a reason that names the evidence', () => {
    expect(ownerLiveness(owner({}), self, rules([100]))).toEqual({ gone: true, reason: 'process 200 no longer exists' })
    expect(ownerLiveness(owner({ host: 'other', heartbeatAt: ago(90) }), self, rules())).toEqual({
      gone: true,
      reason: 'no heartbeat for 90 s',
    })
  })
})
