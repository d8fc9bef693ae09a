// A hard cap on the mirrors a process keeps open (writer and checkpoint-thread connection), sized
// from its file descriptors and a memory budget (descriptor-budget.ts). An account's work holds its
// mirror's slot (a sweep waiting for its pace steps aside); with every slot taken, the least recently
// used idle mirror is parked at once, or the work waits its turn (first come, first served). Rules:
// docs/accounts.md, "Memory and file descriptors".
import type { Clock } from '../model/clock.js'

/** An account's mirror as the slots see it (account-runtime.ts). */
export interface SlotMirror {
  /** Its writer or its checkpoint connection is open (it takes a slot). */
  readonly open: boolean
  /** Work is under way on it (a run, a transaction, a delivery): never parked. */
  readonly busy: boolean
  /** Parks it now; false when it cannot be (busy). */
  park(now: true): Promise<boolean>
}

/** An account runtime's mirror as the slots see it (its activity is read only when looked at). */
export function slotMirror(runtime: { activity(): { open: boolean; busy: boolean }; park(now: true): Promise<boolean> }): SlotMirror {
  return {
    get open() {
      return runtime.activity().open
    },
    get busy() {
      return runtime.activity().busy
    },
    park: (now) => runtime.park(now),
  }
}

/** What one account's runtime gets: the hold of its slot around each piece of work. */
export interface MirrorSlot {
  hold: <T>(work: () => Promise<T>) => Promise<T>
  /** Inside a hold: gives the slot back while `wait` runs (it must not touch the mirror), takes it again before returning. */
  aside: <T>(wait: () => Promise<T>) => Promise<T>
  /** The mirror was opened by a use outside any hold (a delivery, a probe): room is made for it. */
  opened: () => void
  /** The mirror was parked (by the slots or the idle parking): its slot is free. */
  closed: () => void
}

/** An account's works in its slot, counted: those at work on the mirror (not aside) keep it from being parked. */
export class SlotWork {
  atWork = 0
  constructor(private readonly slot: MirrorSlot | undefined) {}

  readonly hold = <T>(work: () => Promise<T>): Promise<T> => {
    const counted = async () => {
      this.atWork++
      try {
        return await work()
      } finally {
        this.atWork--
      }
    }
    return this.slot === undefined ? counted() : this.slot.hold(counted)
  }

  readonly aside = async <T>(wait: () => Promise<T>): Promise<T> => {
    this.atWork--
    try {
      return await (this.slot === undefined ? wait() : this.slot.aside(wait))
    } finally {
      this.atWork++
    }
  }
}

interface Member {
  mirror: SlotMirror | undefined
  /** Holds under way (an account's works nest: a job and the sweep it queues share the slot). */
  held: number
  parking: boolean
  /** Its mirror is open, as last told (opened, closed) or read (at the end of its holds). */
  open: boolean
  /** It counts in #taken. */
  taking: boolean
}

interface Waiting {
  member: Member
  grant: () => void
}

/** A pause between two tries while works wait and no slot could be freed (a mirror busy outside any hold). */
const RETRY_MS = 200

/**
 * The slots keep their counts as members change (held, parking, open), so that a grant, a release
 * or a look for a mirror to park costs next to nothing with a thousand members: these run at every
 * request of every sweep, and passes over every member took most of the event loop at 1,000 accounts.
 */
export class MirrorSlots {
  readonly #members = new Map<string, Member>()
  readonly #waiting: Waiting[] = []
  /** Open, idle (no hold) and not parking, least recently used first: the candidates to park. */
  readonly #idle = new Map<Member, true>()
  #taken = 0
  #parking = 0
  #retry: (() => void) | undefined
  #unbounded = false
  /** The most slots ever taken at once. */
  highWater = 0
  /** Mirrors parked to make room. */
  evicted = 0

  constructor(
    private readonly capacity: () => number,
    private readonly clock: Clock,
  ) {}

  /** The account's slot (a member from now on; its mirror is known once it opened: add()). */
  slot(id: string): MirrorSlot {
    return {
      hold: (work) => this.hold(id, work),
      aside: (wait) => this.aside(id, wait),
      opened: () => this.#opened(id),
      closed: () => this.#closed(id),
    }
  }

  /** Its mirror, once open: a candidate to park when room is needed. */
  add(id: string, mirror: SlotMirror): void {
    const m = this.#member(id)
    m.mirror = mirror
    m.open = mirror.open
    this.#update(m)
    this.#pump()
  }

  /** The account is gone (stopped, failed): its slot is free. */
  remove(id: string): void {
    const m = this.#members.get(id)
    if (m === undefined) return
    m.mirror = undefined
    m.open = false
    this.#update(m)
    if (m.held === 0 && !this.#waiting.some((w) => w.member === m)) this.#members.delete(id)
    this.#pump()
  }

  /**
   * No cap from now on (the process stops): the accounts stopping keep their mirrors to the end,
   * so a work waiting for one of their slots would wait for ever.
   */
  unbound(): void {
    this.#unbounded = true
    this.#pump()
  }

  #capacity(): number {
    return this.#unbounded ? Number.POSITIVE_INFINITY : this.capacity()
  }

  /** Slots taken now: mirrors open or parking, and holds whose mirror is not open yet. */
  get taken(): number {
    return this.#taken
  }

