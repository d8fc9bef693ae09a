// Where each account of the daemon takes its deliveries: `<webhooks.path>/<id>` (by default
// `/webhooks/<id>`), and `webhooks.path` itself for the account `default`, as before accounts
// existed. The listener (src/daemon/http-server.ts) reads a request's path with these, and
// registration names the same path.

/** The path the account `id`'s deliveries are posted to. */
export function accountWebhookPath(webhooksPath: string, id: string): string {
  return `${webhooksPath.replace(/\/+$/, '')}/${id}`
}

/**
 * The account a request path is for: `defaultId` at `webhooksPath` itself, the id after
 * `<webhooksPath>/` (whatever it is: '' and ids with a slash name no account); undefined when the
 * path is not a webhook path at all.
 */
export function webhookPathAccount(path: string, webhooksPath: string, defaultId: string): string | undefined {
  if (path === webhooksPath) return defaultId
  const prefix = accountWebhookPath(webhooksPath, '')
  return path.startsWith(prefix) ? path.slice(prefix.length) : undefined
}
