import { expect, layer } from "@effect/vitest"
import { Clock, Duration, Effect, FastCheck, TestClock } from "effect"
import { call, createMonitor, sendPing, TestServer } from "../support/fixture.js"
import { settleWith } from "./support.js"

const iso = (t: number) => new Date(t).toISOString()

const settle = settleWith(2, 10)

const RUNS = Number(process.env.MAINTENANCE_PROPERTY_RUNS ?? 12)
const HORIZON_S = 1800

// The whole service on the TestClock, through HTTP: random windows and ping patterns.
layer(TestServer(), { timeout: 600_000 })("maintenance windows, property", (it) => {
  it.effect.prop(
    "no incident is created, and no occurrence counted, inside an active window",
    [
      FastCheck.constantFrom(60, 120, 300),
      FastCheck.integer({ min: 0, max: 120 }),
      FastCheck.integer({ min: 0, max: 600 }),
      FastCheck.integer({ min: 60, max: 1200 }),
      FastCheck.array(
        FastCheck.record({ at: FastCheck.integer({ min: 1, max: HORIZON_S }), kind: FastCheck.constantFrom("start", "success", "fail") }),
        { maxLength: 6 }
      )
    ],
    ([intervalS, graceS, offsetS, lengthS, pings]) =>
      Effect.gen(function*() {
        const monitor = yield* createMonitor({ schedule: { type: "interval", expression: `${intervalS}s` }, graceSeconds: graceS })
        const t0 = yield* Clock.currentTimeMillis
        const start = t0 + offsetS * 1000
        const end = start + lengthS * 1000
        const w = yield* call("POST", "/api/maintenance-windows", {
          body: { name: "prop", monitorIds: [monitor.id], start: iso(start), end: iso(end) }
        })
        expect(w.status, w.text).toBe(201)
        let at = t0
        for (const ping of [...pings].sort((a, b) => a.at - b.at)) {
          const target = t0 + ping.at * 1000
          if (target > at) yield* TestClock.adjust(Duration.millis(target - at))
          at = target
          yield* settle
          expect((yield* sendPing(monitor.id, ping.kind as "start" | "success" | "fail")).status).toBe(200)
        }
        yield* TestClock.adjust(Duration.millis(t0 + HORIZON_S * 1000 - at))
        yield* settle
        const incidents = (yield* call("GET", `/api/incidents?monitorId=${monitor.id}`)).body.incidents as Array<any>
        for (const incident of incidents) {
          for (const t of [Date.parse(incident.createdAt), Date.parse(incident.lastOccurredAt)]) {
            expect(t >= start && t < end, `${incident.type} at ${iso(t)} inside [${iso(start)}, ${iso(end)})`).toBe(false)
          }
        }
        yield* call("DELETE", `/api/maintenance-windows/${w.body.id}`)
        // A monitor left running would be judged again in every later case's 30 minutes, and the
        // cases would grow slower one after the other.
        expect((yield* call("DELETE", `/api/monitors/${monitor.id}`)).status).toBe(204)
      }),
    // Twelve cases of 30 simulated minutes through HTTP; on two loaded cores this takes minutes.
    { timeout: 300_000, fastCheck: { numRuns: RUNS } }
  )
})