  /** Accounts whose mirror is open or closed other than the slots were told (tests): none, if every open and park is told. */
  drift(): string[] {
    const out: string[] = []
    for (const [id, m] of this.#members) if (m.mirror !== undefined && m.open !== m.mirror.open) out.push(id)
    return out
  }

  /** Works waiting for a slot. */
  get waiting(): number {
    return this.#waiting.length
  }

  /**
   * Runs `work` with the account's mirror in a slot: at once if its mirror has one (an account's
   * works share it, so a hold inside a hold never waits), else when its turn comes.
   */
  async hold<T>(id: string, work: () => Promise<T>): Promise<T> {
    const m = this.#member(id)
    // A free slot is taken at once: the work starts in this turn.
    if (!this.#takeNow(m)) await this.#inLine(m)
    try {
      return await work()
    } finally {
      this.#give(m)
    }
  }

  /**
   * Inside a hold of the account: its slot is given back while `wait` runs (a sweep waiting for its
   * request pace), so its mirror, idle meanwhile, can be parked for another account's work; taken
   * again, in line with the others, before this returns. Outside any hold, only runs `wait`.
   */
  async aside<T>(id: string, wait: () => Promise<T>): Promise<T> {
    const m = this.#members.get(id)
    if (m === undefined || m.held === 0) return wait()
    this.#give(m)
    try {
      return await wait()
    } finally {
      // A member removed meanwhile (its account stopping) takes no place in line.
      if (this.#members.get(id) !== m) m.held++
      else if (!this.#takeNow(m)) await this.#inLine(m)
    }
  }

  /** A slot for `m` at once, if its mirror has one or one is free with nobody in line; false otherwise. */
  #takeNow(m: Member): boolean {
    if (!m.taking && (this.#waiting.length > 0 || this.#taken >= this.#capacity())) return false
    m.held++
    this.#update(m)
    return true
  }

  /** A slot for `m` in its turn. */
  #inLine(m: Member): Promise<void> {
    return new Promise<void>((grant) => {
      this.#waiting.push({
        member: m,
        grant: () => {
          m.held++
          this.#update(m)
          grant()
        },
      })
      this.#pump()
    })
  }

  #give(m: Member): void {
    m.held--
    // The mirror's own word at the end of its last hold: a close or open not told is caught here.
    if (m.held === 0) m.open = m.mirror?.open === true
    // Just used: the most recently used of the idle ones.
    this.#idle.delete(m)
    this.#update(m)
    this.#pump()
  }

  #opened(id: string): void {
    const m = this.#member(id)
    m.open = true
    this.#idle.delete(m)
    this.#update(m)
    // Opened beside the cap: the least recently used idle mirrors make room.
    const over = this.#taken - this.#parking - this.#capacity()
    if (over > 0) this.#evict(over, m)
  }

  #closed(id: string): void {
    const m = this.#members.get(id)
    // Its own word: a use may have opened it again while it parked.
    if (m === undefined || !m.open || m.mirror?.open === true) return
    m.open = false
    this.#update(m)
    this.#pump()
  }

  /** Keeps the counts and the idle candidates in step with the member's fields. */
  #update(m: Member): void {
    const taking = m.held > 0 || m.parking || m.open
    if (taking !== m.taking) {
      this.#taken += taking ? 1 : -1
      m.taking = taking
      this.highWater = Math.max(this.highWater, this.#taken)
    }
    if (m.open && m.held === 0 && !m.parking && m.mirror !== undefined) {
      if (!this.#idle.has(m)) this.#idle.set(m, true)
    } else this.#idle.delete(m)
  }

  #member(id: string): Member {
    let m = this.#members.get(id)
    if (m === undefined) {
      m = { mirror: undefined, held: 0, parking: false, open: false, taking: false }
      this.#members.set(id, m)
    }
    return m
  }

  /** Grants the waiting works in order while slots are free; parks idle mirrors for those left. */
  #pump(): void {
    if (this.#waiting.length === 0) return
    const capacity = this.#capacity()
    const left: Waiting[] = []
    for (const w of this.#waiting.splice(0)) {
      // A work whose mirror took a slot meanwhile (opened by a delivery, or granted just before)
      // goes at once: it needs no new slot, and its mirror stays busy (never parked) while it waits.
      if (w.member.taking || this.#taken < capacity) w.grant()
      else left.push(w)
    }
    this.#waiting.push(...left)
    if (left.length === 0) return
    // One mirror parked for each account in line that needs a slot, beyond those parking now.
    const short = new Set(left.map((w) => w.member)).size - this.#parking
    // None idle now (each busy with a delivery or a probe outside any hold): tried again shortly.
    if (short > 0 && this.#evict(short, undefined) === 0 && this.#parking === 0) this.#later()
  }

  #later(): void {
    if (this.#retry !== undefined) return
    this.#retry = this.clock.setTimer(
      RETRY_MS,
      () => {
        this.#retry = undefined
        this.#pump()
      },
      { background: true },
    )
  }

  /** Parks the `n` least recently used idle mirrors (not `except`); how many it started to park. */
  #evict(n: number, except: Member | undefined): number {
    const victims: Member[] = []
    for (const m of this.#idle.keys()) {
      if (victims.length >= n) break
      if (m === except) continue
      // Closed without a word (its account's own parking): no slot to free.
      if (m.mirror?.open !== true) {
        m.open = false
        this.#update(m)
        continue
      }
      if (!m.mirror.busy) victims.push(m)
    }
    for (const m of victims) this.#park(m)
    return victims.length
  }

  #park(m: Member): void {
    m.parking = true
    this.#parking++
    this.#update(m)
    void m
      .mirror!.park(true)
      .catch(() => false)
      .then((parked) => {
        m.parking = false
        this.#parking--
        if (parked) this.evicted++
        m.open = m.mirror?.open === true
        // Not parked (busy meanwhile): it counts as just used; another is tried a little later.
        this.#idle.delete(m)
        this.#update(m)
        if (parked) return this.#pump()
        this.#later()
      })
  }
}
