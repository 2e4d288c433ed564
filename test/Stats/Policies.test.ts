import { SqlClient } from "@effect/sql"
import { expect, layer, type Vitest } from "@effect/vitest"
import { Effect, type Layer } from "effect"
import { AppConfig } from "../../src/Config.js"
import { applyTimescalePolicies, purgeOldRuns } from "../../src/Db/Policies.js"
import { call, createMonitor, TestServer } from "../support/fixture.js"
import { timescaleAvailable } from "../support/timescale.js"

const hasTimescale = await timescaleAvailable()

type It = Vitest.MethodsNonLive<Layer.Layer.Success<ReturnType<typeof TestServer>>, true>

const withConfig = <A, E, R>(effect: Effect.Effect<A, E, R>, retention: number, compressAfter: number) =>
  Effect.flatMap(AppConfig, (config) =>
    Effect.provideService(effect, AppConfig, { ...config, runsRetentionDays: retention, runsCompressAfterDays: compressAfter }))

const jobs = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  return yield* sql<{ proc_name: string; hypertable_name: string; interval: string }>`
    select proc_name, hypertable_name,
           coalesce(config ->> 'drop_after', config ->> 'compress_after', config ->> 'start_offset') as interval
    from timescaledb_information.jobs
    where hypertable_name in ('runs', 'run_duration_hourly_cagg')
    order by proc_name, hypertable_name`
}).pipe(Effect.orDie)

/** Runs 100 days old and 1 day old, the rollup refreshed; then the purge with 90 days' retention. */
const purgeTest = (it: It) =>
  it.effect("without TimescaleDB policies the service purges old runs and their rollup hours", () =>
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const monitor = yield* createMonitor()
      const [{ org_id }] = (yield* sql<{ org_id: string }>`select org_id from monitors where id = ${monitor.id}`) as any
      yield* sql`
        insert into runs (id, monitor_id, org_id, status, started_at, finished_at, duration_ms)
        select gen_random_uuid(), ${monitor.id}, ${org_id}, 'SUCCESS', now() - d * interval '1 day',
               now() - d * interval '1 day' + interval '1 second', 1000 * d
        from generate_series(1, 100) d`
      const before = yield* call("GET", `/api/monitors/${monitor.id}/percentiles?window=400d`)
      expect(before.body.sampleSize).toBe(100)
      const deleted = yield* withConfig(purgeOldRuns, 90, 0)
      expect(deleted).toBe(11) // days 90..100: day 90 started a moment before now − 90 days
      const after = yield* call("GET", `/api/monitors/${monitor.id}/percentiles?window=400d`)
      expect(after.body.sampleSize).toBe(89)
      expect(after.body.percentiles.max).toBe(89_000)
      const [old] = yield* sql<{ n: number }>`
        select count(*)::int as n from run_duration_hourly
        where monitor_id = ${monitor.id} and bucket < now() - interval '90 days'`
      expect(old!.n).toBe(0)
      // Retention 0 keeps everything.
      expect(yield* withConfig(purgeOldRuns, 0, 0)).toBe(0)
    }))

layer(TestServer({ runsRetentionDays: 90, runsCompressAfterDays: 0 }), { excludeTestServices: true, timeout: 120_000 })(
  "storage policies",
  (it) => {
    it.effect("the rollup is a real-time continuous aggregate with TimescaleDB, else the service's table", () =>
      Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        const [kind] = yield* sql<{ cagg: boolean; table: boolean }>`
          select to_regclass('public.run_duration_hourly_cagg') is not null as cagg,
                 to_regclass('public.run_duration_hourly_data') is not null as table`
        expect(kind).toEqual({ cagg: hasTimescale, table: !hasTimescale })
        if (hasTimescale) {
          const [cagg] = yield* sql<{ materialized_only: boolean }>`
            select materialized_only from timescaledb_information.continuous_aggregates
            where view_name = 'run_duration_hourly_cagg'`
          expect(cagg!.materialized_only).toBe(false)
        }
      }))

    if (hasTimescale) {
      it.effect("TimescaleDB: retention and compression policies follow the configuration, and change with it", () =>
        Effect.gen(function*() {
          const sql = yield* SqlClient.SqlClient
          // As started: 90 days' retention on runs and on the rollup, no compression. No refresh policy:
          // the service refreshes the aggregate itself (sql/0017, src/Stats/Rollup.ts).
          expect(yield* jobs).toEqual([
            { proc_name: "policy_retention", hypertable_name: "run_duration_hourly_cagg", interval: "90 days" },
            { proc_name: "policy_retention", hypertable_name: "runs", interval: "90 days" }
          ])
          // A restart with other settings replaces them; applying twice changes nothing.
          yield* withConfig(applyTimescalePolicies, 30, 7)
          yield* withConfig(applyTimescalePolicies, 30, 7)
          expect(yield* jobs).toEqual([
            { proc_name: "policy_compression", hypertable_name: "runs", interval: "7 days" },
            { proc_name: "policy_retention", hypertable_name: "run_duration_hourly_cagg", interval: "30 days" },
            { proc_name: "policy_retention", hypertable_name: "runs", interval: "30 days" }
          ])
          const [segment] = yield* sql<{ attname: string }>`
            select attname from timescaledb_information.compression_settings
            where hypertable_name = 'runs' and segmentby_column_index is not null`
          expect(segment!.attname).toBe("monitor_id")
          // 0 turns both off.
          yield* withConfig(applyTimescalePolicies, 0, 0)
          expect(yield* jobs).toEqual([])
        }))
    } else {
      purgeTest(it)
    }
  }
)

// Last in this file: the fixture sets TIMESCALEDB for the rest of this worker's process.
if (hasTimescale) {
  layer(TestServer({ runsRetentionDays: 90 }, { TIMESCALEDB: "off" }), { excludeTestServices: true, timeout: 120_000 })(
    "storage policies (plain PostgreSQL on a TimescaleDB server)",
    (it) => {
      purgeTest(it)
    }
  )
}
