// Connection state of the external services (spec: Integrations): two calendars, accounting and
// the payment processor behind invoice payment links. Each calendar keeps its sync point and a
// change feed produced by its syncs.
import { badRequest } from '../core/http-error.js'
import { INTEGRATIONS, type IntegrationName } from '../data/account-config.js'

export interface CalendarChange {
  action: 'created' | 'updated' | 'deleted'
  visitId: string | null
  externalEventId: string
  changedAt: string
  changedMs: number
}

export interface Integration {
  connected: boolean
  email: string | null
  calendarId: string | null
  lastSyncAt: string | null
  /** Visits changed after this instant are pushed by the next sync. */
  syncPointMs: number
  changes: CalendarChange[]
}

export class IntegrationStore {
  private readonly items = new Map<IntegrationName, Integration>()

  constructor(startMs: number) {
    for (const name of INTEGRATIONS) {
      this.items.set(name, {
        connected: true,
        email: name.startsWith('calendar') ? `office+${name}@northwind-field.test` : null,
        calendarId: name.startsWith('calendar') ? `${name}-primary` : null,
        lastSyncAt: null,
        syncPointMs: startMs,
        changes: [],
      })
    }
  }

  get(name: IntegrationName): Integration {
    const it = this.items.get(name)
    if (it === undefined) throw new RangeError(name)
    return it
  }

  /** The integration, or the 400 INTEGRATION_NOT_CONNECTED answer (spec: Integrations). */
  connected(name: IntegrationName): Integration {
    const it = this.get(name)
    if (!it.connected) throw badRequest(`The ${name} integration is not connected`, 'INTEGRATION_NOT_CONNECTED')
    return it
  }
}

export const isIntegrationName = (v: string): v is IntegrationName => (INTEGRATIONS as readonly string[]).includes(v)
