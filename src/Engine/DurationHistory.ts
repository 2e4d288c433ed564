/**
 * A monitor's recent successful durations, at most `memory` of them, oldest first **by start**
 * (the runs' `started_at`, then the duration: runs of the same start and duration are
 * interchangeable here, whatever their ids), with their sorted copy kept up to date as runs
 * finish. Each duration keeps its run's start, so a run that finishes after a later started one
 * (overlapping runs, or a success ping whose inferred start lies before an earlier run's) takes its
 * place by start, as the database orders them, without asking the database.
 *
 * The value is persistent: `insert` returns a new history and the old one keeps answering with
 * the durations it had. The newest version owns the buffers and changes them in place
 * (a finished run costs one small object, no new arrays: the old arrays used to live until the
 * monitor's next run, long enough to be promoted to the old generation, and made most of what the
 * garbage collector had to move per ping). An older version remembers the one change that came
 * after it (where the duration went, the one dropped) and, if it is ever read again (tests do, the
 * engine does not), rebuilds its own buffers from its successor's once.
 */
import { durationLog, durationLogs, percentileOfSorted } from "./Anomaly.js"

interface Store {
  /**
   * By start: values[(start + i) % capacity] is the i-th oldest. The buffers grow (doubling)
   * up to the memory; only a full store at the memory wraps around (start moves).
   */
  readonly values: Float64Array
  /**
   * The start (epoch ms) of each value's run, same slots. (start, value) is nondecreasing in the
   * ring's order, except among unknown starts (−∞: durations given without starts, kept as given).
   */
  readonly starts: Float64Array
  start: number
  /** The durations sorted ascending. */
  readonly sorted: Float64Array
  /**
   * `durationLog` of each sorted duration, same order: the duration model reads half of them for
   * every finished run, and a logarithm costs more than keeping it.
   */
  readonly logs: Float64Array
}

/** Histories that never had a duration share this one (it is never changed: inserting grows first). */
const EMPTY: Store = {
  values: new Float64Array(0),
  starts: new Float64Array(0),
  start: 0,
  sorted: new Float64Array(0),
  logs: new Float64Array(0)
}

/** Index of the first of the first `end` elements of `sorted` that is ≥ value. */
const lowerBound = (sorted: Float64Array, value: number, end: number): number => {
  let lo = 0
  let hi = end
  while (lo < hi) {
    const mid = (lo + hi) >>> 1
    if (sorted[mid]! < value) lo = mid + 1
    else hi = mid
  }
  return lo
}

interface Entries {
  readonly values: Array<number>
  readonly starts: Array<number>
}

const storeOf = (entries: Entries, memory: number): Store => {
  const n = entries.values.length
  const from = n > memory ? n - memory : 0
  if (n - from === 0) return EMPTY
  const values = Float64Array.from(entries.values.slice(from))
  const sorted = Float64Array.from(values).sort()
  return { values, starts: Float64Array.from(entries.starts.slice(from)), start: 0, sorted, logs: durationLogs(sorted) }
}

/** A larger copy of a store that has not wrapped yet (start = 0, every slot in use). */
const grow = (store: Store, memory: number): Store => {
  const n = store.values.length
  const capacity = Math.min(memory, Math.max(8, n * 2))
  const copy = (a: Float64Array) => {
    const b = new Float64Array(capacity)
    b.set(a)
    return b
  }
  return { values: copy(store.values), starts: copy(store.starts), start: 0, sorted: copy(store.sorted), logs: copy(store.logs) }
}

/** Removes one occurrence of `value` from the first `n` sorted elements (and its logarithm). */
const removeSorted = (store: Store, value: number, n: number): void => {
  const at = lowerBound(store.sorted, value, n)
  store.sorted.copyWithin(at, at + 1, n)
  store.logs.copyWithin(at, at + 1, n)
}

