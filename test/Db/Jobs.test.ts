import { SqlClient } from "@effect/sql"
import { describe, expect, it, layer, type Vitest } from "@effect/vitest"
import { Duration, Effect, type Layer } from "effect"
import { vi } from "vitest"
import { JOB_WATCH_INTERVAL, JobWatch, jobWarnings, type JobState, PORTAL_CHECK_ERROR } from "../../src/Db/Jobs.js"
import { call, createToken, TestServer } from "../support/fixture.js"
import { timescaleAvailable } from "../support/timescale.js"

const hasTimescale = await timescaleAvailable()

const job = (jobId: number, totalFailures: number, lastRunStatus: JobState["lastRunStatus"]): JobState => ({
  jobId,
  kind: "compression",
  procedure: "_timescaledb_functions.policy_compression",
  relation: "runs",
  scheduleIntervalSeconds: 43_200,
  config: {},
  status: "scheduled",
  lastRunStartedAt: null,
  lastRunStatus,
  lastSuccessAt: null,
  nextStartAt: null,
  totalRuns: totalFailures + 1,
  totalFailures,
  lastError: lastRunStatus === "failed" ? { at: null, message: "boom", sqlState: "XX000" } : null,
  hint: null
})

describe("jobWarnings: when the watcher warns", () => {
  const hour = 3_600_000
  it("a job seen failing warns; one seen healthy does not, until its failures grow", () => {
    const first = jobWarnings(new Map(), [job(1, 2, "failed"), job(2, 0, "succeeded")], 0, hour)
    expect(first.warn.map((w) => [w.job.jobId, w.newFailures])).toEqual([[1, 2]])
    const grown = jobWarnings(first.seen, [job(1, 2, "failed"), job(2, 1, "failed")], 60_000, hour)
    expect(grown.warn.map((w) => [w.job.jobId, w.newFailures])).toEqual([[2, 1]])
  })

  it("at most once per job per interval: growth within it is told with the next warning", () => {
    let state = jobWarnings(new Map(), [job(1, 1, "failed")], 0, hour)
    for (const [failures, at] of [[2, 5], [3, 10], [4, 55]] as const) {
      state = jobWarnings(state.seen, [job(1, failures, "failed")], at * 60_000, hour)
      expect(state.warn, `${failures} failures at ${at} min`).toEqual([])
    }
    state = jobWarnings(state.seen, [job(1, 5, "failed")], 61 * 60_000, hour)
    expect(state.warn.map((w) => w.newFailures)).toEqual([4])
    // No new failure: silence, however long.
    expect(jobWarnings(state.seen, [job(1, 5, "succeeded")], 10 * hour, hour).warn).toEqual([])
  })

  it("a reset count is taken as it is; a removed job is forgotten", () => {
    const first = jobWarnings(new Map(), [job(1, 9, "failed")], 0, hour)
    const reset = jobWarnings(first.seen, [job(1, 0, "succeeded")], 2 * hour, hour)
    expect(reset.warn).toEqual([])
    expect(jobWarnings(reset.seen, [job(1, 1, "failed")], 3 * hour, hour).warn.map((w) => w.newFailures)).toEqual([1])
    expect([...jobWarnings(first.seen, [], hour, hour).seen.keys()]).toEqual([])
  })

  it("the watcher looks every few minutes, not every second (TestClock adjusts stay cheap)", () => {
    expect(Duration.toMillis(JOB_WATCH_INTERVAL)).toBeGreaterThanOrEqual(60_000)
  })
})

const storage = (token?: string) => call("GET", "/api/admin/storage", token === undefined ? {} : { token })

/** Console lines written while `effect` runs (the service's logger writes to the console). */
const captureLog = <A, E, R>(effect: Effect.Effect<A, E, R>) =>
  Effect.acquireUseRelease(
    Effect.sync(() => {
      const lines: Array<string> = []
      const spies = (["log", "error", "warn", "info"] as const).map((method) =>
        vi.spyOn(console, method).mockImplementation((...args: Array<unknown>) => void lines.push(args.map(String).join(" ")))
      )
      return { lines, spies }
    }),
    ({ lines }) => Effect.map(effect, (result) => ({ result, lines })),
    ({ spies }) => Effect.sync(() => spies.forEach((spy) => spy.mockRestore()))
  )

type It = Vitest.MethodsNonLive<Layer.Layer.Success<ReturnType<typeof TestServer>>, true>

const accessTest = (it: It) =>
  it.effect("GET /api/admin/storage needs an admin token: read and write are 403, none is 401", () =>
    Effect.gen(function*() {
      for (const scope of ["read", "write"] as const) {
        const { token } = yield* createToken(scope)
        const response = yield* storage(token)
        expect(response.status, scope).toBe(403)
        expect(response.body._tag).toBe("Forbidden")
      }
      expect((yield* call("GET", "/api/admin/storage", { token: null })).status).toBe(401)
    }))

