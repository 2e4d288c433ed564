import { SqlClient } from "@effect/sql"
import { expect, layer, type Vitest } from "@effect/vitest"
import { Effect, type Layer } from "effect"
import { call, createMonitor, createOrganization, createToken, sendPing, TestServer } from "../support/fixture.js"
import { Rollup } from "../../src/Stats/Rollup.js"
import { StatsRepo } from "../../src/Stats/StatsRepo.js"
import { timescaleAvailable } from "../support/timescale.js"

// ---------------------------------------------------------------------------------------------
// A reference written for this test, independent of src/Stats: percentile_cont's definition
// (linear interpolation between closest ranks), halves-up rounding, mean and sample stddev.
// ---------------------------------------------------------------------------------------------

const referencePercentile = (sorted: ReadonlyArray<number>, p: number) => {
  const rank = p * (sorted.length - 1)
  const lower = Math.floor(rank)
  const upper = Math.ceil(rank)
  return sorted[lower]! + (rank - lower) * (sorted[upper]! - sorted[lower]!)
}
const halfUp = (x: number) => Math.floor(x + 0.5)
const referenceStatistics = (values: ReadonlyArray<number>) => {
  const sorted = [...values].sort((a, b) => a - b)
  const n = sorted.length
  const mean = sorted.reduce((a, b) => a + b, 0) / n
  const variance = sorted.reduce((a, b) => a + (b - mean) ** 2, 0) / (n - 1)
  return {
    sampleSize: n,
    percentiles: {
      p50: halfUp(referencePercentile(sorted, 0.5)),
      p75: halfUp(referencePercentile(sorted, 0.75)),
      p90: halfUp(referencePercentile(sorted, 0.9)),
      p95: halfUp(referencePercentile(sorted, 0.95)),
      p99: halfUp(referencePercentile(sorted, 0.99)),
      max: sorted[n - 1]!
    },
    mean,
    stddev: n < 2 ? null : Math.sqrt(variance)
  }
}

/** A small deterministic generator, so failures reproduce. */
const prng = (seed: number) => () => {
  seed = (seed * 1_103_515_245 + 12_345) % 2_147_483_648
  return seed / 2_147_483_648
}

// ---------------------------------------------------------------------------------------------
// Seeding runs straight into the table, as the run writer would leave them.
// ---------------------------------------------------------------------------------------------

interface SeedRun {
  readonly minutesAgo: number
  readonly durationMs: number | null
  readonly status?: "SUCCESS" | "FAIL" | "RUNNING"
}

const orgOf = (monitorId: string) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const [row] = yield* sql<{ org_id: string }>`select org_id from monitors where id = ${monitorId}`
    return row!.org_id
  }).pipe(Effect.orDie)

const seed = (monitorId: string, runs: ReadonlyArray<SeedRun>) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const orgId = yield* orgOf(monitorId)
    const minutes = runs.map((r) => r.minutesAgo)
    const durations = runs.map((r) => r.durationMs)
    const statuses = runs.map((r) => r.status ?? "SUCCESS")
    yield* sql`
      insert into runs (id, monitor_id, org_id, status, started_at, finished_at, duration_ms)
      select gen_random_uuid(), ${monitorId}, ${orgId}, s.status, now() - s.minutes * interval '1 minute',
             case when s.status = 'RUNNING' then null
                  else now() - s.minutes * interval '1 minute' + coalesce(s.duration, 0) * interval '1 millisecond' end,
             s.duration
      from unnest(${minutes}::float8[], ${durations}::int8[], ${statuses}::text[]) as s(minutes, duration, status)`
  }).pipe(Effect.orDie)

/** What backs the rollup in this database: a continuous aggregate, or the service's table. */
const rollupKind = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  const [row] = yield* sql<{ cagg: boolean }>`select to_regclass('public.run_duration_hourly_cagg') is not null as cagg`
  return row!.cagg ? "continuous aggregate" as const : "table" as const
}).pipe(Effect.orDie)

/** TimescaleDB: materialize what was just inserted (the policy would, within 5 minutes). */
const materialize = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  if ((yield* rollupKind) === "continuous aggregate") {
    yield* sql`call refresh_continuous_aggregate('public.run_duration_hourly_cagg', null, date_trunc('hour', now()))`
  }
}).pipe(Effect.orDie)

