import { SqlClient, type SqlError } from "@effect/sql"
import { Effect } from "effect"
import { withoutStatementTimeoutOn } from "../Db/StatementTimeout.js"
import type { MonitorRow } from "../Monitors/MonitorsRepo.js"
import { type ActiveIncident, DURATION_MEMORY, type Severity } from "./Model.js"
import { shardOfSql } from "./Shards.js"

/**
 * The incident engine's SQL: what the monitor actors are rebuilt from (src/Engine/StateLoader.ts),
 * the derived monitor fields they write (src/Engine/MonitorWriter.ts) and the health scores
 * (src/Engine/HealthRefresh.ts). Every read takes the monitors it is about, or none for every
 * monitor (the start-up): one statement for one monitor or for all of them.
 */

export interface EngineMonitorRow extends MonitorRow {
  readonly last_run_status: "SUCCESS" | "FAIL" | null
  readonly consecutive_failures: number
  readonly consecutive_successes: number
  readonly missed_below_threshold: boolean
}

export interface OpenRunRow {
  readonly id: string
  readonly monitor_id: string
  readonly started_at: Date
  /** A LATE incident names this run already. */
  readonly late: boolean
}

export interface ActiveIncidentRow {
  readonly monitor_id: string
  readonly type: ActiveIncident["type"]
  readonly status: ActiveIncident["status"]
  readonly run_id: string | null
}

/**
 * A monitor's last DURATION_MEMORY successful durations, oldest first by start (started_at, then
 * duration, then run id), as arrays: one row per monitor whatever the number of runs, and starts
 * as epoch ms (float8), not Date objects (thousands of histories are read at start-up).
 */
export interface RecentDurationsRow {
  readonly monitor_id: string
  readonly durations: Array<number>
  readonly starts: Array<number>
  /** Of the runs asked about, those the history holds (an actor marks their events: docs/engine.md). */
  readonly held?: Array<string> | null
}

export interface HealthCountsRow {
  readonly monitor_id: string
  readonly received: number
  readonly successful: number
  readonly on_time: number
  readonly sla_evaluated: number
  readonly sla_met: number
}

/**
 * Where the health rollup (`run_health_hourly`, sql/0021) may be out of date, for
 * healthCountsRolledUp. A table: its dirty (monitor, hour) keys, read in the counts' own statement,
 * and the sweep's mark (`run_duration_swept.until`, null without its row), read before it: every
 * run of an hour before the mark has its hour marked or rolled up, and the mark only moves forward,
 * so an older reading of it only leaves more hours to raw runs. A continuous aggregate: the whole
 * hours TimescaleDB has yet to re-materialize (src/Stats/Rollup.ts).
 */
export type HealthRollupStale =
  | { readonly backing: "table"; readonly sweptUntil: Date | null }
  | { readonly backing: "continuous-aggregate"; readonly hours: ReadonlyArray<{ readonly from: Date; readonly to: Date }> }

/** The window of a health count, split where the rollup can answer (src/Engine/HealthRefresh.ts). */
export interface HealthSpans {
  /** The window holds runs that started after this instant. */
  readonly from: Date
  /** The first whole hour the rollup may answer for (an hour boundary after `from`). */
  readonly firstHour: Date
  /** The hour the rollup may answer up to (excluded): later runs are read raw. */
  readonly lastHour: Date
}

export interface OpenIncidentsRow {
  readonly monitor_id: string
  readonly severity: Severity
  readonly n: number
}

/** One row per monitor with news; a null (or false) leaves that column as it is. Instants as epoch ms. */
export interface MonitorStateColumns {
  readonly ids: ReadonlyArray<string>
  readonly statuses: ReadonlyArray<string | null>
  readonly setNext: ReadonlyArray<boolean>
  readonly nextExpectedMs: ReadonlyArray<number | null>
  readonly lastPingMs: ReadonlyArray<number | null>
  readonly lastRunStatuses: ReadonlyArray<string | null>
  /** The streak (docs/incident-rules.md#thresholds): null where it did not change. */
  readonly failures: ReadonlyArray<number | null>
  readonly successes: ReadonlyArray<number | null>
  readonly missedBelowThreshold: ReadonlyArray<boolean | null>
}

const monitorColumns = `id, org_id, name, schedule_type, schedule_expression, timezone, grace_seconds,
  max_runtime_seconds, max_output_size_kb, capture_output, sla, tags, auto_resolve, failure_threshold,
  recovery_threshold, paused, status, health_score, last_ping_at, next_expected_at, created_at, updated_at,
  last_run_status, consecutive_failures, consecutive_successes, missed_below_threshold`

