import { Clock, Effect, Queue, Schedule } from "effect"
import { AppConfig } from "../Config.js"
import { ceilHour, floorHour, HOUR_MS, Rollup } from "../Stats/Rollup.js"
import { EngineRepo, type HealthRollupStale, type HealthSpans } from "./EngineRepo.js"
import { expectedRunCount, HEALTH_WINDOW_MS, healthScore } from "./Health.js"
import type { MonitorConfig, Severity } from "./Model.js"

/** How often health scores of monitors with news are recomputed. */
export const HEALTH_REFRESH = "30 seconds"
/**
 * How soon the health score follows an incident that opened or resolved: a monitor shown FAILING
 * should not keep its score of 100 for the rest of a HEALTH_REFRESH period.
 */
export const HEALTH_SOON = "1 second"
/** Most monitors scored by one pass (one query for all of them). */
const BATCH = 5_000

/** The settings of a monitor this instance judges; undefined when it has no actor for it. */
export type ConfigLookup = (monitorId: string) => MonitorConfig | undefined

/**
 * How the window of a count at `now` is split: runs that started after now − 30 days; the whole
 * hours from the first after that instant up to the hour in progress may be answered by the health
 * rollup. With a retention (RUNS_RETENTION_DAYS), not the hours that retention may be dropping (up to
 * an hour after now − retention): TimescaleDB drops raw runs and the aggregate's rows in separate
 * jobs, so there a row may outlive its runs, or go first. Those are read raw, as the direct count
 * (EngineRepo.healthCounts) reads them: whatever runs are still there.
 */
export const healthSpans = (now: number, retentionDays: number): HealthSpans => {
  const from = now - HEALTH_WINDOW_MS
  let firstHour = floorHour(from) + HOUR_MS
  if (retentionDays > 0) firstHour = Math.max(firstHour, ceilHour(now - retentionDays * 86_400_000) + HOUR_MS)
  return { from: new Date(from), firstHour: new Date(firstHour), lastHour: new Date(Math.max(firstHour, floorHour(now))) }
}

/**
 * Health scores (src/Engine/Health.ts) of the monitors that had news (a finished run, an incident
 * raised or resolved), recomputed in one query for all of them every HEALTH_REFRESH — never on the
 * ping path — and HEALTH_SOON after their incidents changed. The fiber of the latter sleeps until an
 * incident changes: no timer while nothing happens.
 *
 * The counts come from the hourly health rollup (sql/0021, kept current by src/Stats/Rollup.ts)
 * where it is current, and from raw runs elsewhere (EngineRepo.healthCountsRolledUp): a pass reads at
 * most one row per monitor and hour of the window, plus the runs not rolled up yet, however many
 * runs the window holds; the counts are those of every run (docs/incident-rules.md).
 */