const percentiles = (monitorId: string, query = "", token?: string | null) =>
  call("GET", `/api/monitors/${monitorId}/percentiles${query}`, token === undefined ? {} : { token })

const expectStatistics = (body: any, expected: ReturnType<typeof referenceStatistics>) => {
  expect(body.sampleSize).toBe(expected.sampleSize)
  expect(body.percentiles).toEqual(expected.percentiles)
  expect(body.mean).toBeCloseTo(expected.mean, 6)
  if (expected.stddev === null) expect(body.stddev).toBeNull()
  else expect(body.stddev).toBeCloseTo(expected.stddev, 6)
}

/**
 * A large synthetic sample in one statement: `n` runs over the last 31 days, durations from `durationSql`
 * (random() is seeded per transaction). A 10-minute band around the 30-day edge stays empty, so that
 * the service's window and the check's window (a moment apart) hold the same runs.
 */
const seedLarge = (monitorId: string, n: number, durationSql: string, seedValue: number, days = 31) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const orgId = yield* orgOf(monitorId)
    yield* sql.withTransaction(Effect.gen(function*() {
      // A bulk import, not an API request: without the service's statement timeout (docs/operations.md).
      yield* sql`set local statement_timeout = 0`
      yield* sql`select setseed(${seedValue})`
      yield* sql`
        insert into runs (id, monitor_id, org_id, status, started_at, finished_at, duration_ms)
        select gen_random_uuid(), ${monitorId}, ${orgId}, 'SUCCESS', t.started_at, t.started_at + t.d * interval '1 ms', t.d
        from (
          select now() - interval '1 second' - random() * ${days} * interval '1 day' as started_at,
                 (${sql.literal(durationSql)})::bigint as d
          from generate_series(1, ${n})
        ) t
        where t.started_at not between now() - interval '30 days 5 minutes' and now() - interval '29 days 23 hours 55 minutes'`
    }))
  }).pipe(Effect.orDie)

/** Exact statistics straight from SQL, for comparison with the approximate path. */
const exactFromSql = (monitorId: string, window = "30 days") =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const [row] = yield* sql<{ n: number; p: Array<number>; mean: number; stddev: number; max: number }>`
      select count(*)::int as n,
             percentile_cont(array[0.5, 0.75, 0.9, 0.95, 0.99]) within group (order by duration_ms) as p,
             avg(duration_ms)::float8 as mean, stddev_samp(duration_ms)::float8 as stddev, max(duration_ms) as max
      from runs
      where monitor_id = ${monitorId} and status = 'SUCCESS' and duration_ms is not null
        and started_at >= now() - ${window}::interval and started_at <= now()`
    return row!
  }).pipe(Effect.orDie)

const LOGNORMAL = "round(exp(ln(45000) + 0.8 * sqrt(-2 * ln(1 - random())) * cos(2 * pi() * random())))"
/** Awkward on purpose: a spike at one value, many tiny durations (0–80 ms) and a long tail up to 10 hours. */
const AWKWARD = `case when random() < 0.5 then 1500
                      when random() < 0.6 then floor(random() * 81)
                      else round(exp(ln(100) + random() * ln(360000))) end`

const expectWithinOnePercent = (monitorId: string, body: any) =>
  Effect.gen(function*() {
    const exact = yield* exactFromSql(monitorId)
    expect(exact.n).toBeGreaterThan(100_000)
    expect(body.sampleSize).toBe(exact.n)
    const names = ["p50", "p75", "p90", "p95", "p99"] as const
    names.forEach((name, i) => {
      const want = halfUp(exact.p[i]!)
      const got = body.percentiles[name] as number
      expect(Number.isInteger(got)).toBe(true)
      const error = Math.abs(got - want) / Math.max(want, 1)
      expect(error, `${name}: ${got} against exact ${want}`).toBeLessThanOrEqual(0.01)
    })
    expect(body.percentiles.max).toBe(exact.max)
    expect(Math.abs(body.mean - exact.mean) / exact.mean).toBeLessThan(1e-9)
    expect(Math.abs(body.stddev - exact.stddev) / exact.stddev).toBeLessThan(1e-9)
  })

