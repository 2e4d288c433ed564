import { expect, layer } from "@effect/vitest"
import { SqlClient } from "@effect/sql"
import { Clock, type Duration, Effect, Layer, TestClock } from "effect"
import { reminderEventId } from "../../src/Delivery/Reminders.js"
import { Webhooks } from "../../src/Delivery/Webhooks.js"
import { AppOn, call, createMonitor, TestApp, TestServer } from "../support/fixture.js"
import { raise } from "../Incidents/support.js"
import { createWindow } from "../Maintenance/support.js"
import { slackReceiver } from "./slackReceiver.js"

// Reminders while an incident stays open (docs/alerts.md#reminders), on the TestClock: the
// interval, the count, acknowledge and resolve stop them, a maintenance window skips them, and
// with two instances on one database each reminder is sent once.

const flush = Effect.flatMap(Webhooks, (w) => w.flush)
const iso = (t: number) => new Date(t).toISOString()

const setUp = (reminders: { everyMinutes: number; max: number }, name: string) =>
  Effect.gen(function*() {
    const slack = yield* slackReceiver([200])
    const monitor = yield* createMonitor({ name })
    const made = yield* call("POST", "/api/alerts/channels", {
      body: { type: "slack", name, config: { url: slack.url }, rules: { monitorIds: [monitor.id] }, reminders }
    })
    expect(made.status, made.text).toBe(201)
    return { slack, monitor, channelId: made.body.id as string }
  })

const texts = (slack: { received: Array<{ body: any }> }) => slack.received.map((r) => r.body.text as string)

/** Moves the clock on and lets the worker run. */
const after = (duration: Duration.DurationInput) => Effect.zipRight(TestClock.adjust(duration), flush)

const remindersLeft = (incidentId: string) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const [row] = yield* sql<{ n: number }>`select count(*)::int as n from alert_reminders where incident_id = ${incidentId}`
    return row!.n
  }).pipe(Effect.orDie)

layer(TestServer({ allowPrivateTargets: true, publicUrl: "https://jobmon.example" }), { timeout: 120_000 })("reminders", (it) => {
  it.effect("every N minutes while the incident stays open, at most M times", () =>
    Effect.scoped(Effect.gen(function*() {
      const { channelId, monitor, slack } = yield* setUp({ everyMinutes: 10, max: 3 }, "still failing")
      const { incident } = yield* raise(monitor.id, { at: yield* Clock.currentTimeMillis })
      yield* flush
      expect(texts(slack)).toEqual(["FAIL: still failing"])
      yield* after("599 seconds")
      expect(slack.received).toHaveLength(1)
      yield* after("1 second")
      expect(texts(slack)).toEqual(["FAIL: still failing", "REMINDER 1/3: FAIL: still failing (still open)"])
      yield* after("10 minutes")
      yield* after("10 minutes")
      yield* after("10 minutes")
      yield* after("10 minutes")
      expect(texts(slack).slice(1)).toEqual([1, 2, 3].map((n) => `REMINDER ${n}/3: FAIL: still failing (still open)`))
      expect(yield* remindersLeft(incident.id)).toBe(0)
      const deliveries = (yield* call("GET", `/api/alerts/channels/${channelId}/deliveries`)).body.deliveries
      expect(deliveries.map((d: any) => d.event)).toEqual(["incident.reminder", "incident.reminder", "incident.reminder", "incident.opened"])
      expect(deliveries[0].eventId).toBe(reminderEventId(incident.id, 3))
      expect(slack.refused).toEqual([])
    })))

  it.effect("acknowledging stops them, and so does resolving", () =>
    Effect.scoped(Effect.gen(function*() {
      const { monitor, slack } = yield* setUp({ everyMinutes: 5, max: 10 }, "acked")
      const { incident } = yield* raise(monitor.id, { at: yield* Clock.currentTimeMillis })
      yield* flush
      yield* after("5 minutes")
      expect(texts(slack)).toEqual(["FAIL: acked", "REMINDER 1/10: FAIL: acked (still open)"])
      yield* TestClock.adjust("1 minute")
      expect((yield* call("POST", `/api/incidents/${incident.id}/acknowledge`)).status).toBe(200)
      yield* flush
      for (let i = 0; i < 4; i++) yield* after("5 minutes")
      expect(texts(slack).slice(2)).toEqual([expect.stringMatching(/^ACKNOWLEDGED: acked/)])
      expect(yield* remindersLeft(incident.id)).toBe(0)

      const second = yield* setUp({ everyMinutes: 5, max: 10 }, "resolved")
      const opened = (yield* raise(second.monitor.id, { at: yield* Clock.currentTimeMillis })).incident
      yield* flush
      yield* after("5 minutes")
      expect((yield* call("POST", `/api/incidents/${opened.id}/resolve`)).status).toBe(200)
      yield* flush
      for (let i = 0; i < 4; i++) yield* after("5 minutes")
      expect(texts(second.slack)).toEqual([
        "FAIL: resolved",
        "REMINDER 1/10: FAIL: resolved (still open)",
        expect.stringMatching(/^RESOLVED: resolved \(FAIL, lasted 5m 0s\)/)
      ])
    })))

  it.effect("a maintenance window covering the monitor skips them; they resume after it", () =>
    Effect.scoped(Effect.gen(function*() {
      const { monitor, slack } = yield* setUp({ everyMinutes: 10, max: 2 }, "maintained")
      const t0 = yield* Clock.currentTimeMillis
      yield* raise(monitor.id, { at: t0 })
      yield* flush
      yield* createWindow({ name: "upgrade", monitorIds: [monitor.id], start: iso(t0), end: iso(t0 + 25 * 60_000) })
      yield* after("10 minutes")
      yield* after("10 minutes")
      expect(texts(slack)).toEqual(["FAIL: maintained"])
      // the window ended at 25 minutes: the one due at 30 goes, and the next 10 minutes later
      yield* after("10 minutes")
      yield* after("10 minutes")
      yield* after("10 minutes")
      expect(texts(slack)).toEqual([
        "FAIL: maintained",
        "REMINDER 1/2: FAIL: maintained (still open)",
        "REMINDER 2/2: FAIL: maintained (still open)"
      ])
    })))

  it.effect("two instances on one database: each reminder is sent once", () =>
    Effect.scoped(Effect.gen(function*() {
      const app = yield* TestApp
      const second = yield* Layer.build(AppOn(app.databaseUrl, app.adminToken, { allowPrivateTargets: true }))
      const flushSecond = Effect.provide(flush, second)
      const { monitor, slack } = yield* setUp({ everyMinutes: 1, max: 5 }, "twice")
      yield* raise(monitor.id, { at: yield* Clock.currentTimeMillis })
      yield* flush
      for (let i = 0; i < 7; i++) {
        yield* TestClock.adjust("1 minute")
        yield* Effect.all([flush, flushSecond, flush, flushSecond], { concurrency: "unbounded" })
      }
      expect(texts(slack)).toEqual([
        "FAIL: twice",
        ...[1, 2, 3, 4, 5].map((n) => `REMINDER ${n}/5: FAIL: twice (still open)`)
      ])
    })))
})
