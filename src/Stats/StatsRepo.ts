import { SqlClient } from "@effect/sql"
import { Effect } from "effect"
import { onConnectionWithoutStatementTimeout } from "../Db/StatementTimeout.js"

/** Percentile fractions, in the order of the response's p50 … p99. */
export const FRACTIONS = [0.5, 0.75, 0.9, 0.95, 0.99] as const

export interface ExactRow {
  readonly n: number
  readonly p: ReadonlyArray<number> | null
  readonly mean: number | null
  readonly stddev: number | null
  readonly max: number | null
}

/** One hour of the rollup; the sums as decimal text (they can exceed 2^53). */
export interface RollupRow {
  readonly runs: number
  readonly sum_ms: string
  readonly sumsq_ms: string
  readonly min_ms: number
  readonly max_ms: number
  readonly hist: string
}

/** Raw runs of the partial edge hours, grouped by histogram bucket. */
export interface RawBucketRow {
  readonly b: number
  readonly n: number
  readonly s: string
  readonly q: string
  readonly mn: number
  readonly mx: number
}

/**
 * The rollup sweep's advisory lock: the rollup triggers take it shared, the sweep exclusively
 * (sql/0013_rollup_sweep.sql, which spells the number out).
 */
export const ROLLUP_SWEEP_LOCK_KEY = 7_316_402_122

/** Held (session-level, try only) by the instance refreshing the continuous aggregate. */
export const CAGG_REFRESH_LOCK_KEY = 7_316_402_131

/** The continuous aggregates (TimescaleDB mode): the duration rollup's, and the health rollup's (sql/0021). */
export const DURATION_CAGG = "run_duration_hourly_cagg"
export const HEALTH_CAGG = "run_health_hourly_cagg"
export type ContinuousAggregate = typeof DURATION_CAGG | typeof HEALTH_CAGG

/** The sweep's mark when its row is missing: before any run, so everything is swept again. */
const SWEEP_EVERYTHING = new Date("0001-01-01T00:00:00Z")

export interface DirtyKey {
  readonly monitor_id: string
  readonly bucket: Date
}

/** Whole hours [from, to): hours of the rollup that are read from raw runs instead. */
export interface HourRange {
  readonly from: Date
  readonly to: Date
}

const HOUR_MS = 3_600_000

/**
 * Invalidated spans (inclusive, as TimescaleDB logs them) as sorted, disjoint whole hours: each span
 * covers the hours from the one holding its first instant to the one holding its last.
 */
export const mergeHourRanges = (spans: ReadonlyArray<{ readonly lo: Date; readonly hi: Date }>): ReadonlyArray<HourRange> => {
  const hours = spans
    .map((s) => ({
      from: Math.floor(s.lo.getTime() / HOUR_MS) * HOUR_MS,
      to: Math.floor(s.hi.getTime() / HOUR_MS) * HOUR_MS + HOUR_MS
    }))
    .sort((a, b) => a.from - b.from)
  const merged: Array<{ from: number; to: number }> = []
  for (const range of hours) {
    const last = merged[merged.length - 1]
    if (last !== undefined && range.from <= last.to) last.to = Math.max(last.to, range.to)
    else merged.push({ ...range })
  }
  return merged.map((r) => ({ from: new Date(r.from), to: new Date(r.to) }))
}

/**
 * SQL of the duration statistics. The successful-run predicate is written once per query on
 * purpose: `status = 'SUCCESS' and duration_ms is not null` (docs/decisions.md#statistics).
 */
