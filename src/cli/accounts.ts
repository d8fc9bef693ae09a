// `fsm-sync accounts [--json]`: every account of the configuration with its state, read from each
// mirror read-only (it may run beside the daemon): last sweep, staleness, last error, budget use,
// webhook intake, destination lag. Exit 1 when an account is failing or unreadable, or when none was
// ever synced (docs/commands.md).
import type { Args, Command, CommandContext } from './command.js'
import { packageInfo } from '../config/package-info.js'
import type { AccountConfig } from '../config/index.js'
import { systemClock } from '../model/clock.js'
import { jsonOption, printResult } from './output.js'
import { accountSummary, anyFailing, renderSummaries, type AccountSummary } from './account-summary.js'

export const accountsCommand: Command = {
  builder: (y) => jsonOption(y),
  run: async (args, ctx) => {
    const { accounts, listed } = ctx.accounts()
    const now = systemClock.now()
    const summaries = await summariesOf(accounts, now)
    printResult(args, ctx.io, { listed, accounts: summaries }, () =>
      summaries.length === 0
        ? 'the config file lists no accounts\n'
        : renderSummaries(
            summaries,
            ['account', 'state', 'last sweep', 'staleness', 'requests', 'webhooks', 'destination lag', 'last error'],
            now,
          ),
    )
    return anyFailing(summaries) ? 1 : 0
  },
}

/** `fsm-sync status` over several accounts: one line each; the full report is `status --account ID`'s. */
export async function statusOfEvery(args: Args, ctx: CommandContext): Promise<number> {
  const now = systemClock.now()
  const summaries = await summariesOf(ctx.accounts().accounts, now)
  printResult(
    args,
    ctx.io,
    { version: packageInfo().version, accounts: summaries },
    () =>
      renderSummaries(summaries, ['account', 'state', 'last sweep', 'staleness', 'destination lag'], now) +
      '\n`fsm-sync status --account ID` shows the full report of one account; `fsm-sync accounts` adds errors, budget and webhooks.\n',
  )
  return anyFailing(summaries) ? 1 : 0
}

async function summariesOf(accounts: readonly AccountConfig[], now: number): Promise<AccountSummary[]> {
  const summaries: AccountSummary[] = []
  // One mirror open at a time: a thousand accounts never hold a thousand files.
  for (const account of accounts) summaries.push(await accountSummary(account, now))
  return summaries
}
