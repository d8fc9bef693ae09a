// The configuration tests' setup: a config file to load, and the issues a refused one reports.
import { mkdtempSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { expect } from 'vitest'
import { ConfigError } from '../../src/config/index.js'

/** The issues of the ConfigError `fn` throws; fails the test when it throws something else or nothing. */
export function issuesOf(fn: () => unknown): { key: string; message: string }[] {
  try {
    fn()
  } catch (err) {
    expect(err).toBeInstanceOf(ConfigError)
    return [...(err as ConfigError).issues]
  }
  throw new Error('expected a ConfigError')
}

/** A config.json in a fresh temporary folder: `content` as JSON, or a string as the file's text. */
export function configFile(content: unknown): string {
  const file = path.join(mkdtempSync(path.join(tmpdir(), 'fsm-config-')), 'config.json')
  writeFileSync(file, typeof content === 'string' ? content : JSON.stringify(content))
  return file
}
