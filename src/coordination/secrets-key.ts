// Encryption at rest of the shared webhook secrets (docs/sharding.md, Webhooks): AES-256-GCM with a
// random 96-bit nonce per value, the account id as associated data (a row copied to another account
// does not open), and a key derived from FSM_SECRETS_KEY by scrypt once per process. A wrong key
// fails the tag check: the error names the variable and the account, never a value.
import { createCipheriv, createDecipheriv, randomBytes, scryptSync } from 'node:crypto'

export const SECRETS_KEY_VARIABLE = 'FSM_SECRETS_KEY'

const VERSION = 1
const NONCE_BYTES = 12
const TAG_BYTES = 16
// A fixed salt: every replica must derive the same key from the same variable, with nothing shared first.
const SALT = 'fsm-sync shared webhook secrets v1'

export class SecretsKeyError extends Error {
  readonly code: 'SECRETS_KEY_WRONG' | 'SECRETS_KEY_MISSING' | 'SECRETS_KEY_INVALID'
  constructor(code: SecretsKeyError['code'], message: string) {
    super(message)
    this.name = 'SecretsKeyError'
    this.code = code
  }
}

export class SecretsKey {
  readonly #key: Buffer

  private constructor(key: Buffer) {
    this.#key = key
  }

  /** The key of FSM_SECRETS_KEY's value; undefined when it is unset or empty (values stored in the clear). */
  static fromVariable(value: string | undefined): SecretsKey | undefined {
    if (value === undefined || value === '') return undefined
    if (value.length < 16)
      throw new SecretsKeyError(
        'SECRETS_KEY_INVALID',
        `${SECRETS_KEY_VARIABLE} is shorter than 16 characters: use a random value of 32 or more`,
      )
    // N = 2^15: about 0.1 s once per process, and as much for each guess of a weak value.
    return new SecretsKey(scryptSync(value, SALT, 32, { N: 1 << 15, r: 8, p: 1, maxmem: 64 * 1024 * 1024 }))
  }

  /** version byte, nonce, ciphertext, tag. */
  seal(accountId: string, plain: Buffer): Buffer {
    const nonce = randomBytes(NONCE_BYTES)
    const cipher = createCipheriv('aes-256-gcm', this.#key, nonce)
    cipher.setAAD(Buffer.from(accountId, 'utf8'))
    const body = Buffer.concat([cipher.update(plain), cipher.final()])
    return Buffer.concat([Buffer.from([VERSION]), nonce, body, cipher.getAuthTag()])
  }

  open(accountId: string, sealed: Buffer): Buffer {
    const wrong = () =>
      new SecretsKeyError(
        'SECRETS_KEY_WRONG',
        `${SECRETS_KEY_VARIABLE} does not open the shared webhook secrets of account ${accountId}: every replica must be given the same ${SECRETS_KEY_VARIABLE}`,
      )
    if (sealed.length < 1 + NONCE_BYTES + TAG_BYTES || sealed[0] !== VERSION) throw wrong()
    const nonce = sealed.subarray(1, 1 + NONCE_BYTES)
    const tag = sealed.subarray(sealed.length - TAG_BYTES)
    const decipher = createDecipheriv('aes-256-gcm', this.#key, nonce)
    decipher.setAAD(Buffer.from(accountId, 'utf8'))
    decipher.setAuthTag(tag)
    try {
      return Buffer.concat([decipher.update(sealed.subarray(1 + NONCE_BYTES, sealed.length - TAG_BYTES)), decipher.final()])
    } catch {
      throw wrong()
    }
  }
}
