// The job-shaped upstream payload the mirror benches generate: record `i`, at `version` (a later
// version changes the status, total and updatedAt, as an upstream edit would).
export function jobPayload(i: number, version = 0): Record<string, unknown> {
  const hex = i.toString(16).padStart(24, '0')
  return {
    id: hex,
    recordId: `00000000-0000-4000-8000-${hex.slice(-12)}`,
    jobNumber: `J-${i}`,
    clientId: 'c'.repeat(24),
    clientName: 'Ada Lovelace',
    jobPhone: { countryCode: '+1', number: '5550100', countryIdentifier: 'US' },
    jobAddress: {
      street: '1 Main St',
      city: 'Springfield',
      state: 'IL',
      country: 'US',
      zipCode: '62701',
      latitude: 39.8,
      longitude: -89.6,
    },
    assignedToTeams: ['a'.repeat(24), 'b'.repeat(24)],
    jobType: 'one-off',
    jobStatus: version % 2 === 0 ? 'scheduled' : 'in_progress',
    startDateTime: '2026-01-02T09:00:00.000Z',
    endDateTime: '2026-01-02T11:00:00.000Z',
    timezone: 'America/Chicago',
    scheduleLater: false,
    anyTime: false,
    priority: 'medium',
    subTotal: 100,
    discount: 0,
    tax: 8.25,
    total: 108.25 + version,
    notes: 'Gate code 1234',
    visits: [{ id: 'd'.repeat(24), visitStatus: 'scheduled' }],
    createdAt: '2026-01-01T00:00:00.000Z',
    updatedAt: new Date(Date.UTC(2026, 0, 1) + i + version * 1_000_000_000).toISOString(),
  }
}
