/**
 * Duration statistics for the incident rules (docs/incident-rules.md, "ANOMALY").
 *
 * Pure: no services, no I/O, no clock. Every function takes the durations it judges.
 *
 * The duration rule works on ln(duration): job durations are positive and skewed (a job that
 * usually takes 60 s sometimes takes 90 s, never −30 s), and ratios ("3× slower") are what
 * people mean by "far off". Centre and spread are the median and the MAD of the log durations,
 * so a few earlier outliers do not move them. The spread has a floor, so a job that always takes
 * the same time does not flag on a few milliseconds of jitter.
 */
import type { DurationHistory } from "./DurationHistory.js"
import type { Sla } from "./Model.js"
import { MIN_RUNS_FOR_LEARNING } from "./Model.js"

/** MAD × this estimates the standard deviation of a normal distribution. */
export const MAD_SCALE = 1.4826
/**
 * Smallest spread of ln(duration) used as the unit of z: ln(1.25). With it a perfectly steady
 * job is flagged only when a run takes more than 1.25^4 ≈ 2.44× (or less than 0.41×) its median.
 */
export const LOG_SPREAD_FLOOR = Math.log(1.25)
/** |z| above this: ANOMALY with severity LOW. */
export const Z_LOW = 4
/** |z| above this: ANOMALY with severity MEDIUM ("far off"). */
export const Z_MEDIUM = 8
/**
 * A run is only anomalous when it is also this far (ms) from the median: timer and scheduling
 * noise of tens of milliseconds is not an anomaly of a 5 ms job.
 */
export const MIN_ABSOLUTE_DEVIATION_MS = 100
/** Durations below 1 ms count as 1 ms (the logarithm of 0 is not a number). */
export const MIN_DURATION_MS = 1
/** An SLA breach is MEDIUM when the observed percentile is at least this many times the limit. */
export const SLA_MEDIUM_FACTOR = 1.5

// ---------------------------------------------------------------------------
// Percentiles
// ---------------------------------------------------------------------------

/**
 * Linear interpolation between closest ranks, as PostgreSQL `percentile_cont(p)`, over the first
 * `n` values of `sorted` (all of them by default), already sorted ascending. Null when there are none.
 */
export const percentileOfSorted = (sorted: ArrayLike<number>, p: number, n: number = sorted.length): number | null => {
  if (n === 0) return null
  if (n === 1) return sorted[0]!
  const h = (n - 1) * Math.min(1, Math.max(0, p))
  const lo = Math.floor(h)
  const hi = Math.min(n - 1, lo + 1)
  return sorted[lo]! + (h - lo) * (sorted[hi]! - sorted[lo]!)
}

const sortedCopy = (values: ReadonlyArray<number>): Float64Array => Float64Array.from(values).sort()

/** `percentile_cont(p)` of unsorted values; null when there are none. */
export const percentile = (values: ReadonlyArray<number>, p: number): number | null =>
  percentileOfSorted(sortedCopy(values), p)

/** The median (`percentile_cont(0.5)`); null when there are no values. */
export const median = (values: ReadonlyArray<number>): number | null => percentile(values, 0.5)

// ---------------------------------------------------------------------------
// The duration rule
// ---------------------------------------------------------------------------

/** What the rule learned from a monitor's recent successful durations. */
export interface DurationModel {
  readonly sampleSize: number
  /** Median of ln(duration). */
  readonly medianLog: number
  /** The unit of z: max(MAD_SCALE × MAD of ln(duration), LOG_SPREAD_FLOOR). */
  readonly spread: number
  /** Median duration in ms (percentile_cont(0.5) of the durations). */
  readonly medianMs: number
}

/** ln of a duration, durations under MIN_DURATION_MS counted as MIN_DURATION_MS. */
export const durationLog = (ms: number): number => Math.log(Math.max(MIN_DURATION_MS, ms))

/** `durationLog` of each element, in the same order. */
export const durationLogs = (durations: Float64Array): Float64Array => durations.map((ms) => durationLog(ms))

/**
 * Learns the distribution of recent successful durations; null while fewer than
 * MIN_RUNS_FOR_LEARNING are known (no judgement yet).
 */
export const learnDurations = (durations: ReadonlyArray<number>): DurationModel | null => {
  if (durations.length < MIN_RUNS_FOR_LEARNING) return null
  const sorted = sortedCopy(durations)
  return learnFromSortedLogs(durationLogs(sorted), sorted, durations.length)
}

/** learnDurations of a monitor's history, from its sorted buffers (no copy, no sorting, no logarithm). */
export const learnHistory = (history: DurationHistory): DurationModel | null =>
  history.length < MIN_RUNS_FOR_LEARNING ? null : learnFromSortedLogs(history.sortedLogsBuffer(), history.sortedBuffer(), history.length)

/**
 * The model from the first `n` durations of `raw`, sorted ascending, and their `durationLog`s in
 * `logs` (same order), without sorting: ln is increasing, so the sorted logarithms are the
 * logarithms of the sorted durations; the absolute deviations from their median are two sorted
 * runs (walking down from the median, and up from it), and the MAD's order statistics are found
 * in them by bisection, O(log n), instead of merging the runs. The arithmetic is the same as
 * sorting each sequence, so the result is identical (a property test holds it bit for bit).
 */
