import { Clock, Duration, Effect, Schedule } from "effect"
import { StatsRepo } from "./StatsRepo.js"

/** How often the service refreshes the rollup table (plain PostgreSQL, Apache-only TimescaleDB). */
export const ROLLUP_REFRESH_INTERVAL = Duration.seconds(60)
/** Dirty (monitor, hour) keys recomputed per transaction. */
export const REFRESH_BATCH = 2_000

export const HOUR_MS = 3_600_000
export const floorHour = (ms: number) => Math.floor(ms / HOUR_MS) * HOUR_MS
export const ceilHour = (ms: number) => Math.ceil(ms / HOUR_MS) * HOUR_MS

/**
 * Keeps `run_duration_hourly` current.
 * - Continuous aggregate (TimescaleDB): TimescaleDB's policy refreshes it; the service runs one
 *   refresh over all time at start-up (the aggregate is created empty, and an upgrade may find runs).
 * - Table: a background fiber recomputes the dirty (monitor, hour) keys every minute, and
 *   `refreshMonitor` does the same for one monitor's hours before a query reads them.
 */
export class Rollup extends Effect.Service<Rollup>()("jobmon/Rollup", {
  dependencies: [StatsRepo.Default],
  scoped: Effect.gen(function*() {
    const repo = yield* StatsRepo
    const backing = yield* repo.rollupBacking

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
     * continuous aggregate). Queries read later hours from raw runs, so the hour in progress, dirty
     * after nearly every run, is left to the background refresher. Costs one read when nothing is dirty.
     */
    const refreshMonitor = (monitorId: string, before: Date) =>
      backing.incremental
        ? Effect.flatMap(repo.hasDirty(monitorId, before), (dirty) => (dirty ? Effect.asVoid(drain(monitorId, true, before)) : Effect.void))
        : Effect.void

    /** Brings every monitor's rollup rows up to date. */
    const refreshAll = backing.incremental
      ? drain(null, false)
      : Effect.gen(function*() {
        if (!backing.cagg) return 0
        const now = yield* Clock.currentTimeMillis
        yield* repo.refreshContinuousAggregate(new Date(floorHour(now) - HOUR_MS))
        return 0
      })

    const logged = refreshAll.pipe(
      Effect.tap((n) => (n > 0 ? Effect.logDebug(`duration rollup: recomputed ${n} monitor-hours`) : Effect.void)),
      Effect.catchAllCause((cause) => Effect.logWarning("duration rollup refresh failed; retrying later", cause))
    )

    if (backing.incremental) {
      yield* logged.pipe(Effect.repeat(Schedule.spaced(ROLLUP_REFRESH_INTERVAL)), Effect.forkScoped)
    } else if (backing.cagg) {
      yield* Effect.forkScoped(logged)
    }

    return { incremental: backing.incremental, refreshMonitor, refreshAll } as const
  })
}) {}
