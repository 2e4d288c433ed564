/**
 * A monitor's recent successful durations, oldest first, at most `memory` of them, with their sorted
 * copy kept up to date as runs finish.
 *
 * The value is persistent: `append` returns a new history and the old one keeps answering with
 * the durations it had. The newest version owns two buffers and changes them in place
 * (a finished run costs one small object, no new arrays: the old arrays used to live until the
 * monitor's next run, long enough to be promoted to the old generation, and made most of what the
 * garbage collector had to move per ping). An older version remembers the one change that came
 * after it (the duration added, the one dropped) and, if it is ever read again (tests do, the
 * engine does not), rebuilds its own buffers from its successor's once.
 */
import { durationLog, durationLogs, percentileOfSorted } from "./Anomaly.js"

interface Store {
  /**
   * Chronological: values[(start + i) % capacity] is the i-th oldest. The buffers grow (doubling)
   * up to the memory; only a full store at the memory wraps around (start moves).
   */
  readonly values: Float64Array
  start: number
  /** The durations sorted ascending. */
  readonly sorted: Float64Array
  /**
   * `durationLog` of each sorted duration, same order: the duration model reads half of them for
   * every finished run, and a logarithm costs more than keeping it.
   */
  readonly logs: Float64Array
}

/** Histories that never had a duration share this one (it is never changed: appending grows first). */
const EMPTY: Store = { values: new Float64Array(0), start: 0, sorted: new Float64Array(0), logs: new Float64Array(0) }

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

const storeOf = (values: ReadonlyArray<number>, memory: number): Store => {
  const kept = values.length > memory ? values.slice(values.length - memory) : values
  if (kept.length === 0) return EMPTY
  const sorted = Float64Array.from(kept).sort()
  return { values: Float64Array.from(kept), start: 0, sorted, logs: durationLogs(sorted) }
}

/** A larger copy of a store that has not wrapped yet (start = 0, every slot in use). */
const grow = (store: Store, memory: number): Store => {
  const n = store.values.length
  const capacity = Math.min(memory, Math.max(8, n * 2))
  const values = new Float64Array(capacity)
  values.set(store.values)
  const sorted = new Float64Array(capacity)
  sorted.set(store.sorted)
  const logs = new Float64Array(capacity)
  logs.set(store.logs)
  return { values, start: 0, sorted, logs }
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
  /** Once superseded: the next version (which added one duration at the end), and the duration it dropped (NaN: none). */
  private successor: DurationHistory | undefined = undefined
  private dropped = Number.NaN

  private constructor(store: Store, readonly length: number, readonly memory: number) {
    this.store = store
  }

  static empty(memory: number): DurationHistory {
    return DurationHistory.from([], memory)
  }

  /** The newest `memory` of these durations (oldest first). */
  static from(values: ReadonlyArray<number>, memory: number): DurationHistory {
    return new DurationHistory(storeOf(values, memory), Math.min(values.length, memory), memory)
  }

  /** This history with one more duration; past `memory` the oldest is dropped. */
  append(durationMs: number): DurationHistory {
    let store = this.own()
    const n = this.length
    let dropped = Number.NaN
    if (n === this.memory) {
      // full: the ring turns (capacity = memory)
      dropped = store.values[store.start]!
      store.values[store.start] = durationMs
      store.start = (store.start + 1) % n
      removeSorted(store, dropped, n)
      insertSorted(store, durationMs, n - 1)
    } else {
      if (n === store.values.length) store = grow(store, this.memory)
      store.values[n] = durationMs
      insertSorted(store, durationMs, n)
    }
    const next = new DurationHistory(store, n === this.memory ? n : n + 1, this.memory)
    this.store = undefined
    this.successor = next
    this.dropped = dropped
    return next
  }

  /** The durations, oldest first (a new array). */
  toArray(): Array<number> {
    const store = this.store
    if (store !== undefined) {
      const out = new Array<number>(this.length)
      const capacity = store.values.length
      for (let i = 0; i < this.length; i++) out[i] = store.values[(store.start + i) % capacity]!
      return out
    }
    // Superseded: the successor's durations without what it added, with what it dropped.
    const out = this.successor!.toArray()
    out.pop()
    if (!Number.isNaN(this.dropped)) out.unshift(this.dropped)
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
      this.store = storeOf(this.toArray(), this.memory)
      this.successor = undefined
    }
    return this.store
  }
}
