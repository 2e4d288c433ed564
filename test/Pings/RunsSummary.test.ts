import { expect, layer } from "@effect/vitest"
import { SqlClient } from "@effect/sql"
import { Effect } from "effect"
import { call, createMonitor, createOrganization, sendPing, TestServer } from "../support/fixture.js"

/**
 * GET /api/monitors/{id}/runs/summary: every run that started in the window ending now, by status
 * (what the dashboard's "Runs (30 d)" card shows). The percentiles' sampleSize counts only the
 * successful runs with a duration; this counts failed, running and duration-less runs too.
 */

const summary = (monitorId: string, query = "", token?: string) =>
  call("GET", `/api/monitors/${monitorId}/runs/summary${query}`, token === undefined ? {} : { token })

layer(TestServer(), { excludeTestServices: true, timeout: 120_000 })("runs summary", (it) => {
  it.effect("counts every run of the window whatever its status; older runs only with a longer window", () =>
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const monitor = yield* createMonitor()

      const empty = yield* summary(monitor.id)
      expect(empty.status).toBe(200)
      expect(empty.body).toMatchObject({ monitorId: monitor.id, period: "30d", total: 0, succeeded: 0, failed: 0, running: 0 })
      expect(Date.parse(empty.body.to) - Date.parse(empty.body.from)).toBe(30 * 86_400_000)

      // One failed run only: the percentiles have no sample, the summary counts it.
      expect((yield* sendPing(monitor.id, "fail", { body: { exitCode: 1, durationMs: 900 } })).status).toBe(200)
      expect((yield* call("GET", `/api/monitors/${monitor.id}/percentiles`)).body.sampleSize).toBe(0)
      expect((yield* summary(monitor.id, "?window=30d")).body).toMatchObject({ total: 1, succeeded: 0, failed: 1, running: 0 })

      // A success, a failure without a duration, a run still going, and a success 40 days ago.
      expect((yield* sendPing(monitor.id, "success", { body: { durationMs: 1200 } })).status).toBe(200)
      expect((yield* sendPing(monitor.id, "fail")).status).toBe(200)
      expect((yield* sendPing(monitor.id, "start")).status).toBe(200)
      yield* sql`
        insert into runs (id, monitor_id, org_id, status, started_at, finished_at, duration_ms)
        select gen_random_uuid(), id, org_id, 'SUCCESS', now() - interval '40 days', now() - interval '40 days', 1000
        from monitors where id = ${monitor.id}`

      const month = yield* summary(monitor.id)
      expect(month.body).toMatchObject({ period: "30d", total: 4, succeeded: 1, failed: 2, running: 1 })
      const longer = yield* summary(monitor.id, "?window=6w")
      expect(longer.body).toMatchObject({ period: "6w", total: 5, succeeded: 2, failed: 2, running: 1 })
    }))

  it.effect("a bad window is a 400 naming window; an unknown or another organization's monitor is 404", () =>
    Effect.gen(function*() {
      const monitor = yield* createMonitor()
      for (const window of ["0h", "401d", "30", "1y", "-1d"]) {
        const response = yield* summary(monitor.id, `?window=${encodeURIComponent(window)}`)
        expect(response.status, window).toBe(400)
        expect(response.body._tag).toBe("ValidationError")
        expect(response.body.path).toBe("window")
      }
      expect((yield* summary("00000000-0000-4000-8000-000000000000")).status).toBe(404)
      const other = yield* createOrganization("summary-other")
      expect((yield* summary(monitor.id, "", other.token)).status).toBe(404)
    }))
})
