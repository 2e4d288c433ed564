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
 * - Table: a background fiber sweeps the hours that ended (see StatsRepo.sweep) and recomputes
 *   the dirty (monitor, hour) keys every minute, and `refreshMonitor` does the same for one
 *   monitor's completed hours before a query reads them.
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

    /** Brings every monitor's rollup rows up to date: the hourly sweep, then the dirty keys. */
    const refreshAll = backing.incremental
      ? Effect.gen(function*() {
        const swept = yield* repo.sweep
        if (swept > 0) yield* Effect.logDebug(`duration rollup: the sweep marked ${swept} monitor-hours`)
        return yield* drain(null, false)
      })
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
