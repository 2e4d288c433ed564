import { expect, layer } from "@effect/vitest"
import { SqlClient } from "@effect/sql"
import { Effect } from "effect"
import { call, TestApp, TestServer } from "../support/fixture.js"
import { rawRequest } from "../support/raw.js"

/**
 * The top of the minute: every cron job of a fleet starts in the same instant. 500 jobs send start
 * within 100 ms of a minute boundary, then success a moment later, on real time: every ping is
 * answered 2xx, every success closes the run its start opened, and no MISSED or LATE is raised
 * for that minute. (Uptime Kuma answers 44 % of pushes with 404 in exactly this situation, its
 * issue #5357.)
 */

const JOBS = 500
const GRACE_SECONDS = 5

layer(TestServer(), { excludeTestServices: true, timeout: 240_000 })("the top-of-minute burst", (it) => {
  it.effect(`${JOBS} jobs start within 100 ms of a minute boundary and succeed a moment later: all answered, all paired, nothing raised`, () =>
    Effect.gen(function*() {
      const app = yield* TestApp
      const sql = yield* SqlClient.SqlClient
      const create = (i: number) =>
        Effect.gen(function*() {
          const created = yield* call("POST", "/api/monitors", {
            body: {
              name: `minutely job ${i}`,
              schedule: { type: "cron", expression: "* * * * *", timezone: "UTC" },
              graceSeconds: GRACE_SECONDS,
              maxRuntimeSeconds: 30,
              tags: ["burst"]
            }
          })
          expect(created.status).toBe(201)
          return created.body.id as string
        })
      const ids = yield* Effect.forEach(Array.from({ length: JOBS }, (_, i) => i), create, { concurrency: 8 })
      // The next minute boundary at least 3 s away: every monitor expects its first run there.
      let boundary = Math.ceil(Date.now() / 60_000) * 60_000
      if (boundary - Date.now() < 3_000) boundary += 60_000
      yield* Effect.sleep(boundary - Date.now())

      const ping = (id: string, kind: "start" | "success", body?: unknown) =>
        rawRequest(app.baseUrl, "POST", `/api/ping/${id}/${kind}`, {
          headers: { authorization: `Bearer ${app.adminToken}` },
          ...(body === undefined ? {} : { body: JSON.stringify(body) })
        }).pipe(Effect.orDie)

      // All starts leave within a few milliseconds of the boundary.
      const sentAt = Date.now()
      const starts = yield* Effect.forEach(ids, (id) => ping(id, "start"), { concurrency: "unbounded" })
      expect(sentAt - boundary).toBeLessThan(100)
      expect(starts.map((r) => r.status).filter((s) => s !== 200), "start answers other than 200").toEqual([])
      yield* Effect.sleep("200 millis")
      const successes = yield* Effect.forEach(
        ids,
        (id, i) => ping(id, "success", { runId: starts[i]!.body.runId }),
        { concurrency: "unbounded" }
      )
      expect(successes.map((r) => r.status).filter((s) => s !== 200), "success answers other than 200").toEqual([])
      // Each success closed the run its start opened.
      expect(successes.every((r, i) => r.body.runId === starts[i]!.body.runId)).toBe(true)
      const runs = yield* sql<{ status: string; start_inferred: boolean; n: number }>`
        select status, start_inferred, count(*)::int as n from runs
        where monitor_id in ${sql.in(ids)} group by status, start_inferred`.pipe(Effect.orDie)
      expect(runs).toEqual([{ status: "SUCCESS", start_inferred: false, n: JOBS }])

      // Past the boundary's grace: no monitor was judged MISSED or LATE for that minute.
      yield* Effect.sleep(Math.max(0, boundary + (GRACE_SECONDS + 3) * 1000 - Date.now()))
      // (On a slow machine the monitors' creation can cross an earlier minute: a monitor created
      // before it was due there, legitimately MISSED. Only the burst's own minute is judged here.)
      const incidents = yield* sql<{ type: string; n: number }>`
        select type, count(*)::int as n from incidents
        where monitor_id in ${sql.in(ids)}
          and (type <> 'MISSED' or (details ->> 'expectedAt')::timestamptz >= ${new Date(boundary)})
        group by type`.pipe(Effect.orDie)
      expect(incidents).toEqual([])
    }), 200_000)
})