export class StatsRepo extends Effect.Service<StatsRepo>()("jobmon/StatsRepo", {
  effect: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient

    /** Exact statistics from raw runs with started_at in [from, to]. */
    const exact = (monitorId: string, from: Date, to: Date) =>
      sql<ExactRow>`
        select count(*)::int as n,
               percentile_cont(${sql.literal(`array[${FRACTIONS.join(",")}]::float8[]`)})
                 within group (order by duration_ms) as p,
               avg(duration_ms)::float8 as mean,
               stddev_samp(duration_ms)::float8 as stddev,
               max(duration_ms) as max
        from runs
        where monitor_id = ${monitorId} and status = 'SUCCESS' and duration_ms is not null
          and started_at >= ${from} and started_at <= ${to}`.pipe(
        Effect.map((rows) => rows[0]!),
        Effect.orDie,
        Effect.withSpan("StatsRepo.exact")
      )

    /** SQL arrays of the ranges' bounds, for `unnest(los, his)`. */
    const bounds = (ranges: ReadonlyArray<HourRange>) => ({
      los: ranges.map((r) => r.from),
      his: ranges.map((r) => r.to)
    })

    /**
     * The cheap size estimate: the rollup's runs in the completed hours from the one holding `from`,
     * plus the raw runs of the hour in progress (at most an hour of one monitor's runs) and of the
     * `stale` hours (awaiting re-materialization: their rollup rows are left out).
     */
    const rollupCount = (monitorId: string, fromHour: Date, toHour: Date, to: Date, stale: ReadonlyArray<HourRange> = []) => {
      const { his, los } = bounds(stale)
      return sql<{ n: number }>`
        select (select coalesce(sum(h.runs), 0) from run_duration_hourly h
                where h.monitor_id = ${monitorId} and h.bucket >= ${fromHour} and h.bucket < ${toHour}
                  and not exists (select 1 from unnest(${los}::timestamptz[], ${his}::timestamptz[]) as s(lo, hi)
                                  where h.bucket >= s.lo and h.bucket < s.hi))::float8
             + (select count(*) from runs
                where monitor_id = ${monitorId} and status = 'SUCCESS' and duration_ms is not null
                  and started_at >= ${toHour} and started_at <= ${to})::float8
             + (select count(*) from unnest(${los}::timestamptz[], ${his}::timestamptz[]) as s(lo, hi)
                join runs r on r.monitor_id = ${monitorId} and r.started_at >= s.lo and r.started_at < s.hi
                where r.status = 'SUCCESS' and r.duration_ms is not null)::float8 as n`.pipe(
        Effect.map((rows) => rows[0]?.n ?? 0),
        Effect.orDie,
        Effect.withSpan("StatsRepo.rollupCount")
      )
    }

    /** The rollup's whole hours in [fromHour, toHour), but the `stale` ones. */
    const rollupRows = (monitorId: string, fromHour: Date, toHour: Date, stale: ReadonlyArray<HourRange> = []) => {
      const { his, los } = bounds(stale)
      return sql<RollupRow>`
        select h.runs::float8 as runs, h.sum_ms::text as sum_ms, h.sumsq_ms::text as sumsq_ms, h.min_ms, h.max_ms, h.hist
        from run_duration_hourly h
        where h.monitor_id = ${monitorId} and h.bucket >= ${fromHour} and h.bucket < ${toHour}
          and not exists (select 1 from unnest(${los}::timestamptz[], ${his}::timestamptz[]) as s(lo, hi)
                          where h.bucket >= s.lo and h.bucket < s.hi)`.pipe(
        Effect.orDie,
        Effect.withSpan("StatsRepo.rollupRows")
      )
    }

    /** Raw runs with started_at in [from, fromHour) or [toHour, to], by bucket. */
    const rawBuckets = (monitorId: string, from: Date, fromHour: Date, toHour: Date, to: Date) =>
      sql<RawBucketRow>`
        select public.jobmon_duration_bucket(duration_ms) as b, count(*)::int as n,
               sum(duration_ms)::text as s, sum(duration_ms::numeric * duration_ms::numeric)::text as q,
               min(duration_ms) as mn, max(duration_ms) as mx
        from runs
        where monitor_id = ${monitorId} and status = 'SUCCESS' and duration_ms is not null
          and ((started_at >= ${from} and started_at < ${fromHour}) or (started_at >= ${toHour} and started_at <= ${to}))
        group by 1`.pipe(Effect.orDie, Effect.withSpan("StatsRepo.rawBuckets"))

    /** Raw runs of whole hour ranges (disjoint), by bucket: one index range scan per range. */
    const rawRangeBuckets = (monitorId: string, ranges: ReadonlyArray<HourRange>) => {
      const { his, los } = bounds(ranges)
      return sql<RawBucketRow>`
        select public.jobmon_duration_bucket(r.duration_ms) as b, count(*)::int as n,
               sum(r.duration_ms)::text as s, sum(r.duration_ms::numeric * r.duration_ms::numeric)::text as q,
               min(r.duration_ms) as mn, max(r.duration_ms) as mx
        from unnest(${los}::timestamptz[], ${his}::timestamptz[]) as k(lo, hi)
        join runs r on r.monitor_id = ${monitorId} and r.started_at >= k.lo and r.started_at < k.hi
        where r.status = 'SUCCESS' and r.duration_ms is not null
        group by 1`.pipe(Effect.orDie, Effect.withSpan("StatsRepo.rawRangeBuckets"))
    }

    /**
     * TimescaleDB mode: the whole hours in [fromHour, toHour) whose materialized rows are out of date,
     * read from TimescaleDB's catalog (the logs since 2.0, the pending ranges since 2.22): the spans
     * written since the last refresh (the hypertable invalidation log), those a refresh left for
     * later (the aggregate's materialization invalidation log) and ranges whose materialization is
     * pending, cut to the window and to the watermark (hours above it are real-time: the view reads
     * them from raw runs already). TimescaleDB's own query rewriting judges an aggregate current by
     * the same tables. Spans are inclusive, in microseconds since 1970 with ±2^63 for open ends,
     * which are cut away before conversion. Of the duration rollup's aggregate, or of `aggregate`.
     */
    const staleHours = (fromHour: Date, toHour: Date, aggregate: ContinuousAggregate = DURATION_CAGG) =>
      sql<{ lo: Date; hi: Date }>`
        with c as (
          select ca.raw_hypertable_id as raw_id, ca.mat_hypertable_id as mat_id,
                 _timescaledb_functions.to_unix_microseconds(${fromHour}::timestamptz) as lo,
                 least(_timescaledb_functions.to_unix_microseconds(${toHour}::timestamptz),
                       _timescaledb_functions.cagg_watermark(ca.mat_hypertable_id)) as hi
          from _timescaledb_catalog.continuous_agg ca
          where ca.user_view_schema = 'public' and ca.user_view_name = ${aggregate}
        ), logged as (
          select l.lowest_modified_value as lo, l.greatest_modified_value as hi
          from _timescaledb_catalog.continuous_aggs_hypertable_invalidation_log l join c on l.hypertable_id = c.raw_id
          union all
          select m.lowest_modified_value, m.greatest_modified_value
          from _timescaledb_catalog.continuous_aggs_materialization_invalidation_log m join c on m.materialization_id = c.mat_id
          union all
          select p.lowest_modified_value, p.greatest_modified_value
          from _timescaledb_catalog.continuous_aggs_materialization_ranges p join c on p.materialization_id = c.mat_id
        )
        select _timescaledb_functions.to_timestamp(greatest(l.lo, c.lo)) as lo,
               _timescaledb_functions.to_timestamp(least(l.hi, c.hi - 1)) as hi
        from logged l cross join c
        where l.hi >= c.lo and l.lo < c.hi`.pipe(
        Effect.map(mergeHourRanges),
        Effect.withSpan("StatsRepo.staleHours")
      )

    /** Which table backs `run_duration_hourly`: the service refreshes it only when it is a table. */
    const rollupBacking = sql<{ incremental: boolean; cagg: boolean }>`
      select to_regclass('public.run_duration_dirty') is not null as incremental,
             to_regclass('public.run_duration_hourly_cagg') is not null as cagg`.pipe(
      Effect.map((rows) => rows[0]!),
      Effect.orDie
    )

    /**
     * Table mode: consume up to `limit` dirty (monitor, hour) keys and recompute their rollup rows
     * (the duration rollup's and the health rollup's), in one transaction. The claim and the recompute are two statements on purpose: under READ
     * COMMITTED the recompute's snapshot is taken after the claim, and the claim waited for any
     * writer that holds a key's row lock (the triggers update it), so the recompute sees those runs.
     * `wait = false` skips keys that writers or another refresher hold (the background refresher);
     * `wait = true` waits for them (the refresh right before a query, for current results).
     */
    const refreshDirty = (monitorId: string | null, limit: number, wait: boolean, before: Date | null = null) =>
      sql.withTransaction(
        Effect.gen(function*() {
          // Rollup maintenance, also when a percentiles request runs it: not cut by the statement timeout.
          yield* sql`set local statement_timeout = 0`
          const claimed = yield* sql<DirtyKey>`
            delete from run_duration_dirty d
            where (d.monitor_id, d.bucket) in (
              select monitor_id, bucket from run_duration_dirty
              where ${monitorId === null ? sql.literal("true") : sql`monitor_id = ${monitorId}`}
                and ${before === null ? sql.literal("true") : sql`bucket < ${before}`}
              order by monitor_id, bucket
              limit ${limit}
              for update ${sql.literal(wait ? "" : "skip locked")})
            returning d.monitor_id, d.bucket`
          if (claimed.length === 0) return 0
          const ids = claimed.map((k) => k.monitor_id)
          const buckets = claimed.map((k) => k.bucket)
          yield* sql`
            with keys as (
              select * from unnest(${ids}::uuid[], ${buckets}::timestamptz[]) as k(monitor_id, bucket)
            ), per_bucket as (
              -- LATERAL: one index range scan per (monitor, hour), whatever the planner's statistics say.
              select k.monitor_id, k.bucket, x.b, x.n, x.s, x.q, x.mn, x.mx
              from keys k
              cross join lateral (
                select public.jobmon_duration_bucket(r.duration_ms) as b, count(*) as n,
                       sum(r.duration_ms) as s, sum(r.duration_ms::numeric * r.duration_ms::numeric) as q,
                       min(r.duration_ms) as mn, max(r.duration_ms) as mx
                from runs r
                where r.monitor_id = k.monitor_id
                  and r.started_at >= k.bucket and r.started_at < k.bucket + interval '1 hour'
                  and r.status = 'SUCCESS' and r.duration_ms is not null
                group by 1
              ) x
            ), rolled as (
              select monitor_id, bucket, sum(n)::bigint as runs, sum(s) as sum_ms, sum(q) as sumsq_ms,
                     min(mn) as min_ms, max(mx) as max_ms,
                     string_agg(b::text || ',' || n::text, ',' order by b) as hist
              from per_bucket group by 1, 2
            ), upserted as (
              insert into run_duration_hourly_data (monitor_id, bucket, runs, sum_ms, sumsq_ms, min_ms, max_ms, hist)
              select monitor_id, bucket, runs, sum_ms, sumsq_ms, min_ms, max_ms, hist
              from rolled
              on conflict (monitor_id, bucket) do update set
                runs = excluded.runs, sum_ms = excluded.sum_ms, sumsq_ms = excluded.sumsq_ms,
                min_ms = excluded.min_ms, max_ms = excluded.max_ms, hist = excluded.hist
              returning 1
            )
            delete from run_duration_hourly_data d using keys k
            where d.monitor_id = k.monitor_id and d.bucket = k.bucket
              and not exists (select 1 from rolled r where r.monitor_id = k.monitor_id and r.bucket = k.bucket)`
          // The health rollup's rows of the same hours (sql/0021): every run, whatever its status.
          yield* sql`
            with keys as (
              select * from unnest(${ids}::uuid[], ${buckets}::timestamptz[]) as k(monitor_id, bucket)
            ), counted as (
              select k.monitor_id, k.bucket, x.runs, x.successes, x.timed, x.min_ms, x.max_ms
              from keys k
              cross join lateral (
                select count(*) as runs, count(*) filter (where r.status = 'SUCCESS') as successes,
                       count(r.duration_ms) filter (where r.status = 'SUCCESS') as timed,
                       min(r.duration_ms) filter (where r.status = 'SUCCESS') as min_ms,
                       max(r.duration_ms) filter (where r.status = 'SUCCESS') as max_ms
                from runs r
                where r.monitor_id = k.monitor_id
                  and r.started_at >= k.bucket and r.started_at < k.bucket + interval '1 hour'
              ) x
              where x.runs > 0
            ), upserted as (
              insert into run_health_hourly_data (monitor_id, bucket, runs, successes, timed, min_ms, max_ms)
              select monitor_id, bucket, runs, successes, timed, min_ms, max_ms
              from counted
              on conflict (monitor_id, bucket) do update set
                runs = excluded.runs, successes = excluded.successes, timed = excluded.timed,
                min_ms = excluded.min_ms, max_ms = excluded.max_ms
              returning 1
            )
            delete from run_health_hourly_data d using keys k
            where d.monitor_id = k.monitor_id and d.bucket = k.bucket
              and not exists (select 1 from counted c where c.monitor_id = k.monitor_id and c.bucket = k.bucket)`
          return claimed.length
        })
      ).pipe(Effect.orDie, Effect.withSpan("StatsRepo.refreshDirty"))

    /**
     * What a query must refresh for one monitor before `before` (a read, to skip the refresh
     * transaction): whether it has dirty hours, and the hour up to which marks cover every run.
     */
    const monitorRollupState = (monitorId: string, before: Date) =>
      sql<{ dirty: boolean; until: Date }>`
        select exists (select 1 from run_duration_dirty where monitor_id = ${monitorId} and bucket < ${before}) as dirty,
               coalesce((select until from run_duration_swept), ${SWEEP_EVERYTHING}) as until`.pipe(
        Effect.map((rows) => rows[0]!),
        Effect.orDie
      )

    /**
     * Marks dirty each (monitor, hour) in [from, to) that holds runs (of any status: a success that
     * became a failure must be recomputed too). A loose index scan on `runs (monitor_id, started_at)`:
     * one probe per monitor and hour with runs, whatever the number of runs.
     */
    const markHours = (monitorId: string | null, from: Date, to: Date) =>
      sql<{ n: number }>`
        with recursive hit(monitor_id, started_at) as (
          select m.id, (select r.started_at from runs r
                        where r.monitor_id = m.id and r.started_at >= ${from} and r.started_at < ${to}
                        order by r.started_at limit 1)
          from monitors m
          where ${monitorId === null ? sql.literal("true") : sql`m.id = ${monitorId}`}
          union all
          select h.monitor_id, (select r.started_at from runs r
                                where r.monitor_id = h.monitor_id
                                  and r.started_at >= date_trunc('hour', h.started_at, 'UTC') + interval '1 hour'
                                  and r.started_at < ${to}
                                order by r.started_at limit 1)
          from hit h
          where h.started_at is not null
        ), marked as (
          insert into run_duration_dirty as d (monitor_id, bucket)
          select monitor_id, date_trunc('hour', started_at, 'UTC') from hit
          where started_at is not null
          order by 1, 2
          on conflict (monitor_id, bucket) do update set marked_at = excluded.marked_at
          returning 1
        )
        select count(*)::int as n from marked`.pipe(Effect.map((rows) => rows[0]!.n))

    /**
     * Table mode: the hourly sweep. The rollup triggers leave runs of the hour in progress unmarked
     * (sql/0013_rollup_sweep.sql); once the server's clock has passed `until`, this marks every
     * (monitor, hour) in [until, cut) that holds runs and moves `until` to `cut`. First an instant
     * under the exclusive lock (a statement of its own, so the lock ends with it): every writer that
     * read the old hour has then committed, and every later writer reads a clock at or after `cut`
     * and marks its runs itself. Returns the keys marked, or 0 when there was nothing to sweep.
     */
    const sweep = Effect.gen(function*() {
      const [due] = yield* sql<{ due: boolean }>`
        select coalesce((select until from run_duration_swept), ${SWEEP_EVERYTHING}) < date_trunc('hour', clock_timestamp(), 'UTC') as due`
      if (due?.due !== true) return 0
      const cut = yield* sql<{ cut: Date }>`
        select date_trunc('hour', clock_timestamp(), 'UTC') as cut
        from (select pg_advisory_xact_lock(${ROLLUP_SWEEP_LOCK_KEY}) offset 0) as locked`.pipe(Effect.map((rows) => rows[0]!.cut))
      return yield* sql.withTransaction(
        Effect.gen(function*() {
          // Marks every monitor's hours since the last sweep: background work, no statement timeout.
          yield* sql`set local statement_timeout = 0`
          let [row] = yield* sql<{ until: Date }>`select until from run_duration_swept for update`
          if (row === undefined) {
            // The row was deleted (by hand): nothing says which runs are covered, so all of them are swept.
            ;[row] = yield* sql<{ until: Date }>`
              insert into run_duration_swept (until) values (${SWEEP_EVERYTHING})
              on conflict (singleton) do update set until = run_duration_swept.until
              returning until`
          }
          if (row === undefined || row.until.getTime() >= cut.getTime()) return 0
          const marked = yield* markHours(null, row.until, cut)
          yield* sql`update run_duration_swept set until = ${cut} where until < ${cut}`
          return marked
        })
      )
    }).pipe(Effect.orDie, Effect.withSpan("StatsRepo.sweep"))

    /**
     * TimescaleDB mode: re-materialize every invalidated hour before `until`, however old, and the
     * hours up to it, in both continuous aggregates (not in a transaction: CALL cannot run in one).
     * One instance at a time: another that holds the lock is refreshing already, and this one
     * answers false.
     */
    const refreshContinuousAggregate = (until: Date) =>
      // Background work over all time: no statement timeout.
      onConnectionWithoutStatementTimeout(sql, (connection) =>
        Effect.gen(function*() {
          const [lock] = yield* connection.execute("select pg_try_advisory_lock($1) as locked", [CAGG_REFRESH_LOCK_KEY], undefined)
          if ((lock as { locked?: boolean } | undefined)?.locked !== true) return false
          return yield* Effect.forEach(
            [DURATION_CAGG, HEALTH_CAGG],
            (aggregate) => connection.executeRaw(`call refresh_continuous_aggregate('public.${aggregate}', null, $1::timestamptz)`, [until]),
            { discard: true }
          ).pipe(
            Effect.as(true),
            Effect.ensuring(Effect.ignore(connection.executeRaw("select pg_advisory_unlock($1)", [CAGG_REFRESH_LOCK_KEY])))
          )
        })).pipe(
        Effect.orDie,
        Effect.withSpan("StatsRepo.refreshContinuousAggregate")
      )

    return {
      exact,
      rollupCount,
      rollupRows,
      rawBuckets,
      rawRangeBuckets,
      staleHours,
      rollupBacking,
      refreshDirty,
      monitorRollupState,
      markHours: (monitorId: string, from: Date, to: Date) => markHours(monitorId, from, to).pipe(Effect.orDie),
      sweep,
      refreshContinuousAggregate
    } as const
  })
}) {}