export class HealthRefresh extends Effect.Service<HealthRefresh>()("jobmon/HealthRefresh", {
  scoped: Effect.gen(function*() {
    const repo = yield* EngineRepo
    const rollup = yield* Rollup
    const { runsRetentionDays } = yield* AppConfig
    const withNews = new Set<string>()
    const incidentsChanged = new Set<string>()
    const incidentWake = yield* Queue.sliding<void>(1)

    /** The monitor had news: scored at the next pass. */
    const changed = (monitorId: string): void => void withNews.add(monitorId)

    /** The monitor's incidents changed (raised, resolved, acknowledged): scored HEALTH_SOON later. */
    const changedIncidents = (monitorId: string): void => {
      incidentsChanged.add(monitorId)
      Queue.unsafeOffer(incidentWake, undefined)
    }

    const take = (ids: Set<string>) => {
      const batch = [...ids].slice(0, BATCH)
      for (const id of batch) ids.delete(id)
      return batch
    }

    /**
     * Where the rollup is out of date: read before the counts' transaction (a catalog TimescaleDB
     * changed would abort it); undefined when it cannot be known, and then every run is read.
     */
    const staleOf = (spans: HealthSpans): Effect.Effect<HealthRollupStale | undefined> =>
      rollup.cagg
        ? Effect.map(rollup.healthStaleHours(spans.firstHour, spans.lastHour), (hours) =>
          hours === undefined ? undefined : { backing: "continuous-aggregate", hours })
        : rollup.incremental
        ? Effect.map(repo.sweptUntil, (sweptUntil) => ({ backing: "table", sweptUntil }))
        : Effect.succeed(undefined)

    const countsWith = (ids: ReadonlyArray<string>, spans: HealthSpans, stale: HealthRollupStale | undefined) =>
      stale === undefined ? repo.healthCounts(ids, spans.from) : repo.healthCountsRolledUp(ids, spans, stale)

    /** What the health score counts of these monitors' runs at `now` (the scores' inputs but the schedule's). */
    const counts = (ids: ReadonlyArray<string>, now: number) =>
      Effect.gen(function*() {
        const spans = healthSpans(now, runsRetentionDays)
        const stale = yield* staleOf(spans)
        return yield* countsWith(ids, spans, stale).pipe(repo.withoutJit, repo.withoutStatementTimeout, Effect.orDie)
      })

    /** Scores these monitors at `now` from their counts, and writes the scores. */
    const scoreWith = (ids: ReadonlyArray<string>, configOf: ConfigLookup, now: number, spans: HealthSpans, stale: HealthRollupStale | undefined) =>
      Effect.gen(function*() {
        const counts = yield* countsWith(ids, spans, stale)
        const open = yield* repo.openIncidentsBySeverity(ids)
        const byId = new Map(counts.map((c) => [c.monitor_id, c]))
        const scores: Array<number> = []
        const scored: Array<string> = []
        for (const id of ids) {
          const config = configOf(id)
          if (config === undefined) continue
          const c = byId.get(id)
          const incidentsBySeverity: Record<Severity, number> = { HIGH: 0, MEDIUM: 0, LOW: 0 }
          for (const o of open) if (o.monitor_id === id) incidentsBySeverity[o.severity] += o.n
          scores.push(healthScore({
            expectedRuns: expectedRunCount(config.schedule, Math.max(spans.from.getTime(), config.createdAt), now),
            receivedRuns: c?.received ?? 0,
            successfulRuns: c?.successful ?? 0,
            onTimeRuns: c?.on_time ?? 0,
            slaEvaluatedRuns: c?.sla_evaluated ?? 0,
            slaMetRuns: c?.sla_met ?? 0,
            openIncidents: incidentsBySeverity
          }))
          scored.push(id)
        }
        if (scored.length > 0) yield* repo.writeHealthScores(scored, scores)
      })

    // Background work: not bound by the API's statement timeout.
    const score = (ids: ReadonlyArray<string>, configOf: ConfigLookup) =>
      ids.length === 0 ? Effect.void : Effect.gen(function*() {
        const now = yield* Clock.currentTimeMillis
        const spans = healthSpans(now, runsRetentionDays)
        const stale = yield* staleOf(spans)
        yield* scoreWith(ids, configOf, now, spans, stale).pipe(repo.withoutJit, repo.withoutStatementTimeout, Effect.orDie)
      })

    /** Scores the monitors that had news since the last pass. */
    const refresh = (configOf: ConfigLookup) => Effect.suspend(() => score(take(withNews), configOf))

    /** The monitors whose incidents changed, HEALTH_SOON after the first change of a burst. */
    const refreshSoon = (configOf: ConfigLookup) =>
      Effect.gen(function*() {
        yield* Queue.take(incidentWake)
        yield* Effect.sleep(HEALTH_SOON)
        const ids = take(incidentsChanged)
        if (incidentsChanged.size > 0) Queue.unsafeOffer(incidentWake, undefined)
        yield* score(ids, configOf)
      })

    /** Both passes, in fibers of the caller's scope. */
    const run = (configOf: ConfigLookup) =>
      Effect.gen(function*() {
        const logged = <A>(pass: Effect.Effect<A>) =>
          Effect.catchAllCause(pass, (cause) => Effect.logError("health score refresh failed", cause))
        yield* Effect.forkScoped(logged(refresh(configOf)).pipe(Effect.repeat(Schedule.spaced(HEALTH_REFRESH))))
        yield* Effect.forkScoped(logged(refreshSoon(configOf)).pipe(Effect.forever))
      })

    return { changed, changedIncidents, refresh, run, counts } as const
  }),
  dependencies: [EngineRepo.Default, Rollup.Default]
}) {}