const hasTimescale = await timescaleAvailable()

type It = Vitest.MethodsNonLive<Layer.Layer.Success<ReturnType<typeof TestServer>>, true>

const approximatePathTests = (it: It) => {
  it.effect("above 100,000 runs: estimated from the hourly rollup within 1% of exact (log-normal)", () =>
    Effect.gen(function*() {
      const monitor = yield* createMonitor()
      yield* seedLarge(monitor.id, 160_000, LOGNORMAL, 0.25)
      yield* materialize
      const response = yield* percentiles(monitor.id)
      expect(response.status).toBe(200)
      expect(response.headers["x-statistics-method"]).toBe("approximate")
      yield* expectWithinOnePercent(monitor.id, response.body)
    }), 60_000)

  it.effect("above 100,000 runs: within 1% on an awkward distribution (spike, tiny values, long tail)", () =>
    Effect.gen(function*() {
      const monitor = yield* createMonitor()
      yield* seedLarge(monitor.id, 130_000, AWKWARD, -0.5)
      yield* materialize
      const response = yield* percentiles(monitor.id)
      expect(response.headers["x-statistics-method"]).toBe("approximate")
      yield* expectWithinOnePercent(monitor.id, response.body)
      // Below 100 ms the histogram has one bucket per millisecond: the estimate is exact there.
      const sql = yield* SqlClient.SqlClient
      const [small] = yield* sql<{ p: number }>`
        select percentile_cont(0.1) within group (order by duration_ms) as p from runs
        where monitor_id = ${monitor.id} and started_at >= now() - interval '30 days'`
      expect(small!.p).toBeLessThan(100)
    }), 60_000)
}

/** The refresh the service's background fiber runs every minute (either backing). */
const serviceRefresh = Effect.flatMap(Rollup, (rollup) => rollup.refreshAll)

const DAY_MS = 86_400_000

/**
 * Late and long runs (docs/statistics.md, "What backs the rollup"): whatever the backing, a run counts
 * however far back it started and however long after that it was written. Before sql/0017 the
 * continuous aggregate was refreshed by a TimescaleDB policy over the last 7 days only: runs written
 * into hours materialized before that never reached it, and until a refresh none written into a
 * materialized hour did.
 */