const learnFromSortedLogs = (logs: Float64Array, raw: Float64Array, n: number): DurationModel => {
  const h = (n - 1) * 0.5
  const lo = Math.floor(h)
  const hi = Math.min(n - 1, lo + 1)
  const logLo = logs[lo]!
  const medianLog = logLo + (h - lo) * (logs[hi]! - logLo)
  // logs[0..left] are ≤ the median, logs[left + 1..n) above it
  let left = lo // logs[lo] ≤ medianLog ≤ logs[hi]
  while (left + 1 < n && logs[left + 1]! <= medianLog) left++
  const devLo = kthDeviation(logs, n, left, medianLog, lo)
  const devHi = hi === lo ? devLo : kthDeviation(logs, n, left, medianLog, hi)
  const mad = devLo + (h - lo) * (devHi - devLo)
  const rawLo = raw[lo]!
  return {
    sampleSize: n,
    medianLog,
    spread: Math.max(MAD_SCALE * mad, LOG_SPREAD_FLOOR),
    medianMs: rawLo + (h - lo) * (raw[hi]! - rawLo)
  }
}

/**
 * The k-th smallest (from 0) of |logs[i] − m| over i < n, where logs is ascending and
 * logs[0..left] ≤ m < logs[left + 1..n): the deviations are A(i) = |logs[left − i] − m| (i ≤ left)
 * and B(j) = |logs[left + 1 + j] − m|, each ascending. Bisects how many of the k + 1 smallest come
 * from A: the smallest count i whose next A is not below the last B taken.
 */
const kthDeviation = (logs: Float64Array, n: number, left: number, m: number, k: number): number => {
  const a = left + 1
  const b = n - a
  let from = Math.max(0, k + 1 - b)
  let to = Math.min(k + 1, a)
  while (from < to) {
    const i = (from + to) >> 1
    const j = k + 1 - i
    if (Math.abs(logs[left - i]! - m) < Math.abs(logs[a + j - 1]! - m)) from = i + 1
    else to = i
  }
  const j = k + 1 - from
  const x = from > 0 ? Math.abs(logs[left - from + 1]! - m) : -Infinity
  const y = j > 0 ? Math.abs(logs[a + j - 1]! - m) : -Infinity
  return Math.max(x, y)
}

export type DurationVerdict =
  | { readonly _tag: "Normal"; readonly z: number }
  | {
    readonly _tag: "Anomalous"
    readonly direction: "slow" | "fast"
    readonly severity: "LOW" | "MEDIUM"
    readonly z: number
  }

/** z of a duration against a model: (ln d − median) / spread. */
export const zScore = (model: DurationModel, durationMs: number): number =>
  (durationLog(durationMs) - model.medianLog) / model.spread

/**
 * Judges one duration against a model learned from the durations *before* it:
 * anomalous when |z| > Z_LOW and the run is at least MIN_ABSOLUTE_DEVIATION_MS from the median.
 */
export const judgeDuration = (model: DurationModel, durationMs: number): DurationVerdict => {
  const z = zScore(model, durationMs)
  const far = Math.abs(Math.max(MIN_DURATION_MS, durationMs) - model.medianMs) >= MIN_ABSOLUTE_DEVIATION_MS
  if (!far || !(Math.abs(z) > Z_LOW)) return { _tag: "Normal", z }
  return {
    _tag: "Anomalous",
    direction: z > 0 ? "slow" : "fast",
    severity: Math.abs(z) > Z_MEDIUM ? "MEDIUM" : "LOW",
    z
  }
}

// ---------------------------------------------------------------------------
// The SLA rule
// ---------------------------------------------------------------------------

export type SlaVerdict =
  /** No SLA, or fewer than MIN_RUNS_FOR_LEARNING durations to judge it on. */
  | { readonly _tag: "NotJudged" }
  | { readonly _tag: "Met"; readonly observedMs: number }
  | { readonly _tag: "Breached"; readonly observedMs: number; readonly severity: "LOW" | "MEDIUM" }

const TARGET: Readonly<Record<Sla["durationTarget"], number>> = { p95: 0.95, p99: 0.99 }

/**
 * The SLA over recent successful durations (including the run being judged): breached when
 * the target percentile is above maxDurationMs. observedMs is rounded to the nearest ms.
 */
export const checkSla = (durations: ReadonlyArray<number>, sla: Sla | null): SlaVerdict =>
  sla === null || durations.length < MIN_RUNS_FOR_LEARNING ? { _tag: "NotJudged" } : checkSlaOfSorted(sortedCopy(durations), sla)

/** checkSla of a monitor's history (its sorted buffer, no copy). */
export const checkSlaOfHistory = (history: DurationHistory, sla: Sla | null): SlaVerdict =>
  sla === null || history.length < MIN_RUNS_FOR_LEARNING
    ? { _tag: "NotJudged" }
    : checkSlaOfSorted(history.sortedBuffer(), sla, history.length)

const checkSlaOfSorted = (sorted: Float64Array, sla: Sla, n: number = sorted.length): SlaVerdict => {
  const observed = percentileOfSorted(sorted, TARGET[sla.durationTarget], n)!
  const observedMs = Math.round(observed)
  if (!(observed > sla.maxDurationMs)) return { _tag: "Met", observedMs }
  return {
    _tag: "Breached",
    observedMs,
    severity: observed >= SLA_MEDIUM_FACTOR * sla.maxDurationMs ? "MEDIUM" : "LOW"
  }
}
