// `sharding`: several replicas of `fsm-sync run` sharing the accounts through the destination's
// Postgres server (docs/sharding.md). Off by default; on, it needs destination.postgres.url.
import { z } from 'zod'
import { doc, int } from './schema-parts.js'

/** "on"/"off" (or true/false) in a variable or the file. */
const OnOff = z.preprocess(
  (v) => (typeof v === 'string' && /^(on|true)$/i.test(v) ? true : typeof v === 'string' && /^(off|false)$/i.test(v) ? false : v),
  z.boolean({ error: 'must be on or off' }),
)

export const ShardingSchema = z
  .strictObject({
    enabled: OnOff.default(false).meta(
      doc(
        '`on`: this `fsm-sync run` is one replica of several; each account of the list runs on exactly one live replica at a time, coordinated through the Postgres server of `destination.postgres.url`, which it then requires (docs/sharding.md).',
        { env: 'FSM_SHARDING', shownDefault: '`"off"`', allowed: '`on`, `off`' },
      ),
    ),
    replicaName: z
      .string()
      .regex(/^[A-Za-z0-9][A-Za-z0-9._-]{0,62}$/, { message: 'must be 1 to 63 letters, digits, ".", "_" or "-", e.g. fsm-sync-0' })
      .optional()
      .meta(
        doc(
          "This replica's stable name; unset, the host name (a StatefulSet pod keeps its name): a restarted replica gets its own accounts (and the mirrors on its disk) back. Give each replica its own name and its own `dataDir`.",
          { env: 'FSM_REPLICA_NAME' },
        ),
      ),
    leaseSeconds: int(2, 600)
      .default(15)
      .meta(
        doc(
          "How long an account's lease lasts without a renewal (renewed every third of it): a replica that dies has its accounts owned again within about this plus one heartbeat.",
          { unit: 's', env: 'FSM_SHARDING_LEASE_SECONDS' },
        ),
      ),
    secretsKey: z
      .string()
      .optional()
      .meta(
        doc(
          'A secret: the key the shared webhook signing secrets are encrypted with in Postgres (docs/sharding.md, Webhooks); give every replica the same value, 16 characters or more (32 random ones advised). Unset, they are stored in the clear, readable only by the roles granted the coordination schema. Never logged.',
          { env: 'FSM_SECRETS_KEY' },
        ),
      ),
  })
  .prefault({})
