import { expect, layer } from "@effect/vitest"
import { Effect, TestClock } from "effect"
import { Engine } from "../../src/Engine/Engine.js"
import { call, createMonitor, sendPing, TestServer } from "../support/fixture.js"

/** Let the engine's workers finish what the pings set off (they wait on the real database). */
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

layer(TestServer(), { timeout: 120_000 })("recent durations through the real server", (it) => {
  // Reported: every expectedDurationMs fitted the first success counted twice (its run was
  // committed before the actor loaded the durations from the database, then appended again).
  const cases: ReadonlyArray<readonly [ReadonlyArray<number>, number]> = [
    [[100, 300, 200], 200],
    [[100, 300], 200],
    [[500, 100, 300, 200], 250],
    [[100, 200, 900, 300, 400], 300]
  ]
  for (const [durations, median] of cases) {
    it.effect(`successes of ${durations.join(", ")} ms then a fail: expectedDurationMs ${median}`, () =>
      Effect.gen(function*() {
        const monitor = yield* createMonitor({ schedule: { type: "interval", expression: "10m" }, graceSeconds: 60 })
        for (const durationMs of durations) {
          yield* TestClock.adjust("1 minute")
          expect((yield* sendPing(monitor.id, "success", { body: { durationMs } })).status).toBe(200)
        }
        yield* TestClock.adjust("1 minute")
        expect((yield* sendPing(monitor.id, "fail", { body: { exitCode: 1 } })).status).toBe(200)
        yield* settle
        const [fail, ...rest] = yield* incidentsOf(monitor.id)
        expect(rest).toEqual([])
        expect(fail).toMatchObject({ type: "FAIL", status: "OPEN" })
        expect(fail.details.expectedDurationMs).toBe(median)
        const engine = yield* Engine
        expect(engine.durationsOf(monitor.id)).toEqual(durations)
      }))
  }
})