/** Inserts `value` into the first `n` sorted elements (n < capacity), and its logarithm. */
const insertSorted = (store: Store, value: number, n: number): void => {
  const at = lowerBound(store.sorted, value, n)
  store.sorted.copyWithin(at + 1, at, n)
  store.sorted[at] = value
  store.logs.copyWithin(at + 1, at, n)
  store.logs[at] = durationLog(value)
}

export class DurationHistory {
  /** The buffers, while this is the newest version of its line. */
  private store: Store | undefined
  /**
   * Once superseded: the next version, the position (oldest first) at which it holds the duration
   * it added, and the duration (and start) it dropped (NaN: none).
   */
  private successor: DurationHistory | undefined = undefined
  private insertedAt = 0
  private dropped = Number.NaN
  private droppedStart = Number.NaN

  private constructor(store: Store, readonly length: number, readonly memory: number) {
    this.store = store
  }

  static empty(memory: number): DurationHistory {
    return DurationHistory.from([], memory)
  }

  /**
   * The newest `memory` of these durations (oldest first), with the starts of their runs (same
   * order: by start, then duration); without starts, the runs' starts are unknown and come before
   * any run inserted later.
   */
  static from(values: ReadonlyArray<number>, memory: number, starts?: ReadonlyArray<number>): DurationHistory {
    const entries = { values: [...values], starts: starts === undefined ? values.map(() => Number.NEGATIVE_INFINITY) : [...starts] }
    return new DurationHistory(storeOf(entries, memory), Math.min(values.length, memory), memory)
  }

  /** The start of the i-th oldest run (0 ≤ i < length). */
  private startAt(store: Store, i: number): number {
    return store.starts[(store.start + i) % store.values.length]!
  }

  /** The start of the newest run (−∞ when empty or unknown). */
  newestStart(): number {
    return this.length === 0 ? Number.NEGATIVE_INFINITY : this.startAt(this.own(), this.length - 1)
  }

  /** Whether the i-th oldest kept run comes at or before a run of this start and duration. */
  private notAfter(store: Store, i: number, startedAt: number, durationMs: number): boolean {
    const slot = (store.start + i) % store.values.length
    const start = store.starts[slot]!
    return start < startedAt || (start === startedAt && store.values[slot]! <= durationMs)
  }

  /**
   * How many kept runs come at or before a run of this start and duration (by start, then
   * duration), and whether one has both exactly.
   */
  private positionOf(store: Store, startedAt: number, durationMs: number): { readonly at: number; readonly same: boolean } {
    const n = this.length
    if (n === 0) return { at: 0, same: false }
    // the common case, the newest run, is decided by the newest kept one
    let lo = this.notAfter(store, n - 1, startedAt, durationMs) ? n : 0
    let hi = lo === n ? n : n - 1
    while (lo < hi) {
      const mid = (lo + hi) >>> 1
      if (this.notAfter(store, mid, startedAt, durationMs)) lo = mid + 1
      else hi = mid
    }
    const last = (store.start + lo - 1) % store.values.length
    return { at: lo, same: lo > 0 && store.starts[last] === startedAt && store.values[last] === durationMs }
  }

  /**
   * Whether a kept run has exactly this start and duration: it may be the very run (one read from
   * the database before its event came), which the history cannot tell by itself.
   */
  holds(durationMs: number, startedAt: number): boolean {
    return this.length > 0 && this.positionOf(this.own(), startedAt, durationMs).same
  }

  /** This history with one more duration at the end, its start the newest one's (histories without starts). */
  append(durationMs: number): DurationHistory {
    return this.place(durationMs, this.newestStart(), this.length)
  }

  /**
   * This history with the duration of a run that started at `startedAt`, placed by its start and
   * duration; past `memory` the oldest is dropped, and a run that comes before all of a full
   * history's is not kept (this history is returned).
   */
  insert(durationMs: number, startedAt: number): DurationHistory {
    return this.place(durationMs, startedAt, this.positionOf(this.own(), startedAt, durationMs).at)
  }

