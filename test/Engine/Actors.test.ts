import { expect, it, layer } from "@effect/vitest"
import { SqlClient } from "@effect/sql"
import { Effect, TestClock } from "effect"
import { Engine } from "../../src/Engine/Engine.js"
import { call, createMonitor, makeTestDatabase, newAdminToken, sendPing, serviceLives, TestServer } from "../support/fixture.js"

/** Let the engine's workers finish what the clock set off (they wait on the real database). */
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

// The whole service runs on the TestClock here: the monitor actors' deadlines move only when the test says.
layer(TestServer(), { timeout: 120_000 })("monitor actors on the TestClock", (it) => {
  it.effect("an interval job that never pings gets exactly one MISSED at expected + grace", () =>
    Effect.gen(function*() {
      const monitor = yield* createMonitor({ schedule: { type: "interval", expression: "1m" }, graceSeconds: 30 })
      const created = Date.parse(monitor.createdAt)
      expect(Date.parse(monitor.nextExpectedAt)).toBe(created + 60_000)
      yield* TestClock.adjust("89 seconds")
      yield* settle
      expect(yield* incidentsOf(monitor.id)).toHaveLength(0)
      yield* TestClock.adjust("2 seconds")
      yield* settle
      const [missed, ...rest] = yield* incidentsOf(monitor.id)
      expect(rest).toHaveLength(0)
      expect(missed).toMatchObject({ type: "MISSED", severity: "HIGH", status: "OPEN", monitorId: monitor.id })
      const m = yield* call("GET", `/api/monitors/${monitor.id}`)
      expect(m.body.status).toBe("MISSED")
      // Further silent periods count on the same incident.
      yield* TestClock.adjust("5 minutes")
      yield* settle
      const again = yield* incidentsOf(monitor.id)
      expect(again).toHaveLength(1)
      expect(again[0].occurrences).toBeGreaterThan(1)
    }))

  it.effect("a job that pings on time never gets MISSED; a fail ping opens FAIL and the next success resolves it", () =>
    Effect.gen(function*() {
      const monitor = yield* createMonitor({ schedule: { type: "interval", expression: "10m" }, graceSeconds: 60 })
      for (let i = 0; i < 6; i++) {
        yield* TestClock.adjust("10 minutes")
        expect((yield* call("POST", `/api/ping/${monitor.id}/success`, { body: { durationMs: 1000 } })).status).toBe(200)
        yield* settle
      }
      expect(yield* incidentsOf(monitor.id)).toHaveLength(0)
      yield* TestClock.adjust("10 minutes")
      yield* call("POST", `/api/ping/${monitor.id}/fail`, { body: { exitCode: 3, durationMs: 2000, output: "boom" } })
      yield* settle
      const [fail] = yield* incidentsOf(monitor.id)
      expect(fail).toMatchObject({ type: "FAIL", severity: "HIGH", status: "OPEN" })
      expect(fail.details).toMatchObject({ exitCode: 3, durationMs: 2000, output: "boom", expectedDurationMs: 1000 })
      expect((yield* call("GET", `/api/monitors/${monitor.id}`)).body.status).toBe("FAILING")
      // The health score drops with a failed run and an open HIGH incident (docs/incident-rules.md).
      const engine = yield* Engine
      yield* engine.refreshHealth
      const unhealthy = (yield* call("GET", `/api/monitors/${monitor.id}`)).body.healthScore
      expect(unhealthy).toBeLessThan(90)
      expect(unhealthy).toBeGreaterThan(0)
      yield* TestClock.adjust("10 minutes")
      yield* call("POST", `/api/ping/${monitor.id}/success`, { body: { durationMs: 1000 } })
      yield* settle
      const [resolved] = yield* incidentsOf(monitor.id)
      expect(resolved.status).toBe("RESOLVED")
      expect(resolved.mttrSeconds).toBe(600)
      expect((yield* call("GET", `/api/monitors/${monitor.id}`)).body.status).toBe("OK")
      yield* engine.refreshHealth
      expect((yield* call("GET", `/api/monitors/${monitor.id}`)).body.healthScore).toBeGreaterThan(unhealthy)
    }))

  it.effect("the health score follows an incident within about a second, not at the next 30 s pass", () =>
    Effect.gen(function*() {
      const monitor = yield* createMonitor({ schedule: { type: "interval", expression: "10m" }, graceSeconds: 60 })
      const healthOf = Effect.map(call("GET", `/api/monitors/${monitor.id}`), (r) => r.body.healthScore as number)
      /** The score once the engine's health fiber has had its turn (it runs on the real database). */
      const healthAfterASecond = (until: (score: number) => boolean) =>
        Effect.gen(function*() {
          yield* TestClock.adjust("1 second")
          for (let i = 0; i < 200; i++) {
            const score = yield* healthOf
            if (until(score)) return score
            yield* Effect.promise(() => new Promise((resolve) => setTimeout(resolve, 50)))
          }
          return yield* healthOf
        })
      for (let i = 0; i < 3; i++) {
        yield* TestClock.adjust("10 minutes")
        yield* call("POST", `/api/ping/${monitor.id}/success`, { body: { durationMs: 1000 } })
        yield* settle
      }
      expect(yield* healthOf).toBe(100)
      yield* call("POST", `/api/ping/${monitor.id}/fail`, { body: { exitCode: 1, durationMs: 1000 } })
      yield* settle
      const [fail] = yield* incidentsOf(monitor.id)
      expect(fail).toMatchObject({ type: "FAIL", status: "OPEN" })
      // Within HEALTH_SOON of the incident, with no 30 s pass in between.
      const failing = yield* healthAfterASecond((score) => score < 90)
      expect(failing).toBeLessThan(90)
      // A user resolving it scores the monitor again just as soon.
      expect((yield* call("POST", `/api/incidents/${fail.id}/resolve`, { body: {} })).status).toBe(200)
      yield* settle
      expect(yield* healthAfterASecond((score) => score > failing)).toBeGreaterThan(failing)
    }))

  it.effect("a run that outlives maxRuntimeSeconds is LATE once; it resolves when the run finishes", () =>
    Effect.gen(function*() {
      const monitor = yield* createMonitor({ schedule: { type: "interval", expression: "1h" }, maxRuntimeSeconds: 120 })
      yield* TestClock.adjust("1 minute")
      const start = yield* call("POST", `/api/ping/${monitor.id}/start`)
      yield* TestClock.adjust("119 seconds")
      yield* settle
      expect(yield* incidentsOf(monitor.id)).toHaveLength(0)
      yield* TestClock.adjust("2 seconds")
      yield* settle
      const [late] = yield* incidentsOf(monitor.id)
      expect(late).toMatchObject({ type: "LATE", severity: "MEDIUM", status: "OPEN", runId: start.body.runId })
      expect((yield* call("GET", `/api/monitors/${monitor.id}`)).body.status).toBe("LATE")
      yield* call("POST", `/api/ping/${monitor.id}/success`)
      yield* settle
      const [done] = yield* incidentsOf(monitor.id)
      expect(done.status).toBe("RESOLVED")
    }))

  it.effect("a failing actor is rebuilt from the database and the others go on", () =>
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const engine = yield* Engine
      const broken = yield* createMonitor({ schedule: { type: "interval", expression: "1m" }, graceSeconds: 0 })
      const healthy = yield* createMonitor({ schedule: { type: "interval", expression: "1m" }, graceSeconds: 0 })
      // Every incident insert for one monitor fails, as if its rows were corrupt.
      yield* sql.unsafe(`create or replace function jobmon_test_break() returns trigger language plpgsql as $$
        begin if new.monitor_id = '${broken.id}' then raise exception 'broken on purpose'; end if; return new; end $$`)
      // (dropped first: a retried attempt finds the one its failed first attempt left)
      yield* sql.unsafe(`drop trigger if exists jobmon_test_break on incidents`)
      yield* sql.unsafe(`create trigger jobmon_test_break before insert on incidents for each row execute function jobmon_test_break()`)
      const restartsBefore = engine.stats.restarts
      yield* TestClock.adjust("61 seconds")
      // The broken actor retries (on the clock) and is rebuilt; the healthy one is judged meanwhile.
      for (let i = 0; i < 12 && engine.stats.restarts === restartsBefore; i++) {
        yield* TestClock.adjust("2 seconds")
        yield* Effect.promise(() => new Promise((resolve) => setTimeout(resolve, 30)))
      }
      expect(engine.stats.restarts).toBeGreaterThan(restartsBefore)
      // The healthy actor's MISSED commits on its own fiber: wait for it (real time), not for idle
      // (the broken actor keeps the engine busy).
      for (let i = 0; i < 100 && (yield* incidentsOf(healthy.id)).length === 0; i++) {
        yield* Effect.promise(() => new Promise((resolve) => setTimeout(resolve, 20)))
      }
      expect((yield* incidentsOf(healthy.id)).map((i) => i.type)).toEqual(["MISSED"])
      expect(yield* incidentsOf(broken.id)).toHaveLength(0)
      // Repaired, the rebuilt actor judges again.
      yield* sql.unsafe(`drop trigger jobmon_test_break on incidents`)
      for (let i = 0; i < 8; i++) {
        yield* TestClock.adjust("2 seconds")
        yield* Effect.promise(() => new Promise((resolve) => setTimeout(resolve, 30)))
      }
      yield* settle
      expect((yield* incidentsOf(broken.id)).map((i) => i.type)).toEqual(["MISSED"])
    }))

  // The seam of a cluster of instances: an instance starts the actors of the monitors it takes
  // (start-up, a shard acquired) and stops those it gives up, each rebuilt from the database.
  it.effect("a monitor given up is not judged here; taken again, it is judged from the database", () =>
    Effect.gen(function*() {
      const engine = yield* Engine
      const monitor = yield* createMonitor({ schedule: { type: "interval", expression: "1m" }, graceSeconds: 0 })
      expect(engine.owns(monitor.id)).toBe(true)
      yield* engine.stopMonitors([monitor.id])
      expect(engine.owns(monitor.id)).toBe(false)
      yield* TestClock.adjust("150 seconds")
      yield* settle
      expect(yield* incidentsOf(monitor.id)).toEqual([])
      // Taken again: the deadline that passed meanwhile is due at once, and raised once.
      expect(yield* engine.startMonitors([monitor.id])).toBe(1)
      expect(yield* engine.startMonitors([monitor.id])).toBe(0)
      yield* TestClock.adjust("1 second")
      yield* settle
      const [missed, ...rest] = yield* incidentsOf(monitor.id)
      expect(rest).toEqual([])
      expect(missed).toMatchObject({ type: "MISSED", status: "OPEN" })
      expect(missed.details.missedOccurrences).toBeGreaterThan(1)
    }))

  it.effect("a monitor started alone with a run in progress is LATE by its learned limit, as at start-up", () =>
    Effect.gen(function*() {
      const engine = yield* Engine
      const monitor = yield* createMonitor({ schedule: { type: "interval", expression: "1h" }, graceSeconds: 60 })
      // 20 successes of 1 s: the LATE limit is learned, 60 s (the floor above 2 × p99).
      for (let i = 0; i < 20; i++) {
        yield* TestClock.adjust("1 minute")
        expect((yield* sendPing(monitor.id, "success", { body: { durationMs: 1000 } })).status).toBe(200)
      }
      yield* TestClock.adjust("1 minute")
      const start = yield* sendPing(monitor.id, "start")
      yield* settle
      yield* engine.stopMonitors([monitor.id])
      expect(yield* engine.startMonitors([monitor.id])).toBe(1)
      // Its run in progress needs the durations for its LATE deadline: loaded with the state, not
      // at the actor's next event (there may be none before the deadline).
      expect(engine.durationsOf(monitor.id)).toHaveLength(20)
      yield* TestClock.adjust("59 seconds")
      yield* settle
      expect(yield* incidentsOf(monitor.id)).toEqual([])
      yield* TestClock.adjust("2 seconds")
      yield* settle
      const [late, ...rest] = yield* incidentsOf(monitor.id)
      expect(rest).toEqual([])
      expect(late).toMatchObject({ type: "LATE", status: "OPEN", runId: start.body.runId })
    }))
})

it.effect("a restart of the whole service raises the MISSED that fell due while it was down, once", () =>
  Effect.gen(function*() {
    const db = yield* makeTestDatabase()
    const token = newAdminToken()
    /** One life of the service on this database: start, use, stop. */
    const run = serviceLives(db.url, token)
    const monitor = yield* run(createMonitor({ schedule: { type: "interval", expression: "10m" }, graceSeconds: 60 }))
    // Down for an hour: six occurrences fall due.
    yield* TestClock.adjust("1 hour")
    const first = yield* run(Effect.gen(function*() {
      yield* settle
      return yield* incidentsOf(monitor.id)
    }))
    expect(first.map((i) => i.type)).toEqual(["MISSED"])
    // Started again at once: nothing new is raised for what was already judged.
    const second = yield* run(Effect.gen(function*() {
      yield* settle
      return yield* incidentsOf(monitor.id)
    }))
    expect(second).toEqual(first)
  }).pipe(Effect.scoped), 120_000)
