import { Clock, Duration, Effect, Ref, Schedule } from "effect"
import { Background } from "../Cluster/Cluster.js"
import { isStatementTimeout } from "../Db/StatementTimeout.js"
import { type ContinuousAggregate, DURATION_CAGG, HEALTH_CAGG, type HourRange, StatsRepo } from "./StatsRepo.js"

/** How often the service refreshes the rollup: the table (plain PostgreSQL, Apache-only TimescaleDB) or the continuous aggregate. */
export const ROLLUP_REFRESH_INTERVAL = Duration.seconds(60)
/** Dirty (monitor, hour) keys recomputed per transaction. */
export const REFRESH_BATCH = 2_000

export const HOUR_MS = 3_600_000
export const floorHour = (ms: number) => Math.floor(ms / HOUR_MS) * HOUR_MS
export const ceilHour = (ms: number) => Math.ceil(ms / HOUR_MS) * HOUR_MS

/** What backs `run_duration_hourly`, and how its refreshes went (GET /api/admin/storage). */
export interface RollupStatus {
  readonly backing: "continuous-aggregate" | "table"
  readonly lastRefreshAt: Date | null
  readonly lastFailureAt: Date | null
  readonly lastError: string | null
}

const errorText = (cause: unknown) => {
  const text = String(cause)
  return text.length > 500 ? `${text.slice(0, 500)}…` : text
}

/**
 * Keeps `run_duration_hourly` and `run_health_hourly` (sql/0021) current; a background fiber, every
 * minute, from start-up:
 * - Continuous aggregates (TimescaleDB): `refresh_continuous_aggregate(…, NULL, <last whole hour − 1 h>)`.
 *   No start limit: TimescaleDB re-materializes every hour its invalidation logs name, however old
 *   (a late import, a run whose durationMs puts its start days back), and nothing else; about a
 *   millisecond when nothing changed. The service does this itself rather than through a TimescaleDB
 *   policy (sql/0017): the policy's window stopped at 7 days back, and background jobs fail on some
 *   PostgreSQL minors (docs/operations.md). Until the next refresh, queries read the invalidated
 *   hours from raw runs (`staleHours`).
 * - Table: the hourly sweep (see StatsRepo.sweep), then the dirty (monitor, hour) keys; and
 *   `refreshMonitor` does the same for one monitor's completed hours before a query reads them.
 */
