import { SqlClient } from "@effect/sql"
import { Clock, Duration, Effect, Layer, Schedule } from "effect"
import { Background } from "../Cluster/Cluster.js"
import { AppConfig } from "../Config.js"
import { Database } from "./Database.js"
import { withoutStatementTimeoutOn } from "./StatementTimeout.js"

/**
 * Storage policies for `runs`, from the configuration (RUNS_RETENTION_DAYS, RUNS_COMPRESS_AFTER_DAYS).
 * Migrations are static SQL, so the policies are applied at each start, idempotently, and replaced
 * when the configuration changed:
 * - `timescaledb`: TimescaleDB jobs — a retention policy on `runs` and on the duration and health
 *   rollups (the same age, so statistics never mix kept and dropped hours; health scores read the
 *   hours retention may be dropping from raw runs: src/Engine/HealthRefresh.ts), and compression of `runs`
 *   chunks segmented by monitor_id; a setting of 0 removes the policy.
 * - `timescaledb-apache`, `postgresql`: the service purges runs older than the retention itself,
 *   every hour (drop_chunks first on a hypertable, then a DELETE for the rest); compression needs
 *   the Timescale licence and is not available.
 */

export const PURGE_INTERVAL = Duration.hours(1)
const LOCK_KEY = 7_316_402_115
const RUNS = "public.runs"
const ROLLUP_CAGG = "public.run_duration_hourly_cagg"
const HEALTH_CAGG = "public.run_health_hourly_cagg"

const days = (n: number) => `${n} days`

export const applyTimescalePolicies = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  const config = yield* AppConfig
  const retention = config.runsRetentionDays > 0 ? days(config.runsRetentionDays) : null
  const compressAfter = config.runsCompressAfterDays > 0 ? days(config.runsCompressAfterDays) : null

  const current = (proc: string, relation: string, key: string) =>
    sql<{ value: string | null }>`
      select j.config ->> ${key} as value from timescaledb_information.jobs j
      where j.proc_name = ${proc} and format('%I.%I', j.hypertable_schema, j.hypertable_name)::regclass = ${relation}::regclass`
      .pipe(Effect.map((rows) => rows[0]))

  /** The wanted interval equals the job's (compared by PostgreSQL, so '7 days' = '7 days'). */
  const same = (have: string | null, want: string) =>
    sql<{ same: boolean }>`select ${have}::interval = ${want}::interval as same`.pipe(Effect.map((r) => r[0]!.same))

  const changes: Array<string> = []

  const retentionOn = (relation: string) =>
    Effect.gen(function*() {
      const job = yield* current("policy_retention", relation, "drop_after")
      if (retention !== null && job !== undefined && (yield* same(job.value, retention))) return
      if (job !== undefined) yield* sql`select remove_retention_policy(${relation}::regclass, if_exists => true)`
      if (retention !== null) {
        yield* sql`select add_retention_policy(${relation}::regclass, drop_after => ${retention}::interval)`
        changes.push(`retention ${retention} on ${relation}`)
      } else {
        changes.push(`no retention on ${relation}`)
      }
    })

  yield* sql.withTransaction(
    Effect.gen(function*() {
      // Background work (altering a hypertable's compression waits for its locks): no statement timeout.
      yield* sql`set local statement_timeout = 0`
      yield* sql`select pg_advisory_xact_lock(${LOCK_KEY})`
      yield* retentionOn(RUNS)
      const [cagg] = yield* sql<{ exists: boolean }>`select to_regclass(${ROLLUP_CAGG}) is not null as exists`
      if (cagg!.exists) yield* retentionOn(ROLLUP_CAGG)
      const [health] = yield* sql<{ exists: boolean }>`select to_regclass(${HEALTH_CAGG}) is not null as exists`
      if (health!.exists) yield* retentionOn(HEALTH_CAGG)

      const job = yield* current("policy_compression", RUNS, "compress_after")
      if (compressAfter !== null && job !== undefined && (yield* same(job.value, compressAfter))) return
      if (job !== undefined) yield* sql`select remove_compression_policy(${RUNS}::regclass, if_exists => true)`
      if (compressAfter === null) {
        if (job !== undefined) changes.push("no compression of runs (compressed chunks stay compressed)")
        return
      }
      const [enabled] = yield* sql<{ on: boolean }>`
        select compression_enabled as on from timescaledb_information.hypertables
        where hypertable_schema = 'public' and hypertable_name = 'runs'`
      if (enabled?.on !== true) {
        yield* sql`alter table public.runs set (timescaledb.compress,
          timescaledb.compress_segmentby = 'monitor_id', timescaledb.compress_orderby = 'started_at DESC, id')`
      }
      yield* sql`select add_compression_policy(${RUNS}::regclass, compress_after => ${compressAfter}::interval)`
      changes.push(`compression of runs after ${compressAfter}`)
    })
  )
  if (changes.length > 0) yield* Effect.logInfo(`storage policies: ${changes.join("; ")}`)
}).pipe(Effect.orDie, Effect.withSpan("Policies.applyTimescalePolicies"))

