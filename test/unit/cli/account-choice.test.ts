// Which account `--account` picks (src/cli/account-choice.ts): the named one, or the only one; every
// refusal is a usage error (exit 2) naming the valid ids.
import { describe, expect, test } from 'vitest'
import type { Config, LoadedConfig } from '../../../src/config/index.js'
import { chooseAccount, coversEvery } from '../../../src/cli/account-choice.js'
import { CommandError } from '../../../src/cli/output.js'

const loaded = (ids: string[], listed = true): LoadedConfig => ({
  config: {} as Config,
  accounts: ids.map((id) => ({ id, config: { db: `/data/${id}/mirror.db` } as Config })),
  listed,
})

function refusal(fn: () => unknown): { message: string; exitCode: number } {
  try {
    fn()
  } catch (err) {
    expect(err).toBeInstanceOf(CommandError)
    return { message: (err as CommandError).message, exitCode: (err as CommandError).exitCode }
  }
  throw new Error('expected a CommandError')
}

describe('chooseAccount', () => {
  test('the named account, or the only one without a name', () => {
    expect(chooseAccount(loaded(['north', 'south']), 'south').id).toBe('south')
    expect(chooseAccount(loaded(['north']), undefined).id).toBe('north')
    expect(chooseAccount(loaded(['default'], false), undefined).id).toBe('default')
    expect(chooseAccount(loaded(['default'], false), 'default').id).toBe('default')
  })

  test('several and no name, an unknown id, an empty id and an empty list are usage errors naming what is valid', () => {
    expect(refusal(() => chooseAccount(loaded(['north', 'south']), undefined))).toEqual({
      message: '--account is required: the config file lists 2 accounts (north, south); name one, e.g. --account north',
      exitCode: 2,
    })
    expect(refusal(() => chooseAccount(loaded(['north', 'south']), 'west'))).toEqual({
      message: '--account west: no such account; the accounts of the config file are: north, south',
      exitCode: 2,
    })
    expect(refusal(() => chooseAccount(loaded(['north']), '')).message).toBe(
      '--account needs an account id; the accounts of the config file are: north',
    )
    expect(refusal(() => chooseAccount(loaded(['default'], false), 'north')).message).toBe(
      '--account north: no such account; without an accounts list in the config file the one account is default',
    )
    expect(refusal(() => chooseAccount(loaded([]), undefined)).message).toBe(
      "the config file's accounts list is empty: add an account to it",
    )
  })

  test('status and doctor cover every account only when there are several and none is named', () => {
    expect(coversEvery(loaded(['north', 'south']), undefined)).toBe(true)
    expect(coversEvery(loaded(['north', 'south']), 'north')).toBe(false)
    expect(coversEvery(loaded(['north']), undefined)).toBe(false)
    expect(coversEvery(loaded([]), undefined)).toBe(false)
  })
})
