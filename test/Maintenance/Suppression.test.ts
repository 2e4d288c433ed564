import { expect, it, layer } from "@effect/vitest"
import { SqlClient } from "@effect/sql"
import { Clock, Effect, TestClock } from "effect"
import { call, createMonitor, makeTestDatabase, newAdminToken, sendPing, serviceLives, TestServer } from "../support/fixture.js"
import { createWindow, fail, historyOf, incidentsOf, settle } from "./support.js"

const MIN = 60_000
const HOUR = 3_600_000
const iso = (t: number) => new Date(t).toISOString()
const now = Clock.currentTimeMillis

// The whole service runs on the TestClock: deadlines and window transitions move only when the test says.
layer(TestServer(), { timeout: 120_000 })("maintenance windows suppress incidents (TestClock)", (it) => {
  it.effect("no MISSED inside the window (counted in history); a deadline after the end raises MISSED, one inside does not", () =>
    Effect.gen(function*() {
      const monitor = yield* createMonitor({ schedule: { type: "interval", expression: "1m" }, graceSeconds: 30 })
      const t0 = Date.parse(monitor.createdAt)
      expect(yield* now).toBe(t0)
      const w = yield* createWindow({ name: "upgrade", monitorIds: [monitor.id], start: iso(t0), end: iso(t0 + 5 * MIN) })
      expect(w.status).toBe("active")
      yield* TestClock.adjust("91 seconds")
      yield* settle
      expect(yield* incidentsOf(monitor.id)).toEqual([])
      const m = yield* call("GET", `/api/monitors/${monitor.id}`)
      expect(m.body.inMaintenance).toBe(true)
      expect(m.body.maintenance).toEqual({ windowId: w.id, name: "upgrade", endsAt: iso(t0 + 5 * MIN), remainingSeconds: 209 })
      // Deadlines at 90 s, 150 s, 210 s and 270 s fall inside; 330 s (for 300 s) falls after the end.
      yield* TestClock.adjust("238 seconds")
      yield* settle
      expect(yield* incidentsOf(monitor.id)).toEqual([])
      expect((yield* call("GET", `/api/monitors/${monitor.id}`)).body).toMatchObject({ inMaintenance: false, maintenance: null })
      const [period] = yield* historyOf(w.id)
      expect(period).toMatchObject({ startedAt: iso(t0), endedAt: iso(t0 + 5 * MIN), endReason: "completed", suppressedIncidents: 4 })
      yield* TestClock.adjust("2 seconds")
      yield* settle
      const incidents = yield* incidentsOf(monitor.id)
      expect(incidents.map((i) => i.type)).toEqual(["MISSED"])
      expect(incidents[0].details.expectedAt).toBe(iso(t0 + 5 * MIN))
      expect(incidents[0].details.missedOccurrences ?? 1).toBe(1)
    }))

  it.effect("an incident already open stays open and is not resolved automatically during the window", () =>
    Effect.gen(function*() {
      const monitor = yield* createMonitor({ schedule: { type: "interval", expression: "1m" }, graceSeconds: 0 })
      yield* TestClock.adjust("61 seconds")
      yield* settle
      const [missed] = yield* incidentsOf(monitor.id)
      expect(missed).toMatchObject({ type: "MISSED", status: "OPEN" })
      const t1 = yield* now
      yield* createWindow({ name: "quiet", monitorIds: [monitor.id], start: iso(t1), end: iso(t1 + 10 * MIN) })
      expect((yield* sendPing(monitor.id, "success")).status).toBe(200)
      yield* settle
      yield* TestClock.adjust("5 minutes")
      yield* settle
      expect((yield* incidentsOf(monitor.id)).map((i) => [i.type, i.status])).toEqual([["MISSED", "OPEN"]])
      yield* TestClock.adjust("5 minutes")
      yield* settle
      expect((yield* sendPing(monitor.id, "success")).status).toBe(200)
      yield* settle
      expect((yield* incidentsOf(monitor.id)).map((i) => [i.type, i.status])).toEqual([["MISSED", "RESOLVED"]])
    }))

  it.effect("an override lets alerts through for its duration, then suppression continues", () =>
    Effect.gen(function*() {
      const monitor = yield* createMonitor({ schedule: { type: "interval", expression: "1h" }, graceSeconds: 600 })
      const t0 = yield* now
      const w = yield* createWindow({ name: "migration", monitorIds: [monitor.id], start: iso(t0), end: iso(t0 + HOUR) })
      yield* fail(monitor.id)
      expect(yield* incidentsOf(monitor.id)).toEqual([])
      const o = yield* call("POST", `/api/maintenance-windows/${w.id}/override`, { body: { reason: "watch it", durationSeconds: 300 } })
      expect(o.status).toBe(200)
      yield* TestClock.adjust("1 minute")
      yield* fail(monitor.id)
      const [opened] = yield* incidentsOf(monitor.id)
      expect(opened).toMatchObject({ type: "FAIL", status: "OPEN" })
      expect((yield* call("POST", `/api/incidents/${opened.id}/resolve`, { body: { note: "seen" } })).status).toBe(200)
      yield* TestClock.adjust("4 minutes")
      yield* settle
      expect((yield* call("GET", `/api/maintenance-windows/${w.id}`)).body.status).toBe("active")
      yield* fail(monitor.id)
      expect((yield* incidentsOf(monitor.id)).map((i) => [i.type, i.status])).toEqual([["FAIL", "RESOLVED"]])
      const [period] = yield* historyOf(w.id)
      expect(period.suppressedIncidents).toBe(2)
      expect(period.overrides).toEqual([{ reason: "watch it", startedAt: iso(t0), endedAt: iso(t0 + 5 * MIN) }])
      yield* call("DELETE", `/api/maintenance-windows/${w.id}`)
    }))

  it.effect("deleting an active window ends suppression at once and records the period as deleted", () =>
    Effect.gen(function*() {
      const monitor = yield* createMonitor({ schedule: { type: "interval", expression: "1h" }, graceSeconds: 600 })
      const t0 = yield* now
      const w = yield* createWindow({ name: "gone", monitorIds: [monitor.id], start: iso(t0), end: iso(t0 + HOUR) })
      yield* fail(monitor.id)
      expect(yield* incidentsOf(monitor.id)).toEqual([])
      yield* TestClock.adjust("2 minutes")
      expect((yield* call("DELETE", `/api/maintenance-windows/${w.id}`)).status).toBe(204)
      yield* fail(monitor.id)
      expect((yield* incidentsOf(monitor.id)).map((i) => i.type)).toEqual(["FAIL"])
      expect(yield* historyOf(w.id)).toEqual([
        expect.objectContaining({ startedAt: iso(t0), endedAt: iso(t0 + 2 * MIN), endReason: "deleted", suppressedIncidents: 1 })
      ])
      expect((yield* call("GET", `/api/monitors/${monitor.id}`)).body.inMaintenance).toBe(false)
    }))

  it.effect("a PATCH while active takes effect at once: a shortened period ends now, a removed monitor alerts again", () =>
    Effect.gen(function*() {
      const a = yield* createMonitor({ schedule: { type: "interval", expression: "1h" }, graceSeconds: 600 })
      const b = yield* createMonitor({ schedule: { type: "interval", expression: "1h" }, graceSeconds: 600 })
      const t0 = yield* now
      const shortened = yield* createWindow({ name: "short", monitorIds: [a.id], start: iso(t0), end: iso(t0 + HOUR) })
      const narrowed = yield* createWindow({ name: "narrow", monitorIds: [a.id, b.id], start: iso(t0), end: iso(t0 + HOUR) })
      yield* TestClock.adjust("3 minutes")
      // b leaves the second window: it alerts again at once, a is still covered by both.
      const p1 = yield* call("PATCH", `/api/maintenance-windows/${narrowed.id}`, { body: { monitorIds: [a.id] } })
      expect(p1.status).toBe(200)
      yield* fail(b.id)
      expect((yield* incidentsOf(b.id)).map((i) => i.type)).toEqual(["FAIL"])
      yield* fail(a.id)
      expect(yield* incidentsOf(a.id)).toEqual([])
      // The first window now ends at the current instant; the second one on a as well.
      const p2 = yield* call("PATCH", `/api/maintenance-windows/${shortened.id}`, { body: { end: iso(t0 + 3 * MIN) } })
      expect(p2.status, p2.text).toBe(200)
      expect(p2.body).toMatchObject({ status: "ended", currentEnd: null })
      expect(yield* historyOf(shortened.id)).toEqual([
        expect.objectContaining({ startedAt: iso(t0), endedAt: iso(t0 + 3 * MIN), endReason: "updated", suppressedIncidents: 1 })
      ])
      const p3 = yield* call("PATCH", `/api/maintenance-windows/${narrowed.id}`, { body: { end: iso(t0 + 2 * MIN) } })
      expect(p3.body.status).toBe("ended")
      yield* fail(a.id)
      expect((yield* incidentsOf(a.id)).map((i) => i.type)).toEqual(["FAIL"])
      expect(yield* call("GET", "/api/maintenance-windows/active")).toMatchObject({ body: [] })
    }))

  it.effect("notifications: maintenance.upcoming, .started and .ended events with the window, period and channels", () =>
    Effect.gen(function*() {
      const monitor = yield* createMonitor()
      const t0 = yield* now
      const w = yield* createWindow({
        name: "os patching",
        monitorIds: [monitor.id],
        start: iso(t0 + 10 * MIN),
        end: iso(t0 + 40 * MIN),
        reason: "kernel",
        notifications: { beforeStart: 300, onStart: true, onEnd: true, channels: ["chat:ops", "webhook:123"] }
      })
      const silent = yield* createWindow({ name: "silent", monitorIds: [monitor.id], start: iso(t0 + 10 * MIN), end: iso(t0 + 40 * MIN) })
      const eventsOf = (type: string) =>
        Effect.map(call("GET", `/api/events?type=${type}&limit=500`), (r) =>
          (r.body.events as Array<any>).filter((e) => e.data.window.id === w.id || e.data.window.id === silent.id))
      yield* TestClock.adjust("4 minutes")
      yield* settle
      expect(yield* eventsOf("maintenance.upcoming")).toEqual([])
      yield* TestClock.adjust("1 minute")
      yield* settle
      const window = { id: w.id, name: "os patching", monitorIds: [monitor.id], reason: "kernel", timezone: "UTC" }
      const upcoming = yield* eventsOf("maintenance.upcoming")
      expect(upcoming.map((e) => [e.createdAt, e.data])).toEqual([[iso(t0 + 5 * MIN), {
        window,
        startsAt: iso(t0 + 10 * MIN),
        endsAt: iso(t0 + 40 * MIN),
        endedAt: null,
        endReason: null,
        beforeStartSeconds: 300,
        channels: ["chat:ops", "webhook:123"]
      }]])
      yield* TestClock.adjust("5 minutes")
      yield* settle
      const started = yield* eventsOf("maintenance.started")
      expect(started.map((e) => e.data)).toEqual([{
        window,
        startsAt: iso(t0 + 10 * MIN),
        endsAt: iso(t0 + 40 * MIN),
        endedAt: null,
        endReason: null,
        beforeStartSeconds: null,
        channels: ["chat:ops", "webhook:123"]
      }])
      yield* TestClock.adjust("30 minutes")
      yield* settle
      const ended = yield* eventsOf("maintenance.ended")
      expect(ended.map((e) => e.data)).toEqual([{
        window,
        startsAt: iso(t0 + 10 * MIN),
        endsAt: iso(t0 + 40 * MIN),
        endedAt: iso(t0 + 40 * MIN),
        endReason: "completed",
        beforeStartSeconds: null,
        channels: ["chat:ops", "webhook:123"]
      }])
      // The events name the window's monitors (webhook filters.monitorIds).
      const sql = yield* SqlClient.SqlClient
      const rows = yield* sql<{ monitor_ids: Array<string> }>`
        select monitor_ids from events where type like 'maintenance.%' and data->'window'->>'id' = ${w.id}`
      expect(rows.map((r) => r.monitor_ids)).toEqual([[monitor.id], [monitor.id], [monitor.id]])
      // A window whose notifications ask for nothing writes no events.
      expect((yield* historyOf(silent.id)).map((h) => h.endReason)).toEqual(["completed"])
    }))
})

