import { expect, it, layer } from "@effect/vitest"
import { SqlClient } from "@effect/sql"
import { Effect, TestClock } from "effect"
import { Engine } from "../../src/Engine/Engine.js"
import { call, createMonitor, makeTestDatabase, newAdminToken, sendPing, serviceLives, TestServer } from "../support/fixture.js"

// failureThreshold and recoveryThreshold through the whole service on the TestClock
// (docs/incident-rules.md#thresholds): pings over HTTP, deadlines moved by the test.

/** Let the engine's workers finish what the clock set off, and the monitor rows be written. */
const settle = Effect.gen(function*() {
  const engine = yield* Engine
  yield* Effect.promise(() => new Promise((resolve) => setTimeout(resolve, 20)))
  yield* engine.idle
})

const incidentsOf = (monitorId: string) =>
  Effect.map(call("GET", `/api/incidents?monitorId=${monitorId}`), (r) => {
    expect(r.status).toBe(200)
    return r.body.incidents as Array<any>
  })

const statusOf = (monitorId: string) => Effect.map(call("GET", `/api/monitors/${monitorId}`), (r) => r.body.status as string)

layer(TestServer(), { timeout: 120_000 })("thresholds on the TestClock", (it) => {
  it.effect("failureThreshold 3: MISSED opens on the third missed occurrence; recoveryThreshold 2: it resolves on the second success", () =>
    Effect.gen(function*() {
      // Expected every minute from creation, MISSED 30 s after each expected time.
      const monitor = yield* createMonitor({
        schedule: { type: "interval", expression: "1m" },
        graceSeconds: 30,
        failureThreshold: 3,
        recoveryThreshold: 2
      })
      const created = Date.parse(monitor.createdAt)
      yield* TestClock.adjust("91 seconds")
      yield* settle
      // The first miss: no incident, but the status says what happened.
      expect(yield* incidentsOf(monitor.id)).toEqual([])
      expect(yield* statusOf(monitor.id)).toBe("MISSED")
      yield* TestClock.adjust("60 seconds")
      yield* settle
      expect(yield* incidentsOf(monitor.id)).toEqual([])
      yield* TestClock.adjust("58 seconds")
      yield* settle
      expect(yield* incidentsOf(monitor.id)).toEqual([])
      // The third one's deadline: created + 3 min + 30 s.
      yield* TestClock.adjust("1 second")
      yield* settle
      const [missed, ...rest] = yield* incidentsOf(monitor.id)
      expect(rest).toEqual([])
      expect(missed).toMatchObject({ type: "MISSED", status: "OPEN", occurrences: 1 })
      expect(Date.parse(missed.createdAt)).toBe(created + 210_000)
      expect(missed.details).toMatchObject({ missedOccurrences: 1, failureThreshold: 3, graceSeconds: 30 })

      // One success is not enough to resolve it; the second in a row is.
      yield* TestClock.adjust("10 seconds")
      expect((yield* sendPing(monitor.id, "success")).status).toBe(200)
      yield* settle
      expect((yield* incidentsOf(monitor.id))[0].status).toBe("OPEN")
      expect(yield* statusOf(monitor.id)).toBe("MISSED")
      yield* TestClock.adjust("50 seconds")
      expect((yield* sendPing(monitor.id, "success")).status).toBe(200)
      yield* settle
      const [resolved] = yield* incidentsOf(monitor.id)
      expect(resolved).toMatchObject({ status: "RESOLVED", resolvedBy: { userId: null, name: "system" } })
      expect(resolved.notes.map((n: any) => n.text)).toContain("2 successful runs in a row")
      expect(yield* statusOf(monitor.id)).toBe("OK")
    }))

  it.effect("failureThreshold 2: one failed run shows FAILING without an incident; a success in between starts over", () =>
    Effect.gen(function*() {
      const monitor = yield* createMonitor({ schedule: { type: "interval", expression: "10m" }, graceSeconds: 60, failureThreshold: 2 })
      const ping = (kind: "success" | "fail") =>
        Effect.gen(function*() {
          yield* TestClock.adjust("5 minutes")
          expect((yield* sendPing(monitor.id, kind, { body: { exitCode: kind === "fail" ? 1 : 0 } })).status).toBe(200)
          yield* settle
        })
      yield* ping("fail")
      expect(yield* statusOf(monitor.id)).toBe("FAILING")
      yield* ping("success")
      yield* ping("fail")
      expect(yield* incidentsOf(monitor.id)).toEqual([])
      yield* ping("fail")
      const [fail, ...rest] = yield* incidentsOf(monitor.id)
      expect(rest).toEqual([])
      expect(fail).toMatchObject({ type: "FAIL", status: "OPEN" })
      expect(fail.details).toMatchObject({ exitCode: 1, failureThreshold: 2 })
      // The count is on the monitor row, for an actor rebuilt from the database.
      const sql = yield* SqlClient.SqlClient
      const [row] = yield* sql<{ consecutive_failures: number; consecutive_successes: number }>`
        select consecutive_failures, consecutive_successes from monitors where id = ${monitor.id}`
      expect(row).toEqual({ consecutive_failures: 2, consecutive_successes: 0 })
    }))
})

it.effect("the counts survive a restart of the whole service: the third failure opens FAIL after two before the restart", () =>
  Effect.gen(function*() {
    const db = yield* makeTestDatabase()
    const token = newAdminToken()
    /** One life of the service on this database: start, use, stop. */
    const life = serviceLives(db.url, token)
    const failOnce = (monitorId: string) =>
      Effect.gen(function*() {
        yield* TestClock.adjust("5 minutes")
        expect((yield* sendPing(monitorId, "fail", { body: { exitCode: 2 } })).status).toBe(200)
        yield* settle
      })
    const monitor = yield* life(Effect.gen(function*() {
      const monitor = yield* createMonitor({ schedule: { type: "interval", expression: "10m" }, graceSeconds: 60, failureThreshold: 3 })
      yield* failOnce(monitor.id)
      yield* failOnce(monitor.id)
      expect(yield* incidentsOf(monitor.id)).toEqual([])
      return monitor
    }))
    const after = yield* life(Effect.gen(function*() {
      expect(yield* statusOf(monitor.id)).toBe("FAILING")
      expect(yield* incidentsOf(monitor.id)).toEqual([])
      yield* failOnce(monitor.id)
      return yield* incidentsOf(monitor.id)
    }))
    expect(after.map((i) => [i.type, i.status, i.details.failureThreshold])).toEqual([["FAIL", "OPEN", 3]])
  }).pipe(Effect.scoped), 120_000)
