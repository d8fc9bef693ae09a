// Which account a per-account command works on (commands.ts, ACCOUNT_COMMANDS): the one `--account`
// names, or the only one. With several and none named, or an id that is not one of them, a usage
// error (exit 2) that names the valid ids (docs/commands.md, Many accounts).
import type { AccountConfig, LoadedConfig } from '../config/index.js'
import { CommandError } from './output.js'

const USAGE = 2

/** The account `named` (the `--account` value, if any) picks from `loaded`; throws a usage error otherwise. */
export function chooseAccount(loaded: LoadedConfig, named: unknown): AccountConfig {
  const ids = loaded.accounts.map((a) => a.id)
  if (typeof named === 'string' && named !== '') {
    const found = loaded.accounts.find((a) => a.id === named)
    if (found !== undefined) return found
    throw new CommandError(`--account ${named}: no such account; ${validIds(loaded)}`, USAGE)
  }
  if (named !== undefined) throw new CommandError(`--account needs an account id; ${validIds(loaded)}`, USAGE)
  const only = loaded.accounts[0]
  if (loaded.accounts.length === 1 && only !== undefined) return only
  if (ids.length === 0) throw new CommandError(`the config file's accounts list is empty: add an account to it`, USAGE)
  throw new CommandError(
    `--account is required: the config file lists ${ids.length} accounts (${ids.join(', ')}); name one, e.g. --account ${ids[0]}`,
    USAGE,
  )
}

/** Whether a command that can cover every account should (status, doctor): several accounts and no `--account`. */
export function coversEvery(loaded: LoadedConfig, named: unknown): boolean {
  return named === undefined && loaded.accounts.length > 1
}

function validIds(loaded: LoadedConfig): string {
  if (loaded.accounts.length === 0) return "the config file's accounts list is empty"
  const ids = loaded.accounts.map((a) => a.id).join(', ')
  return loaded.listed
    ? `the accounts of the config file are: ${ids}`
    : `without an accounts list in the config file the one account is ${ids}`
}
