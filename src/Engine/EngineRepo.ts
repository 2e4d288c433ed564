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
}

const monitorColumns = `id, org_id, name, schedule_type, schedule_expression, timezone, grace_seconds,
  max_runtime_seconds, max_output_size_kb, capture_output, sla, tags, auto_resolve, paused, status,
  health_score, last_ping_at, next_expected_at, created_at, updated_at, last_run_status`

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
          last_run_status = coalesce(u.last_run_status, m.last_run_status)
        from unnest(${c.ids as Array<string>}::uuid[], ${c.statuses as Array<string | null>}::text[],
                    ${c.setNext as Array<boolean>}::bool[], ${c.nextExpectedMs as Array<number | null>}::float8[],
                    ${c.lastPingMs as Array<number | null>}::float8[], ${c.lastRunStatuses as Array<string | null>}::text[])
          as u(id, status, set_next, next_expected_ms, last_ping_ms, last_run_status)
        where m.id = u.id`.pipe(Effect.asVoid, Effect.withSpan("EngineRepo.writeMonitorStates"))

    /** What a health score counts of these monitors' runs started after `from` (src/Engine/Health.ts). */
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
      monitors,
      openRuns,
      activeIncidents,
      recentDurations,
      writeMonitorStates,
      healthCounts,
      openIncidentsBySeverity,
      writeHealthScores,
      monitorIdsOfShards,
      runsSince,
      runOutput
    } as const
  })
}) {}
