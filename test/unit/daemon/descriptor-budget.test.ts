// What a daemon's accounts need in file descriptors against `ulimit -n`, and the one line said at
// start when the soft limit is short (src/daemon/descriptor-budget.ts).
import { expect, test } from 'vitest'
import { capturedLogger } from '../../support/accounts-env.js'
import {
  checkDescriptors,
  DESCRIPTORS_BASE,
  DESCRIPTORS_PER_ACCOUNT,
  DESCRIPTORS_PER_OPEN_MIRROR,
  MIN_OPEN_MIRRORS,
  UPSTREAM_SOCKETS,
  descriptorShortfall,
  descriptorsNeeded,
  parseOpenFileLimits,
} from '../../../src/daemon/descriptor-budget.js'

const LIMITS = `Limit                     Soft Limit           Hard Limit           Units
Max cpu time              unlimited            unlimited            seconds
Max open files            1024                 524288               files
Max locked memory         8388608              8388608              bytes
`

test('one account keeps its mirror open; with more, idle mirrors are parked and hold nothing: the need does not grow with the accounts', () => {
  expect(descriptorsNeeded(0)).toBe(DESCRIPTORS_BASE)
  // At least the mirror's five files (writer and checkpoint connection) for a single account.
  expect(descriptorsNeeded(1) - DESCRIPTORS_BASE).toBe(DESCRIPTORS_PER_ACCOUNT)
  expect(DESCRIPTORS_PER_ACCOUNT).toBeGreaterThanOrEqual(5)
  // Parked accounts hold no descriptor (their upstream connections are the process's shared ones).
  expect(descriptorsNeeded(1000)).toBe(descriptorsNeeded(2))
  expect(descriptorsNeeded(1000)).toBe(DESCRIPTORS_BASE + UPSTREAM_SOCKETS + DESCRIPTORS_PER_OPEN_MIRROR * MIN_OPEN_MIRRORS)
  // Measured: 1,000 accounts in one process held 333 descriptors; the need stays near that, under 1024.
  expect(descriptorsNeeded(1000)).toBeLessThan(400)
})

test('the soft and hard limits are read from /proc/self/limits; a text without them gives nothing', () => {
  expect(parseOpenFileLimits(LIMITS)).toEqual({ soft: 1024, hard: 524288 })
  expect(parseOpenFileLimits('Max open files unlimited unlimited files')).toEqual({ soft: Infinity, hard: Infinity })
  expect(parseOpenFileLimits('Max cpu time unlimited unlimited seconds')).toBeUndefined()
})

test('a thousand accounts fit under 1024; a limit below the need is told what it needs and how to raise it', () => {
  expect(descriptorShortfall(3, { soft: 1024, hard: 524288 })).toBeUndefined()
  expect(descriptorShortfall(1000, { soft: 1024, hard: 524288 })).toBeUndefined()
  const line = descriptorShortfall(1000, { soft: 200, hard: 524288 })!
  const need = descriptorsNeeded(1000)
  expect(line).toContain(`1000 accounts need about ${need} file descriptors`)
  expect(line).toContain(`${UPSTREAM_SOCKETS} for the upstream connections the accounts share`)
  expect(line).toContain('the soft limit (ulimit -n) is 200')
  expect(line).toContain(`ulimit -n ${need}`)
  expect(line).toContain(`LimitNOFILE=${need}`)
  // Past the hard limit too: both must be raised, and `ulimit -n` alone cannot.
  const hard = descriptorShortfall(1000, { soft: 200, hard: 220 })!
  expect(hard).toContain('the hard limit (220) is below that too')
  expect(hard).not.toContain('ulimit -n 2')
})

test('checkDescriptors logs the shortfall as one warning line; enough descriptors, or no /proc, log nothing', () => {
  const { lines, logger } = capturedLogger()
  checkDescriptors(1000, logger, () => LIMITS.replace('1024 ', '200  '))
  checkDescriptors(1000, logger, () => LIMITS)
  checkDescriptors(1000, logger, () => {
    throw new Error('ENOENT: /proc/self/limits')
  })
  expect(lines).toHaveLength(1)
  expect(lines[0]).toMatchObject({ level: 'warn', accounts: 1000, need: descriptorsNeeded(1000), soft: 200, hard: 524288 })
})
