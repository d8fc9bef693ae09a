// Named counters for GET /__emulator/counters: requests by status and family, writes by
// resource, events emitted, deliveries.

export class Counters {
  private readonly values = new Map<string, number>()

  bump(name: string, by = 1): void {
    this.values.set(name, (this.values.get(name) ?? 0) + by)
  }

  snapshot(extra: Record<string, number> = {}): Record<string, number> {
    const out: Record<string, number> = {}
    for (const [k, v] of [...this.values.entries()].sort(([a], [b]) => a.localeCompare(b))) out[k] = v
    return { ...out, ...extra }
  }

  clear(): void {
    this.values.clear()
  }
}