const lateRunsTest = (it: It) =>
  it.effect("late and long runs count at once and after refreshes: 150,000 runs over 10 days, 20,000 more 10 days back, an 8.5-day run", () =>
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const kind = yield* rollupKind
      const monitor = yield* createMonitor()
      const check = (label: string, extra: (body: any) => void = () => {}) =>
        Effect.gen(function*() {
          const response = yield* percentiles(monitor.id)
          expect(response.status, label).toBe(200)
          expect(response.headers["x-statistics-method"], label).toBe("approximate")
          yield* expectWithinOnePercent(monitor.id, response.body)
          extra(response.body)
          return response.body
        })

      // Written after the start-up refresh, as a bulk import would be: most of it below the
      // aggregate's watermark, in hours TimescaleDB has yet to re-materialize.
      yield* seedLarge(monitor.id, 150_000, LOGNORMAL, 0.4, 10)
      const imported = yield* check("after the import", (body) => expect(body.sampleSize).toBe(150_000))
      // What the TimescaleDB policy used to do: re-materialize the last 7 days only (this left the
      // statistics at 104,299 runs). The 3 days before stay invalidated and are read from raw runs.
      const policyWindowRefresh = kind === "continuous aggregate"
        ? sql`call refresh_continuous_aggregate('public.run_duration_hourly_cagg', now() - interval '7 days', date_trunc('hour', now()) - interval '1 hour')`
        : Effect.void
      yield* policyWindowRefresh
      yield* check("after a 7-day refresh", (body) => expect(body).toEqual(imported))
      yield* serviceRefresh
      yield* check("after the service's refresh", (body) => expect(body).toEqual(imported))

      // After that refresh: 20,000 slow runs that started 10 days ago (hours materialized long
      // since), and a success ping whose durationMs puts its start 8.5 days back.
      yield* seed(monitor.id, Array.from({ length: 20_000 }, (_, i) => ({ minutesAgo: 10 * 1440 - 300 + (i % 360), durationMs: 900_000 + i })))
      const longRun = Math.round(8.5 * DAY_MS)
      const ping = yield* sendPing(monitor.id, "success", { body: { durationMs: longRun } })
      expect(ping.status).toBe(200)
      const [run] = yield* sql<{ age: number }>`
        select extract(epoch from now() - started_at)::float8 * 1000 as age from runs where id = ${ping.body.runId}`
      expect(Math.abs(run!.age - longRun)).toBeLessThan(60_000)
      const expectLate = (body: any) => {
        expect(body.sampleSize).toBe(170_001)
        expect(body.percentiles.max).toBe(longRun)
        expect(body.percentiles.p95).toBeGreaterThan(imported.percentiles.p95)
      }
      const late = yield* check("right after the late writes", expectLate)
      // The 7-day refresh again: the 10-day-old hours stay invalidated, still read from raw runs.
      yield* policyWindowRefresh
      yield* check("after a 7-day refresh", (body) => expect(body).toEqual(late))
      yield* serviceRefresh
      yield* check("after the service's refresh", (body) => expect(body).toEqual(late))

      // And the refresh left nothing behind: every hour before the last but one is materialized.
      const cut = yield* sql<{ cut: Date }>`select date_trunc('hour', now(), 'UTC') - interval '1 hour' as cut`.pipe(
        Effect.map((rows) => rows[0]!.cut)
      )
      if (kind === "continuous aggregate") {
        const repo = yield* Effect.provide(StatsRepo, StatsRepo.Default)
        expect(yield* repo.staleHours(new Date(cut.getTime() - 31 * DAY_MS), cut)).toEqual([])
      }
      expect(yield* rollupMismatches(monitor.id, cut)).toBe(0)
    }), 120_000)

/** The rollup rows of one monitor's hours before `cut` that differ from a recomputation from raw runs. */
const rollupMismatches = (monitorId: string, cut: Date) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const [diff] = yield* sql<{ n: number }>`
      select count(*)::int as n from (
        select date_trunc('hour', started_at, 'UTC') as bucket, count(*) as runs, sum(duration_ms) as s,
               min(duration_ms) as mn, max(duration_ms) as mx
        from runs where monitor_id = ${monitorId} and status = 'SUCCESS' and duration_ms is not null
          and started_at < ${cut}
        group by 1
      ) raw full join (
        select * from run_duration_hourly where monitor_id = ${monitorId} and bucket < ${cut}
      ) r using (bucket)
      where r.runs is distinct from raw.runs or r.sum_ms is distinct from raw.s
         or r.min_ms is distinct from raw.mn or r.max_ms is distinct from raw.mx`
    return diff!.n
  }).pipe(Effect.orDie)