layer(TestServer(), { excludeTestServices: true, timeout: 120_000 })("storage status and TimescaleDB jobs", (it) => {
  accessTest(it)

  if (!hasTimescale) {
    it.effect("plain PostgreSQL: mode postgresql, no jobs, the rollup table refreshed by the service", () =>
      Effect.gen(function*() {
        const response = yield* storage()
        expect(response.status).toBe(200)
        expect(response.body).toMatchObject({
          mode: "postgresql",
          timescaleVersion: null,
          jobs: [],
          rollup: { backing: "table", refreshedBy: "service", refreshIntervalSeconds: 60 }
        })
        expect(Date.parse(response.body.checkedAt)).not.toBeNaN()
      }))
    return
  }

  it.effect("TimescaleDB: a failing job shows in GET /api/admin/storage with its error, and the service warns once", () =>
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      // The default configuration compresses runs after 7 days: a policy_compression job, which
      // TimescaleDB runs at once. Wait for its first run (the scheduler starts within seconds).
      const compressionJob = (body: any) => (body.jobs as Array<any>).find((j) => j.kind === "compression")
      let body: any
      for (let i = 0; i < 120; i++) {
        body = (yield* storage()).body
        if ((compressionJob(body)?.totalRuns ?? 0) > 0) break
        yield* Effect.sleep("500 millis")
      }
      let found = compressionJob(body)
      expect(found, JSON.stringify(body)).toBeDefined()
      if (found.lastRunStatus === "succeeded") {
        // A server whose jobs work (no portal bug): break this one so that it fails as jobs can.
        yield* sql`select alter_job(${found.jobId}, config => '{"hypertable_id": 2147483647, "compress_after": "7 days"}'::jsonb, next_start => now())`
        for (let i = 0; i < 120; i++) {
          body = (yield* storage()).body
          if (compressionJob(body).totalFailures > 0) break
          yield* Effect.sleep("500 millis")
        }
        found = compressionJob(body)
      }
      expect(body.mode).toBe("timescaledb")
      expect(body.timescaleVersion).toMatch(/^\d+\.\d+\.\d+/)
      expect(body.rollup).toMatchObject({ backing: "continuous-aggregate", refreshedBy: "service" })
      expect(found).toMatchObject({
        kind: "compression",
        relation: "runs",
        procedure: expect.stringMatching(/\.policy_compression$/),
        scheduleIntervalSeconds: expect.any(Number),
        lastRunStatus: "failed",
        lastError: { message: expect.any(String) }
      })
      expect(found.totalFailures).toBeGreaterThan(0)
      expect(Date.parse(found.lastRunStartedAt)).not.toBeNaN()
      // On PostgreSQL 15.20 with TimescaleDB 2.28.3 (the test server), every job fails after its work:
      // the endpoint says what that error means.
      if (PORTAL_CHECK_ERROR.test(found.lastError.message)) expect(found.hint).toMatch(/docs\/operations\.md/)
      // Only the service's relations: not TimescaleDB's own jobs (job history retention, telemetry).
      expect((body.jobs as Array<any>).every((j) => ["runs", "run_duration_hourly_cagg", "run_health_hourly_cagg"].includes(j.relation))).toBe(true)

      // A watcher that has not seen the job yet (as at start-up) warns, naming the job and its error.
      const { lines } = yield* captureLog(Effect.scoped(Effect.gen(function*() {
        const watch = yield* JobWatch
        yield* watch.check
        // Looking again at once: no second warning for the same failures.
        yield* watch.check
        yield* Effect.sleep("200 millis") // its own first look, forked at start, is done too
      }).pipe(Effect.provide(JobWatch.Default))))
      const warnings = lines.filter((line) => line.includes(`TimescaleDB job ${found.jobId} `))
      expect(warnings, lines.join("\n").slice(0, 2000)).toHaveLength(1)
      expect(warnings[0]).toMatch(/level=WARN/)
      expect(warnings[0]).toContain("compression of runs")
      // (logfmt escapes the quotes of the message)
      expect(warnings[0]).toContain(JSON.stringify(found.lastError.message).slice(1, -1))
    }))
})

// Plain mode on a TimescaleDB server. Last in this file: the fixture sets TIMESCALEDB for the rest
// of this worker's process.
if (hasTimescale) {
  layer(TestServer({}, { TIMESCALEDB: "off" }), { excludeTestServices: true, timeout: 120_000 })(
    "storage status (plain PostgreSQL on a TimescaleDB server)",
    (it) => {
      it.effect("mode postgresql, no jobs, the rollup table refreshed by the service", () =>
        Effect.gen(function*() {
          const response = yield* storage()
          expect(response.status).toBe(200)
          expect(response.body).toMatchObject({
            mode: "postgresql",
            timescaleVersion: null,
            jobs: [],
            rollup: { backing: "table", refreshedBy: "service" }
          })
        }))
    }
  )
}
