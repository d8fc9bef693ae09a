// The sealing of the shared webhook secrets: AES-256-GCM under a key derived from FSM_SECRETS_KEY,
// a fresh nonce per value, the account id bound to it; a wrong key or a changed byte is refused
// with an error that names the variable and never a value.
import { describe, expect, test } from 'vitest'
import { SecretsKey } from '../../../src/coordination/secrets-key.js'

const VALUE = 'a-random-key-for-the-replicas-0123456789'
const plain = Buffer.from('[{"secret":"whsec_abc"}]')

describe('SecretsKey', () => {
  test('no variable, no key; a short one is refused by name', () => {
    expect(SecretsKey.fromVariable(undefined)).toBeUndefined()
    expect(SecretsKey.fromVariable('')).toBeUndefined()
    expect(() => SecretsKey.fromVariable('short')).toThrow(/FSM_SECRETS_KEY is shorter than 16/)
  })

  test('seals with a fresh nonce each time and opens with the same key and account only', () => {
    const key = SecretsKey.fromVariable(VALUE)!
    const a = key.seal('acct-a', plain)
    const b = key.seal('acct-a', plain)
    expect(a.equals(b)).toBe(false)
    expect(a.includes(Buffer.from('whsec_abc'))).toBe(false)
    expect(key.open('acct-a', a)).toEqual(plain)
    expect(SecretsKey.fromVariable(VALUE)!.open('acct-a', b)).toEqual(plain)
    expect(() => key.open('acct-b', a)).toThrow(/FSM_SECRETS_KEY does not open the shared webhook secrets of account acct-b/)
    const other = SecretsKey.fromVariable(`${VALUE}!`)!
    expect(() => other.open('acct-a', a)).toThrow(expect.objectContaining({ code: 'SECRETS_KEY_WRONG' }))
    const flipped = Buffer.from(a)
    flipped[20] = flipped[20]! ^ 1
    expect(() => key.open('acct-a', flipped)).toThrow(expect.objectContaining({ code: 'SECRETS_KEY_WRONG' }))
    try {
      other.open('acct-a', a)
    } catch (err) {
      expect((err as Error).message).not.toContain('whsec_abc')
      expect((err as Error).message).not.toContain(VALUE)
    }
  })
})
