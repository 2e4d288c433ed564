import { Clock, Effect, Either } from "effect"
import { ValidationError } from "../Domain/Errors.js"
import { DurationSummary } from "./Histogram.js"
import { ceilHour, floorHour, Rollup } from "./Rollup.js"
import { FRACTIONS, type HourRange, StatsRepo } from "./StatsRepo.js"
import { DEFAULT_WINDOW, parseWindow } from "./Window.js"

/**
 * Up to this many samples the statistics are exact; above, they come from the rollup
 * (docs/decisions.md#statistics).
 */
export const EXACT_LIMIT = 100_000

export interface PercentileValues {
  readonly p50: number
  readonly p75: number
  readonly p90: number
  readonly p95: number
  readonly p99: number
  readonly max: number
}

export interface DurationStatistics {
  readonly monitorId: string
  readonly period: string
  readonly sampleSize: number
  readonly percentiles: PercentileValues | null
  readonly mean: number | null
  readonly stddev: number | null
}

export type StatisticsMethod = "exact" | "approximate"

/** Nearest whole millisecond, halves up (docs/decisions.md#details-clients-depend-on: p50 of 1..100 is 51). */
export const roundHalfUp = (x: number) => Math.floor(x + 0.5)

const toValues = (p: ReadonlyArray<number>, max: number): PercentileValues => ({
  p50: roundHalfUp(p[0]!),
  p75: roundHalfUp(p[1]!),
  p90: roundHalfUp(p[2]!),
  p95: roundHalfUp(p[3]!),
  p99: roundHalfUp(p[4]!),
  max: roundHalfUp(max)
})

export class Stats extends Effect.Service<Stats>()("jobmon/Stats", {
  dependencies: [StatsRepo.Default, Rollup.Default],
  effect: Effect.gen(function*() {
    const repo = yield* StatsRepo
    const rollup = yield* Rollup

    /** Checks a `window` query value (default 30d); a 400 naming `window` otherwise. */
    const window = (text: string | undefined) =>
      Either.match(parseWindow(text ?? DEFAULT_WINDOW), {
        onLeft: (message) => Effect.fail(new ValidationError({ path: "window", message })),
        onRight: Effect.succeed
      })

    const exact = (monitorId: string, period: string, from: Date, to: Date) =>
      Effect.map(repo.exact(monitorId, from, to), (row) => ({
        monitorId,
        period,
        sampleSize: row.n,
        percentiles: row.n === 0 || row.p === null ? null : toValues(row.p, row.max!),
        mean: row.n === 0 ? null : row.mean,
        stddev: row.n < 2 ? null : row.stddev
      }))

    /**
     * Whole hours inside the window from the rollup, the partial hours at both edges and the `stale`
     * hours (awaiting re-materialization) from raw runs: the sample is exactly the window's, only the
     * percentiles are estimated.
     */
    const approximate = (monitorId: string, period: string, fromMs: number, toMs: number, stale: ReadonlyArray<HourRange>) =>
      Effect.gen(function*() {
        const from = new Date(fromMs)
        const to = new Date(toMs)
        let fromHour = ceilHour(fromMs)
        const toHour = floorHour(toMs)
        if (fromHour > toHour) fromHour = toHour
        // The stale hours among the whole ones (the partial edge hours are read from raw runs anyway).
        const inside = stale
          .map((r) => ({ from: Math.max(r.from.getTime(), fromHour), to: Math.min(r.to.getTime(), toHour) }))
          .filter((r) => r.from < r.to)
          .map((r): HourRange => ({ from: new Date(r.from), to: new Date(r.to) }))
        const [hours, edges, late] = yield* Effect.all([
          fromHour < toHour ? repo.rollupRows(monitorId, new Date(fromHour), new Date(toHour), inside) : Effect.succeed([]),
          repo.rawBuckets(monitorId, from, new Date(fromHour), new Date(toHour), to),
          inside.length > 0 ? repo.rawRangeBuckets(monitorId, inside) : Effect.succeed([])
        ], { concurrency: 3 })
        const summary = new DurationSummary()
        for (const hour of hours) {
          summary.addTotals(hour.runs, hour.sum_ms, hour.sumsq_ms, hour.min_ms, hour.max_ms)
          summary.addSparseText(hour.hist)
        }
        for (const bucket of [...edges, ...late]) {
          summary.addTotals(bucket.n, bucket.s, bucket.q, bucket.mn, bucket.mx)
          summary.counts[bucket.b] = summary.counts[bucket.b]! + bucket.n
        }
        // The rollup may have overstated the sample (runs deleted since): small samples stay exact.
        if (summary.n <= EXACT_LIMIT) return yield* exact(monitorId, period, from, to)
        const cumulative = summary.cumulativeCounts()
        const statistics: DurationStatistics = {
          monitorId,
          period,
          sampleSize: summary.n,
          percentiles: toValues(FRACTIONS.map((p) => summary.percentile(p, cumulative)), summary.max),
          mean: summary.mean,
          stddev: summary.stddev
        }
        return statistics
      })

    /**
     * Duration statistics of a monitor's successful runs that started in [now − window, now].
     * The choice of method costs one indexed sum over the window's rollup rows. A rollup table is
     * first brought up to date for this monitor's completed hours (usually nothing to do); over a
     * continuous aggregate, the hours TimescaleDB has yet to re-materialize are read from raw runs.
     * So the choice and the approximation see every committed run, however late it was written.
     */
    const percentiles = (monitorId: string, period: string, windowMillis: number) =>
      Effect.gen(function*() {
        const toMs = yield* Clock.currentTimeMillis
        const fromMs = toMs - windowMillis
        yield* rollup.refreshMonitor(monitorId, new Date(floorHour(toMs)))
        const stale = yield* rollup.staleHours(new Date(floorHour(fromMs)), new Date(floorHour(toMs)))
        const estimate = yield* repo.rollupCount(monitorId, new Date(floorHour(fromMs)), new Date(floorHour(toMs)), new Date(toMs), stale)
        if (estimate <= EXACT_LIMIT) {
          const result = yield* exact(monitorId, period, new Date(fromMs), new Date(toMs))
          return { statistics: result, method: "exact" as StatisticsMethod }
        }
        const result = yield* approximate(monitorId, period, fromMs, toMs, stale)
        return { statistics: result, method: (result.sampleSize > EXACT_LIMIT ? "approximate" : "exact") as StatisticsMethod }
      }).pipe(Effect.withSpan("Stats.percentiles", { attributes: { monitorId } }))

    return { window, percentiles } as const
  })
}) {}