  /** This history with the duration placed at position `at` (oldest first). */
  private place(durationMs: number, startedAt: number, position: number): DurationHistory {
    let store = this.own()
    const n = this.length
    let at = position
    let dropped = Number.NaN
    let droppedStart = Number.NaN
    let kept = n
    if (n === this.memory) {
      if (at === 0) return this
      // full: the oldest leaves (capacity = memory), and its slot becomes the free one at the end
      dropped = store.values[store.start]!
      droppedStart = store.starts[store.start]!
      store.start = (store.start + 1) % n
      removeSorted(store, dropped, n)
      at--
      kept = n - 1
    } else if (n === store.values.length) {
      store = grow(store, this.memory)
    }
    const capacity = store.values.length
    // the runs that come after it move up one slot (none, in the common case)
    for (let i = kept; i > at; i--) {
      const to = (store.start + i) % capacity
      const from = (store.start + i - 1) % capacity
      store.values[to] = store.values[from]!
      store.starts[to] = store.starts[from]!
    }
    const slot = (store.start + at) % capacity
    store.values[slot] = durationMs
    store.starts[slot] = startedAt
    insertSorted(store, durationMs, kept)
    const next = new DurationHistory(store, kept + 1, this.memory)
    this.store = undefined
    this.successor = next
    this.insertedAt = at
    this.dropped = dropped
    this.droppedStart = droppedStart
    return next
  }

  /** This history without one occurrence of `durationMs` (order kept), to judge a run already in it. */
  without(durationMs: number): DurationHistory {
    const { values, starts } = this.entries()
    const i = values.lastIndexOf(durationMs)
    if (i < 0) return this
    values.splice(i, 1)
    starts.splice(i, 1)
    return new DurationHistory(storeOf({ values, starts }, this.memory), values.length, this.memory)
  }

  /** The durations, oldest first (a new array). */
  toArray(): Array<number> {
    return this.entries().values
  }

  /** The starts of the kept runs, oldest first (a new array; −∞ where unknown). */
  startsArray(): Array<number> {
    return this.entries().starts
  }

  private entries(): { values: Array<number>; starts: Array<number> } {
    const store = this.store
    if (store !== undefined) {
      const values = new Array<number>(this.length)
      const starts = new Array<number>(this.length)
      const capacity = store.values.length
      for (let i = 0; i < this.length; i++) {
        const slot = (store.start + i) % capacity
        values[i] = store.values[slot]!
        starts[i] = store.starts[slot]!
      }
      return { values, starts }
    }
    // Superseded: the successor's durations without what it added, with what it dropped.
    const out = this.successor!.entries()
    out.values.splice(this.insertedAt, 1)
    out.starts.splice(this.insertedAt, 1)
    if (!Number.isNaN(this.dropped)) {
      out.values.unshift(this.dropped)
      out.starts.unshift(this.droppedStart)
    }
    return out
  }

  /** The durations sorted ascending (length `length`; do not change it). */
  sorted(): Float64Array {
    return this.own().sorted.subarray(0, this.length)
  }

  /** `percentile_cont(p)` of the durations, null when there are none (reads the sorted buffer, no copy). */
  percentile(p: number): number | null {
    return percentileOfSorted(this.own().sorted, p, this.length)
  }

  /**
   * The sorted durations as a whole buffer (only the first `length` elements count), for the
   * statistics that walk it without making a view (do not change it).
   */
  sortedBuffer(): Float64Array {
    return this.own().sorted
  }

  /** `durationLog` of each element of `sortedBuffer()`, in the same order (do not change it). */
  sortedLogsBuffer(): Float64Array {
    return this.own().logs
  }

  /** The buffers of this version; a superseded version rebuilds its own from its successor's, once. */
  private own(): Store {
    if (this.store === undefined) {
      this.store = storeOf(this.entries(), this.memory)
      this.successor = undefined
    }
    return this.store
  }
}