/**
 * Without TimescaleDB policies: drop runs that started before now − retention, and the rollup rows
 * (duration and health) of the hours before it. The triggers on `runs` mark the hour that straddles the cut-off for the
 * rollup refresher; hours dropped whole go here directly (drop_chunks fires no triggers).
 */
export const purgeOldRuns = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  const config = yield* AppConfig
  const { mode } = yield* Database
  if (config.runsRetentionDays <= 0) return 0
  const now = yield* Clock.currentTimeMillis
  const cutoff = new Date(now - config.runsRetentionDays * 86_400_000)
  // A purge may delete millions of rows: one transaction without the statement timeout.
  return yield* withoutStatementTimeoutOn(sql)(Effect.gen(function*() {
    if (mode === "timescaledb-apache") {
      yield* sql`select drop_chunks(${RUNS}::regclass, older_than => ${cutoff}::timestamptz)`
    }
    const deleted = yield* sql`delete from public.runs where started_at < ${cutoff}`.raw.pipe(
      Effect.map((result) => (result as { rowCount?: number }).rowCount ?? 0)
    )
    // Log pings (/ping/…/log) are kept as long as runs.
    yield* sql`delete from public.ping_logs where received_at < ${cutoff}`
    const [table] = yield* sql<{ exists: boolean }>`select to_regclass('public.run_duration_hourly_data') is not null as exists`
    if (table!.exists) {
      yield* sql`delete from public.run_duration_hourly_data where bucket + interval '1 hour' <= ${cutoff}`
    }
    const [health] = yield* sql<{ exists: boolean }>`select to_regclass('public.run_health_hourly_data') is not null as exists`
    if (health!.exists) {
      yield* sql`delete from public.run_health_hourly_data where bucket + interval '1 hour' <= ${cutoff}`
    }
    return deleted
  }))
}).pipe(Effect.orDie, Effect.withSpan("Policies.purgeOldRuns"))

/** Applies the policies once at start-up; without TimescaleDB policies, purges hourly in the background. */
export const StoragePoliciesLive = Layer.scopedDiscard(
  Effect.gen(function*() {
    const { mode } = yield* Database
    const config = yield* AppConfig
    if (mode === "timescaledb") {
      yield* applyTimescalePolicies
      return
    }
    if (config.runsCompressAfterDays > 0) {
      yield* Effect.logDebug(`RUNS_COMPRESS_AFTER_DAYS needs TimescaleDB with the Timescale licence; ignored in ${mode} mode`)
    }
    if (config.runsRetentionDays <= 0) return
    // Once across the instances (src/Cluster/Cluster.ts, Background); with one instance, here.
    const background = yield* Background
    const context = yield* Effect.context<AppConfig | SqlClient.SqlClient | Database>()
    yield* background.singleton(
      "retention-purge",
      purgeOldRuns.pipe(
        Effect.tap((n) => (n > 0 ? Effect.logInfo(`retention: deleted ${n} runs older than ${config.runsRetentionDays} days`) : Effect.void)),
        Effect.catchAllCause((cause) => Effect.logWarning("retention purge failed; retrying later", cause)),
        Effect.repeat(Schedule.spaced(PURGE_INTERVAL)),
        Effect.asVoid,
        Effect.provide(context)
      )
    )
  })
)