const incrementalRefreshTest = (it: It) =>
  it.effect("the rollup table is refreshed incrementally: inserts, updates and deletes are picked up", () =>
    Effect.gen(function*() {
      expect(yield* rollupKind).toBe("table")
      const sql = yield* SqlClient.SqlClient
      const monitor = yield* createMonitor()
      yield* seedLarge(monitor.id, 110_000, LOGNORMAL, 0.1)
      // Hours before this one are complete by the time of any later query (taken first: no race at :00).
      const hourNow = sql<{ cut: Date }>`select date_trunc('hour', now(), 'UTC') as cut`.pipe(Effect.map((r) => r[0]!.cut))
      const firstCut = yield* hourNow
      const first = yield* percentiles(monitor.id)
      expect(first.headers["x-statistics-method"]).toBe("approximate")
      yield* expectWithinOnePercent(monitor.id, first.body)
      // The query brought the completed hours up to date; the hour in progress is the background's.
      const [dirty] = yield* sql<{ n: number }>`
        select count(*)::int as n from run_duration_dirty
        where monitor_id = ${monitor.id} and bucket < ${firstCut}`
      expect(dirty!.n).toBe(0)

      // New runs in old, already rolled-up hours (slow ones, so the upper percentiles move),
      // a success turned into a failure, and deleted runs.
      yield* seed(monitor.id, Array.from({ length: 12_000 }, (_, i) => ({ minutesAgo: 600 + (i % 5000) * 5, durationMs: 900_000 + i })))
      yield* sql`update runs set status = 'FAIL' where id in (
        select id from runs where monitor_id = ${monitor.id} and status = 'SUCCESS' order by duration_ms desc limit 500)`
      yield* sql`delete from runs where id in (
        select id from runs where monitor_id = ${monitor.id} and started_at > now() - interval '29 days'
        order by duration_ms limit 3000)`
      const [marked] = yield* sql<{ n: number }>`select count(*)::int as n from run_duration_dirty where monitor_id = ${monitor.id}`
      expect(marked!.n).toBeGreaterThan(0)
      const secondCut = yield* hourNow
      const second = yield* percentiles(monitor.id)
      expect(second.headers["x-statistics-method"]).toBe("approximate")
      yield* expectWithinOnePercent(monitor.id, second.body)
      expect(second.body.sampleSize).toBe(first.body.sampleSize + 12_000 - 500 - 3000)
      expect(second.body.percentiles.p95).toBeGreaterThan(first.body.percentiles.p95)

      // The rollup rows of the completed hours equal a recomputation from raw runs, hour by hour.
      expect(yield* rollupMismatches(monitor.id, secondCut)).toBe(0)
    }), 60_000)

/**
 * Runs in the three hours before this one, written with the triggers off, and the sweep's mark
 * moved back to the first of them: what the table holds when runs were written during hours that
 * have ended since and no sweep has run yet (the first minute of an hour, or a service that was down).
 */
const unsweptHours = (monitorIds: ReadonlyArray<string>) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const cut = yield* sql<{ cut: Date }>`select date_trunc('hour', now(), 'UTC') as cut`.pipe(Effect.map((rows) => rows[0]!.cut))
    yield* sql.withTransaction(Effect.gen(function*() {
      yield* sql`update run_duration_swept set until = ${cut}::timestamptz - interval '3 hours'`
      yield* sql`set local session_replication_role = replica`
      for (const monitorId of monitorIds) {
        const orgId = yield* orgOf(monitorId)
        yield* sql`
          insert into runs (id, monitor_id, org_id, status, started_at, finished_at, duration_ms)
          select gen_random_uuid(), ${monitorId}, ${orgId}, 'SUCCESS', t.at, t.at + interval '1 second', 1000 + i
          from generate_series(0, 149) as i, lateral (select ${cut}::timestamptz - interval '3 hours' + i * interval '72 seconds' as at) t`
      }
    }))
    return cut
  }).pipe(Effect.orDie)