it.effect("a restart while a window is active keeps it active and does not duplicate its history", () =>
  Effect.gen(function*() {
    const db = yield* makeTestDatabase()
    const token = newAdminToken()
    /** One life of the service on this database: start, use, stop. */
    const run = serviceLives(db.url, token)
    const t0 = yield* now
    const { monitor, w } = yield* run(Effect.gen(function*() {
      const monitor = yield* createMonitor({ schedule: { type: "interval", expression: "1h" }, graceSeconds: 600 })
      const w = yield* createWindow({
        name: "long job",
        monitorIds: [monitor.id],
        start: iso(t0),
        end: iso(t0 + 30 * MIN),
        notifications: { onStart: true, onEnd: true }
      })
      yield* settle
      return { monitor, w }
    }))
    yield* TestClock.adjust("5 minutes")
    yield* run(Effect.gen(function*() {
      yield* settle
      expect((yield* call("GET", `/api/maintenance-windows/${w.id}`)).body).toMatchObject({ status: "active", currentEnd: iso(t0 + 30 * MIN) })
      expect((yield* call("GET", `/api/monitors/${monitor.id}`)).body.inMaintenance).toBe(true)
      yield* fail(monitor.id)
      expect(yield* incidentsOf(monitor.id)).toEqual([])
      expect(yield* historyOf(w.id)).toEqual([expect.objectContaining({ startedAt: iso(t0), endedAt: null, suppressedIncidents: 1 })])
    }))
    // Down across the end: the next life closes the period at its end, once.
    yield* TestClock.adjust("30 minutes")
    yield* run(Effect.gen(function*() {
      yield* settle
      expect((yield* call("GET", `/api/maintenance-windows/${w.id}`)).body.status).toBe("ended")
      expect(yield* historyOf(w.id)).toEqual([
        expect.objectContaining({ startedAt: iso(t0), endedAt: iso(t0 + 30 * MIN), endReason: "completed", suppressedIncidents: 1 })
      ])
      const sql = yield* SqlClient.SqlClient
      const events = yield* sql<{ type: string }>`
        select type from events where type like 'maintenance.%' and data->'window'->>'id' = ${w.id} order by seq`
      expect(events.map((e) => e.type)).toEqual(["maintenance.started", "maintenance.ended"])
    }))
  }).pipe(Effect.scoped), 120_000)
