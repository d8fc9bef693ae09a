// Which live replica owns which account: rendezvous (highest-random-weight) hashing. Every replica
// computes the same answer from the same inputs, with no coordination beyond agreeing on who is
// live; a replica joining takes about 1/N of the accounts from the others, and one leaving gives
// away only its own. Pure: the weight is a SHA-256 of the pair, never a random number.
import { createHash } from 'node:crypto'

/** The weight of `replica` for `account`: the first 48 bits of SHA-256, exact as a double. */
export function weight(account: string, replica: string): number {
  // The separator cannot occur in an account id or a host name, so no two pairs hash the same text.
  return createHash('sha256').update(`${replica}\n${account}`).digest().readUIntBE(0, 6)
}

/** The replica of `replicas` with the highest weight for `account`; ties (2^-48) go to the lower name. */
export function ownerOf(account: string, replicas: readonly string[]): string | undefined {
  let best: string | undefined
  let bestWeight = -1
  for (const r of replicas) {
    const w = weight(account, r)
    if (w > bestWeight || (w === bestWeight && best !== undefined && r < best)) {
      best = r
      bestWeight = w
    }
  }
  return best
}

/** Each account's owner among `liveReplicas`; empty when no replica is live. Duplicates count once. */
export function assign(accountIds: Iterable<string>, liveReplicas: Iterable<string>): Map<string, string> {
  const replicas = [...new Set(liveReplicas)]
  const out = new Map<string, string>()
  if (replicas.length === 0) return out
  for (const a of accountIds) out.set(a, ownerOf(a, replicas)!)
  return out
}