const sweepTests = (it: It) => {
  it.effect("a run of the hour in progress is not marked on its own; a run of an hour that ended is, at once", () =>
    Effect.gen(function*() {
      expect(yield* rollupKind).toBe("table")
      const sql = yield* SqlClient.SqlClient
      const monitor = yield* createMonitor()
      const hourNow = sql<{ cut: Date }>`select date_trunc('hour', clock_timestamp(), 'UTC') as cut`.pipe(Effect.map((r) => r[0]!.cut))
      const marks = sql<{ bucket: Date }>`select bucket from run_duration_dirty where monitor_id = ${monitor.id} order by bucket`
      const before = yield* hourNow
      yield* seed(monitor.id, [{ minutesAgo: 0, durationMs: 1234 }])
      const after = yield* hourNow
      // (Unless the hour turned between the two readings: then the run's hour had ended when written.)
      if (before.getTime() === after.getTime()) expect(yield* marks).toEqual([])
      yield* seed(monitor.id, [{ minutesAgo: 180, durationMs: 999 }])
      const marked = (yield* marks).map((k) => k.bucket.getTime())
      expect(marked.filter((t) => t < before.getTime() - 2 * 3_600_000)).toHaveLength(1)
      // Either way, a query's answer counts both.
      const response = yield* percentiles(monitor.id, "?window=1d")
      expect(response.body.sampleSize).toBe(2)
    }))

  it.effect("the sweep marks every (monitor, hour) that ended since the last sweep, once, and moves its mark", () =>
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const repo = yield* Effect.provide(StatsRepo, StatsRepo.Default)
      const a = yield* createMonitor()
      const b = yield* createMonitor()
      const idle = yield* createMonitor()
      const cut = yield* unsweptHours([a.id, b.id])
      const marks = (id: string) =>
        sql<{ bucket: Date }>`select bucket from run_duration_dirty where monitor_id = ${id} order by bucket`.pipe(
          Effect.map((rows) => rows.map((r) => (cut.getTime() - r.bucket.getTime()) / 3_600_000))
        )
      expect(yield* marks(a.id)).toEqual([])
      const swept = yield* repo.sweep
      expect(swept).toBeGreaterThanOrEqual(6)
      const [state] = yield* sql<{ until: Date }>`select until from run_duration_swept`
      expect(state!.until.getTime()).toBeGreaterThanOrEqual(cut.getTime())
      // Hours before now, counted back: 3, 2 and 1 hours before this one.
      expect(yield* marks(a.id)).toEqual([3, 2, 1])
      expect(yield* marks(b.id)).toEqual([3, 2, 1])
      expect(yield* marks(idle.id)).toEqual([])
      expect(yield* repo.sweep).toBe(0)
      // Its row deleted by hand, the sweep starts over from the first run and puts the row back.
      yield* sql`delete from run_duration_dirty where monitor_id = ${b.id}`
      yield* sql`delete from run_duration_swept`
      expect(yield* repo.sweep).toBeGreaterThanOrEqual(6)
      expect(yield* marks(b.id)).toEqual([3, 2, 1])
      const [again] = yield* sql<{ until: Date }>`select until from run_duration_swept`
      expect(again!.until.getTime()).toBeGreaterThanOrEqual(cut.getTime())
      // The refresh consumes the marks; the rollup then equals raw runs, hour by hour.
      yield* repo.refreshDirty(a.id, 100, true)
      expect(yield* marks(a.id)).toEqual([])
      expect(yield* rollupMismatches(a.id, cut)).toBe(0)
      const [rows] = yield* sql<{ n: number }>`select count(*)::int as n from run_duration_hourly where monitor_id = ${a.id}`
      expect(rows!.n).toBe(3)
    }))

  it.effect("a query does not wait for the sweep: it marks and recomputes its monitor's hours that ended", () =>
    Effect.gen(function*() {
      const monitor = yield* createMonitor()
      const cut = yield* unsweptHours([monitor.id])
      yield* percentiles(monitor.id, "?window=1d")
      expect(yield* rollupMismatches(monitor.id, cut)).toBe(0)
      const sql = yield* SqlClient.SqlClient
      const [rows] = yield* sql<{ n: number }>`select count(*)::int as n from run_duration_hourly where monitor_id = ${monitor.id}`
      expect(rows!.n).toBe(3)
    }))
}

