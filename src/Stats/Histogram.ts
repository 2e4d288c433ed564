/**
 * The duration histogram of the hourly rollup, and percentiles estimated from it.
 * Pure: no services, no I/O. The bucket layout mirrors `public.jobmon_duration_bucket` in
 * sql/0002_duration_rollup.sql — change both or neither.
 *
 * Buckets (as `width_bucket(scale(ms), 0, 1816, 1816)` numbers them):
 * - 0: negative durations (should not happen; kept rather than lost);
 * - 1..100: exactly 0..99 ms, one bucket per whole millisecond (durations are integers);
 * - 101..1816: [100·1.01^(b−101), 100·1.01^(b−100)) ms, from 100 ms to about 30.1 days;
 * - 1817: anything longer.
 *
 * Within a bucket, the k-th of its c samples is placed at fraction (k + 0.5) / c of the bucket in
 * log space (log-linear interpolation), inside the bucket bounds narrowed to the observed min and max.
 * Since the true order statistic lies in the same bucket, its relative error is below 1.01 − 1 = 1%,
 * and a percentile interpolated between two order statistics (as percentile_cont does) inherits that
 * bound. Below 100 ms the estimate is exact.
 */

export const LINEAR_BUCKETS = 100
export const GROWTH = 1.01
export const BUCKETS = 1816
/** Slots of a dense histogram: buckets 0 .. BUCKETS + 1. */
export const SLOTS = BUCKETS + 2

/** Lower and upper bound of a bucket, in ms (infinite at the two open ends). */
export const bucketBounds = (bucket: number): readonly [number, number] => {
  if (bucket <= 0) return [Number.NEGATIVE_INFINITY, 0]
  if (bucket <= LINEAR_BUCKETS) return [bucket - 1, bucket]
  if (bucket > BUCKETS) return [LINEAR_BUCKETS * GROWTH ** (BUCKETS - LINEAR_BUCKETS), Number.POSITIVE_INFINITY]
  return [LINEAR_BUCKETS * GROWTH ** (bucket - LINEAR_BUCKETS - 1), LINEAR_BUCKETS * GROWTH ** (bucket - LINEAR_BUCKETS)]
}

/**
 * Adds a sparse histogram (`bucket,count,bucket,count,…`; any non-digits separate) to `counts`.
 * Hand-parsed: it is the hot part of an approximate query (hundreds of thousands of numbers).
 */
export const addSparseText = (counts: Float64Array, text: string): void => {
  let value = 0
  let bucket = -1
  let inNumber = false
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i)
    if (c >= 48 && c <= 57) {
      value = value * 10 + (c - 48)
      inNumber = true
    } else if (inNumber) {
      if (bucket < 0) bucket = value
      else {
        counts[bucket] = counts[bucket]! + value
        bucket = -1
      }
      value = 0
      inNumber = false
    }
  }
  if (inNumber && bucket >= 0) counts[bucket] = counts[bucket]! + value
}

/** Count, exact sums and extremes of a set of durations, with its histogram. */
export class DurationSummary {
  n = 0
  sum = 0n
  sumOfSquares = 0n
  min = Number.POSITIVE_INFINITY
  max = Number.NEGATIVE_INFINITY
  readonly counts = new Float64Array(SLOTS)

  /** Adds the totals of a group of samples (sums as decimal strings: they can exceed 2^53). */
  addTotals(n: number, sum: string, sumOfSquares: string, min: number, max: number): void {
    if (n === 0) return
    this.n += n
    this.sum += BigInt(sum)
    this.sumOfSquares += BigInt(sumOfSquares)
    if (min < this.min) this.min = min
    if (max > this.max) this.max = max
  }

  /** Adds one hour's sparse histogram, as the rollup stores it. */
  addSparseText(text: string): void {
    addSparseText(this.counts, text)
  }

  /** The estimated k-th smallest sample (0-based); `cumulative` from `cumulativeCounts`. */
  orderStatistic(k: number, cumulative: Float64Array): number {
    let lo = 0
    let hi = SLOTS - 1
    // the first bucket whose cumulative count exceeds k
    while (lo < hi) {
      const mid = (lo + hi) >> 1
      if (cumulative[mid]! > k) hi = mid
      else lo = mid + 1
    }
    const bucket = lo
    const inBucket = this.counts[bucket]!
    const before = cumulative[bucket]! - inBucket
    const fraction = (k - before + 0.5) / inBucket
    if (bucket >= 1 && bucket <= LINEAR_BUCKETS) return bucket - 1
    const [bucketLow, bucketHigh] = bucketBounds(bucket)
    const low = Math.max(bucketLow, this.min)
    const high = Math.min(bucketHigh, this.max)
    if (!(high > low)) return Math.min(Math.max(low, this.min), this.max)
    if (low <= 0) return low + (high - low) * fraction
    return low * (high / low) ** fraction
  }

  cumulativeCounts(): Float64Array {
    const cumulative = new Float64Array(SLOTS)
    let running = 0
    for (let i = 0; i < SLOTS; i++) {
      running += this.counts[i]!
      cumulative[i] = running
    }
    return cumulative
  }

  /** Linear interpolation between closest ranks, as percentile_cont(p), from the histogram. */
  percentile(p: number, cumulative: Float64Array = this.cumulativeCounts()): number {
    const rank = p * (this.n - 1)
    const k = Math.floor(rank)
    const below = this.orderStatistic(k, cumulative)
    const fraction = rank - k
    if (fraction === 0 || k + 1 >= this.n) return below
    return below + fraction * (this.orderStatistic(k + 1, cumulative) - below)
  }

  get mean(): number {
    return Number(this.sum) / this.n
  }

  /** Sample standard deviation from the exact sums; null below two samples. */
  get stddev(): number | null {
    if (this.n < 2) return null
    const n = BigInt(this.n)
    const numerator = n * this.sumOfSquares - this.sum * this.sum
    const variance = Number(numerator) / (this.n * (this.n - 1))
    return Math.sqrt(Math.max(variance, 0))
  }
}
