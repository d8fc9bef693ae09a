// The local monotonic clock that bounds how long this replica may act on a lease: unlike the wall
// clock it never steps (NTP, an operator), and only its rate matters (docs/sharding.md, Clocks).

/** Milliseconds from an arbitrary origin, never decreasing. */
export type Monotonic = () => number

export const monotonicClock: Monotonic = () => performance.now()