layer(TestServer(), { excludeTestServices: true, timeout: 120_000 })("duration percentiles", (it) => {
  it.effect("p50 of 1..100 is 51: percentile_cont interpolation, halves rounded up, sample stddev", () =>
    Effect.gen(function*() {
      const monitor = yield* createMonitor()
      const values = Array.from({ length: 100 }, (_, i) => i + 1)
      yield* seed(monitor.id, values.map((v, i) => ({ minutesAgo: 5 + i, durationMs: v })))
      const response = yield* percentiles(monitor.id, "?window=30d")
      expect(response.status).toBe(200)
      expect(response.headers["x-statistics-method"]).toBe("exact")
      expect(Object.keys(response.body).sort()).toEqual(["mean", "monitorId", "percentiles", "period", "sampleSize", "stddev"])
      expect(response.body).toMatchObject({ monitorId: monitor.id, period: "30d", sampleSize: 100 })
      expect(response.body.percentiles).toEqual({ p50: 51, p75: 75, p90: 90, p95: 95, p99: 99, max: 100 })
      expectStatistics(response.body, referenceStatistics(values))
      expect(response.body.mean).toBe(50.5)
    }))

  it.effect("random durations with ties match the reference implementation exactly", () =>
    Effect.gen(function*() {
      const monitor = yield* createMonitor()
      const random = prng(7)
      const values = Array.from({ length: 777 }, () => Math.floor(random() ** 3 * 250_000))
      values.push(values[3]!, values[3]!, 0)
      yield* seed(monitor.id, values.map((v, i) => ({ minutesAgo: 1 + (i % 600) * 60, durationMs: v })))
      const response = yield* percentiles(monitor.id)
      expect(response.status).toBe(200)
      expect(response.body.period).toBe("30d")
      expectStatistics(response.body, referenceStatistics(values))
    }))

  it.effect("only successful completed runs with a duration that started inside the window count", () =>
    Effect.gen(function*() {
      const monitor = yield* createMonitor()
      const inside = [120, 340, 560, 780]
      yield* seed(monitor.id, [
        ...inside.map((v, i) => ({ minutesAgo: 10 + i * 900, durationMs: v })), // within 30 days
        { minutesAgo: 30 * 1440 + 60, durationMs: 99_999 }, // started before the window
        { minutesAgo: -5, durationMs: 88_888 }, // started after now (clock skew): outside too
        { minutesAgo: 20, durationMs: 77_777, status: "FAIL" },
        { minutesAgo: 20, durationMs: null, status: "RUNNING" },
        { minutesAgo: 30, durationMs: null } // success without a duration
      ])
      const all = yield* percentiles(monitor.id, "?window=30d")
      expectStatistics(all.body, referenceStatistics(inside))
      // A narrower window keeps only the newest two.
      const day = yield* percentiles(monitor.id, "?window=1d")
      expect(day.body.period).toBe("1d")
      expectStatistics(day.body, referenceStatistics([120, 340]))
      const hour = yield* percentiles(monitor.id, "?window=1h")
      expectStatistics(hour.body, referenceStatistics([120]))
    }))

  it.effect("no runs in the window: sampleSize 0 and nulls; one run: stddev null", () =>
    Effect.gen(function*() {
      const monitor = yield* createMonitor()
      const empty = yield* percentiles(monitor.id, "?window=2w")
      expect(empty.status).toBe(200)
      expect(empty.body).toEqual({ monitorId: monitor.id, period: "2w", sampleSize: 0, percentiles: null, mean: null, stddev: null })
      yield* seed(monitor.id, [
        { minutesAgo: 3 * 1440, durationMs: 5_000, status: "FAIL" },
        { minutesAgo: 20 * 1440, durationMs: 4_321 }
      ])
      const stillEmpty = yield* percentiles(monitor.id, "?window=1w")
      expect(stillEmpty.body).toMatchObject({ sampleSize: 0, percentiles: null, mean: null, stddev: null })
      const single = yield* percentiles(monitor.id, "?window=3w")
      expect(single.body).toEqual({
        monitorId: monitor.id,
        period: "3w",
        sampleSize: 1,
        percentiles: { p50: 4321, p75: 4321, p90: 4321, p95: 4321, p99: 4321, max: 4321 },
        mean: 4321,
        stddev: null
      })
    }))

  it.effect("window: <n>h, <n>d or <n>w from 1h to 400d; anything else is a 400 naming window", () =>
    Effect.gen(function*() {
      const monitor = yield* createMonitor()
      for (const window of ["0h", "0d", "401d", "58w", "9601h", "30x", "abc", "1.5d", "-1d", "30", "d", "30 d", "30D", ""]) {
        const response = yield* percentiles(monitor.id, `?window=${encodeURIComponent(window)}`)
        expect(response.status, `window=${window}`).toBe(400)
        expect(response.body._tag).toBe("ValidationError")
        expect(response.body.path).toBe("window")
        expect(response.body.message).toContain("window")
      }
      for (const window of ["1h", "24h", "400d", "2w", "57w", "9600h", "30d"]) {
        const response = yield* percentiles(monitor.id, `?window=${window}`)
        expect(response.status, `window=${window}`).toBe(200)
        expect(response.body.period).toBe(window)
      }
      const byDefault = yield* percentiles(monitor.id)
      expect(byDefault.status).toBe(200)
      expect(byDefault.body.period).toBe("30d")
    }))

  it.effect("404 for an unknown monitor and for another organization's; read scope suffices, ping does not", () =>
    Effect.gen(function*() {
      const mine = yield* createMonitor()
      for (const id of ["3f0c6f9e-0000-4000-8000-000000000000", "not-a-uuid"]) {
        const response = yield* percentiles(id)
        expect(response.status).toBe(404)
        expect(response.body._tag).toBe("NotFound")
      }
      const other = yield* createOrganization("stats-other")
      const theirs = yield* call("POST", "/api/monitors", {
        token: other.token,
        body: { name: "theirs", schedule: { type: "interval", expression: "1h" } }
      })
      expect(theirs.status).toBe(201)
      expect((yield* percentiles(theirs.body.id)).status).toBe(404)
      expect((yield* percentiles(mine.id, "", other.token)).status).toBe(404)
      expect((yield* percentiles(theirs.body.id, "", other.token)).status).toBe(200)
      const read = yield* createToken("read")
      expect((yield* percentiles(mine.id, "", read.token)).status).toBe(200)
      const ping = yield* createToken("ping")
      expect((yield* percentiles(mine.id, "", ping.token)).status).toBe(403)
      expect((yield* percentiles(mine.id, "", null)).status).toBe(401)
    }))

  it.effect("runs recorded by pings are counted", () =>
    Effect.gen(function*() {
      const monitor = yield* createMonitor()
      for (const durationMs of [1200, 800, 1000]) {
        expect((yield* sendPing(monitor.id, "success", { body: { durationMs } })).status).toBe(200)
      }
      expect((yield* sendPing(monitor.id, "fail", { body: { durationMs: 50, exitCode: 1 } })).status).toBe(200)
      const response = yield* percentiles(monitor.id, "?window=1h")
      expectStatistics(response.body, referenceStatistics([1200, 800, 1000]))
    }))

  it.effect("exact up to 100,000 runs; the 100,001st switches to the rollup", () =>
    Effect.gen(function*() {
      const monitor = yield* createMonitor()
      yield* seedLarge(monitor.id, 100_000, LOGNORMAL, 0.75)
      const sql = yield* SqlClient.SqlClient
      const [{ n }] = (yield* sql<{ n: number }>`
        select count(*)::int as n from runs where monitor_id = ${monitor.id} and started_at >= now() - interval '30 days'`) as any
      // Top up to exactly 100,000 in the window.
      yield* seed(monitor.id, Array.from({ length: 100_000 - n }, (_, i) => ({ minutesAgo: 30 + i, durationMs: 40_000 + i })))
      yield* materialize
      const atLimit = yield* percentiles(monitor.id)
      expect(atLimit.body.sampleSize).toBe(100_000)
      expect(atLimit.headers["x-statistics-method"]).toBe("exact")
      const exact = yield* exactFromSql(monitor.id)
      expect(atLimit.body.percentiles.p50).toBe(halfUp(exact.p[0]!))
      expect(atLimit.body.percentiles.p99).toBe(halfUp(exact.p[4]!))
      yield* seed(monitor.id, [{ minutesAgo: 2, durationMs: 45_000 }])
      const above = yield* percentiles(monitor.id)
      expect(above.body.sampleSize).toBe(100_001)
      expect(above.headers["x-statistics-method"]).toBe("approximate")
      yield* expectWithinOnePercent(monitor.id, above.body)
    }), 60_000)

  approximatePathTests(it)
  lateRunsTest(it)

  if (!hasTimescale) {
    incrementalRefreshTest(it)
    sweepTests(it)
  }
})

// On a TimescaleDB server, plain mode too (TIMESCALEDB=off): the rollup is the service's table.
// Last in this file: the fixture sets the variable for the rest of this worker's process.
if (hasTimescale) {
  layer(TestServer({}, { TIMESCALEDB: "off" }), { excludeTestServices: true, timeout: 120_000 })(
    "duration percentiles (plain PostgreSQL on a TimescaleDB server)",
    (it) => {
      it.effect("the rollup is the service's table", () =>
        Effect.gen(function*() {
          expect(yield* rollupKind).toBe("table")
        }))
      approximatePathTests(it)
      lateRunsTest(it)
      incrementalRefreshTest(it)
      sweepTests(it)
    }
  )
}
