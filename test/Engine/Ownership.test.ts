import { expect, layer } from "@effect/vitest"
import { Effect, TestClock } from "effect"
import { Engine } from "../../src/Engine/Engine.js"
import { call, createMonitor, sendPing, TestServer } from "../support/fixture.js"

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

// The seam of a cluster of instances: an instance starts the actors of the monitors it takes
// (start-up, a shard acquired) and stops those it gives up, each rebuilt from the database.
layer(TestServer(), { timeout: 120_000 })("starting and stopping monitors' actors", (it) => {
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