export class Rollup extends Effect.Service<Rollup>()("jobmon/Rollup", {
  dependencies: [StatsRepo.Default],
  scoped: Effect.gen(function*() {
    const repo = yield* StatsRepo
    const backing = yield* repo.rollupBacking
    const background = yield* Background
    const status = yield* Ref.make<RollupStatus>({
      backing: backing.cagg ? "continuous-aggregate" : "table",
      lastRefreshAt: null,
      lastFailureAt: null,
      lastError: null
    })

    const drain = (monitorId: string | null, wait: boolean, before: Date | null = null) =>
      Effect.gen(function*() {
        let total = 0
        while (true) {
          const claimed = yield* repo.refreshDirty(monitorId, REFRESH_BATCH, wait, before)
          total += claimed
          if (claimed < REFRESH_BATCH) return total
        }
      })

    /**
     * Brings one monitor's rollup rows of the hours before `before` up to date (a no-op over a
     * continuous aggregate). Queries read later hours from raw runs, so the hour in progress is left
     * to the sweep. Hours the sweep has not reached yet (the first minute of an hour) are marked here
     * for this monitor. Costs one read when nothing is to do.
     */
    const refreshMonitor = (monitorId: string, before: Date) =>
      backing.incremental
        ? Effect.gen(function*() {
          const state = yield* repo.monitorRollupState(monitorId, before)
          const marked = state.until.getTime() < before.getTime() ? yield* repo.markHours(monitorId, state.until, before) : 0
          if (state.dirty || marked > 0) yield* drain(monitorId, true, before)
        })
        : Effect.void

    const unreadable = new Set<ContinuousAggregate>()
    /**
     * The hours of `aggregate` in [fromHour, toHour) in TimescaleDB's invalidation logs below its
     * watermark; undefined if TimescaleDB's catalog cannot be read (a release that changed it),
     * which is logged once per aggregate with `consequence`.
     */
    const invalidated = (aggregate: ContinuousAggregate, fromHour: Date, toHour: Date, consequence: string) =>
      repo.staleHours(fromHour, toHour, aggregate).pipe(
        Effect.map((hours): ReadonlyArray<HourRange> | undefined => hours),
        // A statement timeout stays one (the request answers 503); any other failure is the catalog's.
        Effect.catchIf((error) => !isStatementTimeout(error), (error) =>
          Effect.gen(function*() {
            if (!unreadable.has(aggregate)) {
              unreadable.add(aggregate)
              yield* Effect.logWarning(`TimescaleDB's invalidation logs could not be read; ${consequence}`, error)
            }
            return undefined
          })),
        Effect.orDie
      )

    /**
     * The hours in [fromHour, toHour) whose rollup rows are out of date and must be read from raw
     * runs: over a continuous aggregate, those in TimescaleDB's invalidation logs below its watermark;
     * none for a table (refreshMonitor brought it up to date). If TimescaleDB's catalog cannot be read
     * (a release that changed it), answers none, so queries rely on the minute's refresh, and says so
     * once.
     */
    const staleHours = (fromHour: Date, toHour: Date): Effect.Effect<ReadonlyArray<HourRange>> =>
      backing.cagg
        ? invalidated(
          DURATION_CAGG,
          fromHour,
          toHour,
          "duration statistics count runs written into materialized hours once the next refresh (within a minute) has run"
        ).pipe(Effect.map((hours) => hours ?? []))
        : Effect.succeed([])

    /**
     * The health rollup's (`run_health_hourly`, sql/0021) hours in [fromHour, toHour) that must be
     * read from raw runs, over a continuous aggregate (the table's are its dirty keys, which the
     * health query reads itself): undefined when TimescaleDB's catalog cannot be read, and the health
     * scores are then counted from raw runs alone.
     */
    const healthStaleHours = (fromHour: Date, toHour: Date): Effect.Effect<ReadonlyArray<HourRange> | undefined> =>
      backing.cagg
        ? invalidated(HEALTH_CAGG, fromHour, toHour, "health scores are counted from raw runs until it can")
        : Effect.succeed([])

    /** Brings every monitor's rollup rows up to date; the number of monitor-hours recomputed (table). */
    const refreshAll = backing.incremental
      ? Effect.gen(function*() {
        const swept = yield* repo.sweep
        if (swept > 0) yield* Effect.logDebug(`duration rollup: the sweep marked ${swept} monitor-hours`)
        return yield* drain(null, false)
      })
      : Effect.gen(function*() {
        if (!backing.cagg) return 0
        const now = yield* Clock.currentTimeMillis
        // The last whole hour and the one in progress stay real-time: most runs that end late land there.
        yield* repo.refreshContinuousAggregate(new Date(floorHour(now) - HOUR_MS))
        return 0
      })

    const recorded = refreshAll.pipe(
      Effect.tap(() =>
        Effect.flatMap(Clock.currentTimeMillis, (now) => Ref.update(status, (s) => ({ ...s, lastRefreshAt: new Date(now) })))
      ),
      Effect.tapErrorCause((cause) =>
        Effect.flatMap(Clock.currentTimeMillis, (now) =>
          Ref.update(status, (s) => ({ ...s, lastFailureAt: new Date(now), lastError: errorText(cause) })))
      )
    )

    const logged = recorded.pipe(
      Effect.tap((n) => (n > 0 ? Effect.logDebug(`duration rollup: recomputed ${n} monitor-hours`) : Effect.void)),
      Effect.catchAllCause((cause) => Effect.logWarning("duration rollup refresh failed; retrying in a minute", cause))
    )

    if (backing.incremental || backing.cagg) {
      // Once across the instances (src/Cluster/Cluster.ts, Background); with one instance, here.
      yield* background.singleton("rollup-refresh", Effect.asVoid(logged.pipe(Effect.repeat(Schedule.spaced(ROLLUP_REFRESH_INTERVAL)))))
    }

    return {
      incremental: backing.incremental,
      cagg: backing.cagg,
      refreshMonitor,
      staleHours,
      healthStaleHours,
      /** One refresh as the background fiber runs it (recorded in `status`; failures are defects). */
      refreshAll: recorded,
      status: Ref.get(status)
    } as const
  })
}) {}