export interface RunSinceRow {
  readonly id: string
  readonly status: "RUNNING" | "SUCCESS" | "FAIL"
  readonly started_at: Date
  readonly finished_at: Date | null
  readonly duration_ms: string | number | null
  readonly exit_code: number | null
  readonly start_inferred: boolean
  readonly output: string | null
}

export class EngineRepo extends Effect.Service<EngineRepo>()("jobmon/EngineRepo", {
  effect: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const only = (column: string, ids: ReadonlyArray<string> | undefined) =>
      ids === undefined ? sql`` : sql`and ${sql.literal(column)} = any(${ids as Array<string>}::uuid[])`

    /**
     * For work long by nature (every monitor at start-up, health over 30 days of runs): its
     * statements run in one transaction without the API's statement timeout.
     */
    const withoutStatementTimeout = <A, E, R>(effect: Effect.Effect<A, E, R>): Effect.Effect<A, E | SqlError.SqlError, R> =>
      withoutStatementTimeoutOn(sql)(effect)

    /**
     * Within a transaction: no JIT compilation for its statements. The health counts are one
     * statement of many short index scans whose estimated cost passes `jit_above_cost`; compiling it
     * took PostgreSQL 15 one to two seconds, several times what it runs (docs/performance.md).
     */
    const withoutJit = <A, E, R>(effect: Effect.Effect<A, E, R>): Effect.Effect<A, E, R> =>
      Effect.zipRight(sql`set local jit = off`.pipe(Effect.orDie), effect)

    /** Monitors not deleted: these, or all of them. */
    const monitors = (ids?: ReadonlyArray<string>) =>
      sql<EngineMonitorRow>`
        select ${sql.literal(monitorColumns)} from monitors where deleted_at is null ${only("id", ids)}`.pipe(
        Effect.orDie,
        Effect.withSpan("EngineRepo.monitors")
      )

    /** Runs in progress of these monitors (or of all), each with whether a LATE incident names it. */
    const openRuns = (ids?: ReadonlyArray<string>) =>
      sql<OpenRunRow>`
        select r.id, r.monitor_id, r.started_at,
               exists (select 1 from incidents i where i.run_id = r.id and i.type = 'LATE') as late
        from runs r where r.status = 'RUNNING' ${only("r.monitor_id", ids)}`.pipe(
        Effect.orDie,
        Effect.withSpan("EngineRepo.openRuns")
      )

    /** OPEN and ACKNOWLEDGED incidents of these monitors (or of all), oldest first. */
    const activeIncidents = (ids?: ReadonlyArray<string>) =>
      sql<ActiveIncidentRow>`
        select monitor_id, type, status, run_id from incidents
        where status in ('OPEN', 'ACKNOWLEDGED') ${only("monitor_id", ids)}
        order by created_at`.pipe(Effect.orDie, Effect.withSpan("EngineRepo.activeIncidents"))

    /**
     * The recent successful durations of these monitors (none for a monitor without any), and which
     * of the runs `asked` they hold: an actor asks about the runs of the events it marks, a handful,
     * rather than reading the ids of all 200.
     */
    const recentDurations = (ids: ReadonlyArray<string>, asked?: ReadonlyArray<string>) =>
      sql<RecentDurationsRow>`
        select m.id as monitor_id,
               array_agg(d.duration_ms::float8 order by d.started_at, d.duration_ms, d.id) as durations,
               array_agg(floor(extract(epoch from d.started_at) * 1000)::float8 order by d.started_at, d.duration_ms, d.id) as starts
               ${asked === undefined ? sql`` : sql`, array_agg(d.id::text) filter (where d.id = any(${asked as Array<string>}::uuid[])) as held`}
        from unnest(${ids as Array<string>}::uuid[]) as m(id)
        cross join lateral (
          select id, duration_ms, started_at from runs
          where monitor_id = m.id and status = 'SUCCESS' and duration_ms is not null
          order by started_at desc, duration_ms desc, id desc limit ${DURATION_MEMORY}
        ) d
        group by m.id`.pipe(Effect.orDie, Effect.withSpan("EngineRepo.recentDurations"))

    /** The ids of the monitors (not deleted) of these shards (cluster mode: src/Engine/Shards.ts). */
    const monitorIdsOfShards = (shards: ReadonlyArray<number>) =>
      sql<{ id: string }>`
        select id from monitors
        where deleted_at is null and ${sql.literal(shardOfSql("id"))} = any(${shards as Array<number>}::int[])`.pipe(
        Effect.map((rows) => rows.map((r) => r.id)),
        Effect.orDie,
        Effect.withSpan("EngineRepo.monitorIdsOfShards")
      )

    /**
     * A monitor's runs that started or finished after `since` (epoch ms), oldest news first: what
     * an actor checks before it raises MISSED or LATE in cluster mode (news of a ping may still be on
     * its way, or lost with the instance that took it).
     */
    const runsSince = (monitorId: string, since: number) =>
      sql<RunSinceRow>`
        select id, status, started_at, finished_at, duration_ms, exit_code, start_inferred, output
        from runs
        where monitor_id = ${monitorId} and (started_at > ${new Date(since)} or finished_at > ${new Date(since)})
        order by coalesce(finished_at, started_at), id
        limit 100`.pipe(Effect.orDie, Effect.withSpan("EngineRepo.runsSince"))

    /**
     * Cluster mode, when an instance acquires shards: the runs of their monitors that finished after
     * the last ping each monitor's row records (news of them may have reached no owner while the
     * shard moved), oldest first, at most 100 per monitor, without their output (the actor fetches a
     * failed run's). `judged`: an incident already names the run as its cause (FAIL or ANOMALY: the
     * previous owner judged it before its row was written). A run counts when it started at most a
     * day before that last ping (the bound keeps the scan on the runs index).
     */
    const runsMissedByShards = (shards: ReadonlyArray<number>) =>
      sql<RunSinceRow & { readonly monitor_id: string; readonly since: Date; readonly judged: boolean }>`
        select m.id as monitor_id, s.since, r.id, r.status, r.started_at, r.finished_at, r.duration_ms, r.exit_code,
               r.start_inferred, null::text as output,
               exists (select 1 from incidents i where i.run_id = r.id and i.type in ('FAIL', 'ANOMALY')) as judged
        from monitors m
        cross join lateral (select coalesce(m.last_ping_at, m.created_at) as since) s
        cross join lateral (
          select r.id, r.status, r.started_at, r.finished_at, r.duration_ms, r.exit_code, r.start_inferred
          from runs r
          where r.monitor_id = m.id and r.started_at > s.since - interval '1 day' and r.finished_at > s.since
          order by r.finished_at, r.id
          limit 100
        ) r
        where m.deleted_at is null and ${sql.literal(shardOfSql("m.id"))} = any(${shards as Array<number>}::int[])
        order by m.id, r.finished_at, r.id`.pipe(Effect.orDie, Effect.withSpan("EngineRepo.runsMissedByShards"))

    /** The output stored with a run (news of a failed run travels without it). */
    const runOutput = (runId: string) =>
      sql<{ output: string | null }>`select output from runs where id = ${runId}`.pipe(
        Effect.map((rows) => rows[0]?.output ?? null),
        Effect.orDie,
        Effect.withSpan("EngineRepo.runOutput")
      )

    /** Derived fields of many monitors in one statement (the caller retries: SqlError stays an error). */
    const writeMonitorStates = (c: MonitorStateColumns) =>
      sql`
        update monitors m set
          status = coalesce(u.status, m.status),
          next_expected_at = case when u.set_next then to_timestamp(u.next_expected_ms / 1000.0) else m.next_expected_at end,
          last_ping_at = greatest(m.last_ping_at, to_timestamp(u.last_ping_ms / 1000.0)),
          last_run_status = coalesce(u.last_run_status, m.last_run_status),
          consecutive_failures = coalesce(u.failures, m.consecutive_failures),
          consecutive_successes = coalesce(u.successes, m.consecutive_successes),
          missed_below_threshold = coalesce(u.missed_below_threshold, m.missed_below_threshold)
        from unnest(${c.ids as Array<string>}::uuid[], ${c.statuses as Array<string | null>}::text[],
                    ${c.setNext as Array<boolean>}::bool[], ${c.nextExpectedMs as Array<number | null>}::float8[],
                    ${c.lastPingMs as Array<number | null>}::float8[], ${c.lastRunStatuses as Array<string | null>}::text[],
                    ${c.failures as Array<number | null>}::int[], ${c.successes as Array<number | null>}::int[],
                    ${c.missedBelowThreshold as Array<boolean | null>}::bool[])
          as u(id, status, set_next, next_expected_ms, last_ping_ms, last_run_status, failures, successes, missed_below_threshold)
        where m.id = u.id`.pipe(Effect.asVoid, Effect.withSpan("EngineRepo.writeMonitorStates"))

    /**
     * What a health score counts of these monitors' runs started after `from` (src/Engine/Health.ts),
     * straight from every run of the window: what healthCountsRolledUp must equal, and what it falls
     * back to when TimescaleDB's invalidation logs cannot be read.
     */
    const healthCounts = (ids: ReadonlyArray<string>, from: Date) =>
      sql<HealthCountsRow>`
        select r.monitor_id,
          count(*)::int as received,
          count(*) filter (where r.status = 'SUCCESS')::int as successful,
          count(*) filter (where not exists (
            select 1 from incidents i where i.run_id = r.id and i.type = 'LATE'))::int as on_time,
          count(*) filter (where m.sla is not null and r.status = 'SUCCESS' and r.duration_ms is not null)::int as sla_evaluated,
          count(*) filter (where m.sla is not null and r.status = 'SUCCESS'
            and r.duration_ms <= (m.sla->>'maxDurationMs')::bigint)::int as sla_met
        from runs r join monitors m on m.id = r.monitor_id
        where r.monitor_id in ${sql.in(ids)} and r.started_at > ${from}
        group by r.monitor_id`.pipe(Effect.orDie, Effect.withSpan("EngineRepo.healthCounts"))

    /** The sweep's mark of the rollup table (see HealthRollupStale); null without its row. */
    const sweptUntil = sql<{ until: Date }>`select until from run_duration_swept`.pipe(
      Effect.map((rows) => rows[0]?.until ?? null),
      Effect.orDie
    )

    /**
     * The same counts as healthCounts, for the same runs, read mostly from the hourly health rollup
     * (docs/incident-rules.md, "How the counts are read"). The window (from, ∞) is split into:
     * - (from, firstHour) and [hi, ∞): raw runs (the partial first hour; the hours not rolled up yet),
     * - the whole hours [firstHour, hi): one rollup row each, except the stale hours (rows out of
     *   date) and the hours whose successful durations straddle the monitor's SLA (the row cannot
     *   say how many meet it), which are read raw, one index range scan each,
     * where hi is `lastHour`, over a table no later than the sweep's mark (later hours may lack
     * their marks). One statement, so one snapshot: a refresh of the rollup table commits its rows
     * and consumes its keys at once. On-time runs are the received ones less those a LATE incident
     * names, counted from the monitors' LATE incidents (an incident names a run of its own monitor).
     */
    const healthCountsRolledUp = (ids: ReadonlyArray<string>, spans: HealthSpans, stale: HealthRollupStale) => {
      const first = spans.firstHour.getTime()
      const last = stale.backing === "table"
        ? Math.min(spans.lastHour.getTime(), stale.sweptUntil?.getTime() ?? -Infinity)
        : spans.lastHour.getTime()
      const firstHour = spans.firstHour
      const hi = new Date(Math.max(first, last))
      const ranges = stale.backing === "table"
        ? sql`
            select d.monitor_id, d.bucket as lo, d.bucket + interval '1 hour' as hi
            from run_duration_dirty d
            where d.monitor_id = any(${ids as Array<string>}::uuid[]) and d.bucket >= ${firstHour} and d.bucket < ${hi}`
        : sql`
            select m.id as monitor_id, greatest(s.lo, ${firstHour}::timestamptz) as lo, least(s.hi, ${hi}::timestamptz) as hi
            from m cross join unnest(${stale.hours.map((h) => h.from)}::timestamptz[], ${stale.hours.map((h) => h.to)}::timestamptz[]) as s(lo, hi)
            where s.hi > ${firstHour} and s.lo < ${hi}`
      const fresh = sql`not exists (select 1 from stale s where s.monitor_id = h.monitor_id and h.bucket >= s.lo and h.bucket < s.hi)`
      return sql<HealthCountsRow>`
        with m as materialized (
          select id, sla is not null as has_sla, (sla->>'maxDurationMs')::bigint as sla_max
          from monitors where id = any(${ids as Array<string>}::uuid[])
        ), stale as materialized (
          ${ranges}
        ), rolled as (
          select h.monitor_id, sum(h.runs::int) as received, sum(h.successes::int) as successful,
                 coalesce(sum(h.timed::int) filter (where m.has_sla), 0) as sla_evaluated,
                 coalesce(sum(h.timed::int) filter (where h.max_ms <= m.sla_max), 0) as sla_met
          from run_health_hourly h join m on m.id = h.monitor_id
          where h.bucket >= ${firstHour} and h.bucket < ${hi}
            and not coalesce(h.timed > 0 and h.min_ms <= m.sla_max and h.max_ms > m.sla_max, false)
            and ${fresh}
          group by h.monitor_id
        ), straddling as (
          select h.monitor_id, h.bucket as lo, h.bucket + interval '1 hour' as hi
          from m join run_health_hourly h on h.monitor_id = m.id
          where m.sla_max is not null and h.bucket >= ${firstHour} and h.bucket < ${hi}
            and h.timed > 0 and h.min_ms <= m.sla_max and h.max_ms > m.sla_max
            and ${fresh}
        ), raw as (
          select r.monitor_id, r.status, r.duration_ms
          from (select * from stale union all select * from straddling) k
          cross join lateral (
            select monitor_id, status, duration_ms from runs r
            where r.monitor_id = k.monitor_id and r.started_at >= k.lo and r.started_at < k.hi
          ) r
          union all
          select r.monitor_id, r.status, r.duration_ms
          from m cross join lateral (
            select monitor_id, status, duration_ms from runs r
            where r.monitor_id = m.id and r.started_at > ${spans.from} and r.started_at < ${firstHour}
          ) r
          union all
          select r.monitor_id, r.status, r.duration_ms
          from m cross join lateral (
            select monitor_id, status, duration_ms from runs r
            where r.monitor_id = m.id and r.started_at >= ${hi}
          ) r
        ), counted as (
          select r.monitor_id, count(*) as received,
            count(*) filter (where r.status = 'SUCCESS') as successful,
            count(*) filter (where m.has_sla and r.status = 'SUCCESS' and r.duration_ms is not null) as sla_evaluated,
            count(*) filter (where m.has_sla and r.status = 'SUCCESS' and r.duration_ms <= m.sla_max) as sla_met
          from raw r join m on m.id = r.monitor_id
          group by r.monitor_id
        ), late as (
          select r.monitor_id, count(*) as n
          from (select distinct i.run_id from incidents i
                where i.monitor_id = any(${ids as Array<string>}::uuid[]) and i.type = 'LATE' and i.run_id is not null) l
          cross join lateral (
            select r.monitor_id from runs r where r.id = l.run_id and r.started_at > ${spans.from}
          ) r
          join m on m.id = r.monitor_id
          group by r.monitor_id
        ), totals as (
          select m.id as monitor_id,
                 coalesce(x.received, 0) + coalesce(c.received, 0) as received,
                 coalesce(x.successful, 0) + coalesce(c.successful, 0) as successful,
                 coalesce(x.sla_evaluated, 0) + coalesce(c.sla_evaluated, 0) as sla_evaluated,
                 coalesce(x.sla_met, 0) + coalesce(c.sla_met, 0) as sla_met,
                 coalesce(l.n, 0) as late
          from m
          left join rolled x on x.monitor_id = m.id
          left join counted c on c.monitor_id = m.id
          left join late l on l.monitor_id = m.id
        )
        select monitor_id, received::int, successful::int, (received - late)::int as on_time,
               sla_evaluated::int, sla_met::int
        from totals where received > 0`.pipe(Effect.orDie, Effect.withSpan("EngineRepo.healthCountsRolledUp"))
    }

    const openIncidentsBySeverity = (ids: ReadonlyArray<string>) =>
      sql<OpenIncidentsRow>`
        select monitor_id, severity, count(*)::int as n from incidents
        where monitor_id in ${sql.in(ids)} and status in ('OPEN', 'ACKNOWLEDGED')
        group by monitor_id, severity`.pipe(Effect.orDie, Effect.withSpan("EngineRepo.openIncidentsBySeverity"))

    const writeHealthScores = (ids: ReadonlyArray<string>, scores: ReadonlyArray<number>) =>
      sql`
        update monitors m set health_score = s.score
        from unnest(${ids as Array<string>}::uuid[], ${scores as Array<number>}::float8[]) as s(id, score)
        where m.id = s.id`.pipe(Effect.asVoid, Effect.orDie, Effect.withSpan("EngineRepo.writeHealthScores"))

    return {
      withoutStatementTimeout,
      withoutJit,
      monitors,
      openRuns,
      activeIncidents,
      recentDurations,
      writeMonitorStates,
      healthCounts,
      sweptUntil,
      healthCountsRolledUp,
      openIncidentsBySeverity,
      writeHealthScores,
      monitorIdsOfShards,
      runsSince,
      runsMissedByShards,
      runOutput
    } as const
  })
}) {}
