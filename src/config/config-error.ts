/** One problem with one setting, named the way the user wrote it (flag, variable or file key). */
export interface ConfigIssue {
  key: string
  message: string
}

export class ConfigError extends Error {
  readonly code = 'CONFIG_INVALID' as const
  constructor(
    readonly issues: readonly ConfigIssue[],
    options?: ErrorOptions,
  ) {
    super(issues.map((i) => `${i.key}: ${i.message}`).join('\n'), options)
    this.name = 'ConfigError'
  }
}
