import { expect, layer } from "@effect/vitest"
import { Clock, Effect, TestClock } from "effect"
import { call, createMonitor, createOrganization, createToken, TestServer } from "../support/fixture.js"
import { createWindow, settleWith } from "./support.js"

const MIN = 60_000
const HOUR = 3_600_000
const DAY = 86_400_000
const iso = (t: number) => new Date(t).toISOString()
const now = Clock.currentTimeMillis

const settle = settleWith(2, 20)

const expect400 = (body: Record<string, unknown>, path: string, message?: RegExp) =>
  Effect.gen(function*() {
    const r = yield* call("POST", "/api/maintenance-windows", { body })
    expect(r.status, r.text).toBe(400)
    expect(r.body._tag).toBe("ValidationError")
    expect(r.body.path).toBe(path)
    if (message !== undefined) expect(r.body.message).toMatch(message)
    return r.body
  })

// The service runs on the TestClock: window states change only when the test moves the clock.
layer(TestServer(), { timeout: 120_000 })("maintenance windows API", (it) => {
  it.effect("a one-time window in the future is scheduled; one covering now is active, listed and shown on the monitor", () =>
    Effect.gen(function*() {
      const monitor = yield* createMonitor({ schedule: { type: "interval", expression: "1h" } })
      const t0 = yield* now
      const later = yield* createWindow({
        name: "db upgrade",
        monitorIds: [monitor.id],
        start: iso(t0 + HOUR),
        end: iso(t0 + 2 * HOUR),
        reason: "postgres 17"
      })
      expect(later).toMatchObject({
        name: "db upgrade",
        monitorIds: [monitor.id],
        kind: "one-time",
        start: iso(t0 + HOUR),
        end: iso(t0 + 2 * HOUR),
        rrule: null,
        duration: null,
        timezone: "UTC",
        reason: "postgres 17",
        notifications: { beforeStart: null, onStart: false, onEnd: false, channels: [] },
        status: "scheduled",
        nextStart: iso(t0 + HOUR),
        currentEnd: null,
        overrideEndsAt: null
      })
      const got = yield* call("GET", `/api/maintenance-windows/${later.id}`)
      expect(got.status).toBe(200)
      expect(got.body).toEqual(later)

      const current = yield* createWindow({ name: "deploy", monitorIds: [monitor.id], start: iso(t0), end: iso(t0 + 30 * MIN) })
      expect(current).toMatchObject({ status: "active", currentEnd: iso(t0 + 30 * MIN), nextStart: null })
      const active = yield* call("GET", "/api/maintenance-windows/active")
      expect(active.status).toBe(200)
      expect(active.body).toEqual([
        { id: current.id, name: "deploy", monitorIds: [monitor.id], startedAt: iso(t0), endsAt: iso(t0 + 30 * MIN), remainingSeconds: 1800 }
      ])
      const m = yield* call("GET", `/api/monitors/${monitor.id}`)
      expect(m.body.inMaintenance).toBe(true)
      expect(m.body.maintenance).toEqual({ windowId: current.id, name: "deploy", endsAt: iso(t0 + 30 * MIN), remainingSeconds: 1800 })
      const list = yield* call("GET", "/api/maintenance-windows")
      expect(list.status).toBe(200)
      // Oldest first, then by id (both were created at the same instant of the TestClock).
      expect(list.body.windows.map((w: any) => w.id)).toEqual([later.id, current.id].sort())
      const listed = yield* call("GET", "/api/monitors")
      expect(listed.body.monitors.find((x: any) => x.id === monitor.id).inMaintenance).toBe(true)

      // Ten minutes on, the remaining time has gone down; at the end the window is ended.
      yield* TestClock.adjust("10 minutes")
      yield* settle
      expect((yield* call("GET", "/api/maintenance-windows/active")).body[0].remainingSeconds).toBe(1200)
      yield* TestClock.adjust("20 minutes")
      yield* settle
      expect((yield* call("GET", `/api/maintenance-windows/${current.id}`)).body).toMatchObject({ status: "ended", currentEnd: null })
      expect((yield* call("GET", "/api/maintenance-windows/active")).body).toEqual([])
      const after = yield* call("GET", `/api/monitors/${monitor.id}`)
      expect(after.body).toMatchObject({ inMaintenance: false, maintenance: null })
      // yield to the later window's start: scheduled → active
      yield* TestClock.adjust("30 minutes")
      yield* settle
      expect((yield* call("GET", `/api/maintenance-windows/${later.id}`)).body).toMatchObject({
        status: "active",
        currentEnd: iso(t0 + 2 * HOUR)
      })
      const history = (yield* call("GET", "/api/maintenance-windows/history")).body as Array<any>
      const mine = history.filter((h) => h.windowId === current.id || h.windowId === later.id)
      expect(mine).toEqual([
        {
          windowId: later.id,
          name: "db upgrade",
          monitorIds: [monitor.id],
          startedAt: iso(t0 + HOUR),
          endedAt: null,
          endsAt: iso(t0 + 2 * HOUR),
          endReason: null,
          overrides: [],
          suppressedIncidents: 0
        },
        {
          windowId: current.id,
          name: "deploy",
          monitorIds: [monitor.id],
          startedAt: iso(t0),
          endedAt: iso(t0 + 30 * MIN),
          endsAt: iso(t0 + 30 * MIN),
          endReason: "completed",
          overrides: [],
          suppressedIncidents: 0
        }
      ])
      yield* call("DELETE", `/api/maintenance-windows/${later.id}`)
    }))

  it.effect("a recurring window follows its rule in its zone; occurrences and preview agree; preview stores nothing", () =>
    Effect.gen(function*() {
      const monitor = yield* createMonitor()
      const t0 = yield* now
      const body = {
        name: "nightly patching",
        monitorIds: [monitor.id],
        rrule: "FREQ=DAILY;BYHOUR=2;BYMINUTE=0",
        duration: 3600,
        timezone: "America/New_York",
        start: iso(t0)
      }
      const before = (yield* call("GET", "/api/maintenance-windows")).body.windows.length
      const preview = yield* call("POST", "/api/maintenance-windows/preview", { body: { ...body, count: 3 } })
      expect(preview.status, preview.text).toBe(200)
      expect(preview.body.occurrences).toHaveLength(3)
      for (const o of preview.body.occurrences) {
        expect(Date.parse(o.end) - Date.parse(o.start)).toBe(HOUR)
        // 02:00 in New York (EST in January: UTC−5) is 07:00 UTC.
        expect(new Date(o.start).getUTCHours()).toBe(7)
      }
      expect((yield* call("GET", "/api/maintenance-windows")).body.windows.length).toBe(before)

      const w = yield* createWindow(body)
      expect(w).toMatchObject({
        kind: "recurring",
        rrule: "FREQ=DAILY;BYHOUR=2;BYMINUTE=0",
        duration: 3600,
        timezone: "America/New_York",
        end: null,
        status: "scheduled",
        nextStart: preview.body.occurrences[0].start
      })
      const occ = yield* call("GET", `/api/maintenance-windows/${w.id}/occurrences?count=3`)
      expect(occ.status).toBe(200)
      expect(occ.body).toEqual(preview.body)
      const defaultCount = yield* call("GET", `/api/maintenance-windows/${w.id}/occurrences`)
      expect(defaultCount.body.occurrences).toHaveLength(10)
      const fromLater = yield* call("GET", `/api/maintenance-windows/${w.id}/occurrences?count=1&from=${preview.body.occurrences[1].start}`)
      expect(fromLater.body.occurrences).toEqual([preview.body.occurrences[1]])
      expect((yield* call("GET", `/api/maintenance-windows/${w.id}/occurrences?count=0`)).status).toBe(400)
      expect((yield* call("GET", `/api/maintenance-windows/${w.id}/occurrences?count=101`)).status).toBe(400)
      expect((yield* call("GET", `/api/maintenance-windows/${w.id}/occurrences?from=yesterday`)).status).toBe(400)
      // Without start, the creation time anchors the rule.
      const anchored = yield* createWindow({ ...body, start: undefined })
      expect(anchored.start).toBe(iso(t0))
      yield* call("DELETE", `/api/maintenance-windows/${w.id}`)
      yield* call("DELETE", `/api/maintenance-windows/${anchored.id}`)
    }))

  it.effect("invalid windows are 400 naming the field", () =>
    Effect.gen(function*() {
      const monitor = yield* createMonitor()
      const t0 = yield* now
      const recurring = { name: "w", monitorIds: [monitor.id], rrule: "FREQ=DAILY;BYHOUR=3", duration: 600 }
      const oneTime = { name: "w", monitorIds: [monitor.id], start: iso(t0 + HOUR), end: iso(t0 + 2 * HOUR) }
      yield* expect400({ ...recurring, rrule: "FREQ=MONTHLY;BYMONTHDAY=32" }, "rrule")
      yield* expect400({ ...recurring, rrule: "FREQ=SECONDLY" }, "rrule")
      yield* expect400({ ...recurring, rrule: "not a rule" }, "rrule")
      yield* expect400({ ...recurring, timezone: "Mars/Olympus_Mons" }, "timezone")
      yield* expect400({ ...oneTime, timezone: "Mars/Olympus_Mons" }, "timezone")
      yield* expect400({ ...recurring, start: iso(t0), end: iso(t0 + HOUR) }, "end", /not both/)
      yield* expect400({ name: "w", monitorIds: [monitor.id] }, "start", /either/)
      yield* expect400({ name: "w", monitorIds: [monitor.id], reason: "x" }, "start")
      yield* expect400({ ...oneTime, end: iso(t0 + HOUR) }, "end", /after start/)
      yield* expect400({ ...oneTime, end: iso(t0) }, "end")
      yield* expect400({ ...oneTime, end: undefined }, "end")
      yield* expect400({ ...oneTime, start: "tomorrow" }, "start")
      yield* expect400({ ...oneTime, start: "2026-03-01T02:00:00" }, "start", /zone/)
      yield* expect400({ ...recurring, duration: 0 }, "duration")
      yield* expect400({ ...recurring, duration: -5 }, "duration")
      yield* expect400({ ...recurring, duration: 1.5 }, "duration")
      yield* expect400({ ...recurring, rrule: undefined }, "rrule")
      yield* expect400({ ...recurring, duration: undefined }, "duration")
      yield* expect400({ ...oneTime, monitorIds: [] }, "monitorIds")
      yield* expect400({ ...oneTime, monitorIds: ["00000000-0000-4000-8000-000000000000"] }, "monitorIds.0", /does not exist/)
      yield* expect400({ ...oneTime, monitorIds: [monitor.id, "nope"] }, "monitorIds.1")
      yield* expect400({ ...oneTime, name: "" }, "name")
      yield* expect400({ ...oneTime, name: undefined }, "name")
      yield* expect400({ ...oneTime, monitorIds: undefined }, "monitorIds")
      yield* expect400({ ...oneTime, notifications: { channels: ["slack"] } }, "notifications.channels.0")
      yield* expect400({ ...oneTime, notifications: { beforeStart: -1 } }, "notifications.beforeStart")
      // Another organization's monitor does not exist here.
      const other = yield* createOrganization("maint-other-a")
      const theirs = yield* call("POST", "/api/monitors", {
        token: other.token,
        body: { name: "theirs", schedule: { type: "interval", expression: "1h" } }
      })
      expect(theirs.status).toBe(201)
      yield* expect400({ ...oneTime, monitorIds: [theirs.body.id] }, "monitorIds.0", /does not exist/)
      // Preview validates the same way.
      const bad = yield* call("POST", "/api/maintenance-windows/preview", { body: { rrule: "FREQ=SECONDLY", duration: 60 } })
      expect(bad.status).toBe(400)
      expect(bad.body.path).toBe("rrule")
      const badCount = yield* call("POST", "/api/maintenance-windows/preview", { body: { ...recurring, count: 0 } })
      expect(badCount.status).toBe(400)
      // Nothing was stored.
      const windows = (yield* call("GET", "/api/maintenance-windows")).body.windows as Array<any>
      expect(windows.filter((w) => w.monitorIds.includes(monitor.id))).toEqual([])
    }))

  it.effect("PATCH changes any subset and answers the whole window; invalid changes are 400", () =>
    Effect.gen(function*() {
      const monitor = yield* createMonitor()
      const second = yield* createMonitor({ name: "second" })
      const t0 = yield* now
      const w = yield* createWindow({ name: "w", monitorIds: [monitor.id], start: iso(t0 + HOUR), end: iso(t0 + 2 * HOUR) })
      const renamed = yield* call("PATCH", `/api/maintenance-windows/${w.id}`, { body: { name: "renamed", monitorIds: [second.id] } })
      expect(renamed.status, renamed.text).toBe(200)
      expect(renamed.body).toMatchObject({ name: "renamed", monitorIds: [second.id], start: iso(t0 + HOUR), status: "scheduled" })
      // One-time → recurring: rrule and duration in, end out.
      const recurring = yield* call("PATCH", `/api/maintenance-windows/${w.id}`, {
        body: { rrule: "FREQ=WEEKLY;BYDAY=SU;BYHOUR=3;BYMINUTE=0", duration: 7200, end: null, timezone: "Europe/London" }
      })
      expect(recurring.status, recurring.text).toBe(200)
      expect(recurring.body).toMatchObject({ kind: "recurring", end: null, duration: 7200, timezone: "Europe/London" })
      const bad = yield* call("PATCH", `/api/maintenance-windows/${w.id}`, { body: { duration: 0 } })
      expect(bad.status).toBe(400)
      expect(bad.body.path).toBe("duration")
      const both = yield* call("PATCH", `/api/maintenance-windows/${w.id}`, { body: { end: iso(t0 + 3 * HOUR) } })
      expect(both.status).toBe(400)
      expect(both.body.path).toBe("end")
      const noMonitor = yield* call("PATCH", `/api/maintenance-windows/${w.id}`, { body: { monitorIds: ["00000000-0000-4000-8000-000000000000"] } })
      expect(noMonitor.status).toBe(400)
      expect(noMonitor.body.path).toBe("monitorIds.0")
      const zone = yield* call("PATCH", `/api/maintenance-windows/${w.id}`, { body: { timezone: "Nowhere/City" } })
      expect(zone.status).toBe(400)
      expect(zone.body.path).toBe("timezone")
      // The failed changes changed nothing.
      expect((yield* call("GET", `/api/maintenance-windows/${w.id}`)).body).toEqual(recurring.body)
      expect((yield* call("DELETE", `/api/maintenance-windows/${w.id}`)).status).toBe(204)
      expect((yield* call("GET", `/api/maintenance-windows/${w.id}`)).status).toBe(404)
      expect((yield* call("DELETE", `/api/maintenance-windows/${w.id}`)).status).toBe(404)
      expect((yield* call("PATCH", `/api/maintenance-windows/${w.id}`, { body: { name: "x" } })).status).toBe(404)
    }))

  it.effect("override: 409 unless active; 400 for a duration of 0; overridden while it runs, active again after", () =>
    Effect.gen(function*() {
      const monitor = yield* createMonitor()
      const t0 = yield* now
      const scheduled = yield* createWindow({ name: "later", monitorIds: [monitor.id], start: iso(t0 + HOUR), end: iso(t0 + 2 * HOUR) })
      const notActive = yield* call("POST", `/api/maintenance-windows/${scheduled.id}/override`, { body: { reason: "x", durationSeconds: 60 } })
      expect(notActive.status).toBe(409)
      expect(notActive.body._tag).toBe("Conflict")
      const w = yield* createWindow({ name: "now", monitorIds: [monitor.id], start: iso(t0), end: iso(t0 + HOUR) })
      const zero = yield* call("POST", `/api/maintenance-windows/${w.id}/override`, { body: { reason: "x", durationSeconds: 0 } })
      expect(zero.status).toBe(400)
      expect(zero.body.path).toBe("durationSeconds")
      const missing = yield* call("POST", `/api/maintenance-windows/${w.id}/override`, { body: { durationSeconds: 60 } })
      expect(missing.status).toBe(400)
      const o = yield* call("POST", `/api/maintenance-windows/${w.id}/override`, { body: { reason: "verify the deploy", durationSeconds: 600 } })
      expect(o.status, o.text).toBe(200)
      expect(o.body).toMatchObject({ id: w.id, status: "overridden", overrideEndsAt: iso(t0 + 10 * MIN), currentEnd: iso(t0 + HOUR) })
      expect((yield* call("GET", "/api/maintenance-windows/active")).body.map((a: any) => a.id)).not.toContain(w.id)
      expect((yield* call("GET", `/api/monitors/${monitor.id}`)).body.inMaintenance).toBe(false)
      const twice = yield* call("POST", `/api/maintenance-windows/${w.id}/override`, { body: { reason: "x", durationSeconds: 60 } })
      expect(twice.status).toBe(409)
      yield* TestClock.adjust("10 minutes")
      yield* settle
      expect((yield* call("GET", `/api/maintenance-windows/${w.id}`)).body).toMatchObject({ status: "active", overrideEndsAt: null })
      expect((yield* call("GET", `/api/monitors/${monitor.id}`)).body.inMaintenance).toBe(true)
      const history = (yield* call("GET", "/api/maintenance-windows/history")).body as Array<any>
      expect(history.find((h) => h.windowId === w.id).overrides).toEqual([
        { reason: "verify the deploy", startedAt: iso(t0), endedAt: iso(t0 + 10 * MIN) }
      ])
      yield* call("DELETE", `/api/maintenance-windows/${w.id}`)
      yield* call("DELETE", `/api/maintenance-windows/${scheduled.id}`)
    }))

  it.effect("history: date range, validation, and deleted windows' periods stay", () =>
    Effect.gen(function*() {
      const monitor = yield* createMonitor()
      const t0 = yield* now
      const w = yield* createWindow({ name: "to delete", monitorIds: [monitor.id], start: iso(t0), end: iso(t0 + HOUR) })
      yield* TestClock.adjust("5 minutes")
      expect((yield* call("DELETE", `/api/maintenance-windows/${w.id}`)).status).toBe(204)
      const day = iso(t0).slice(0, 10)
      const history = yield* call("GET", `/api/maintenance-windows/history?from=${day}&to=${day}`)
      expect(history.status).toBe(200)
      expect(history.body.find((h: any) => h.windowId === w.id)).toMatchObject({
        name: "to delete",
        startedAt: iso(t0),
        endedAt: iso(t0 + 5 * MIN),
        endReason: "deleted"
      })
      const nextDay = iso(t0 + 2 * DAY).slice(0, 10)
      const later = yield* call("GET", `/api/maintenance-windows/history?from=${nextDay}&to=${nextDay}`)
      expect(later.body.find((h: any) => h.windowId === w.id)).toBeUndefined()
      const prevDay = iso(t0 - 2 * DAY).slice(0, 10)
      expect((yield* call("GET", `/api/maintenance-windows/history?from=${prevDay}&to=${prevDay}`)).body
        .find((h: any) => h.windowId === w.id)).toBeUndefined()
      expect((yield* call("GET", `/api/maintenance-windows/history?to=${prevDay}`)).body
        .find((h: any) => h.windowId === w.id)).toBeUndefined()
      for (const q of ["from=2026-13-01", "from=2026-02-30", "to=yesterday", "from=2026-03-02&to=2026-03-01", "from=20260301"]) {
        const r = yield* call("GET", `/api/maintenance-windows/history?${q}`)
        expect(r.status, q).toBe(400)
        expect(r.body._tag).toBe("ValidationError")
        expect(["from", "to"]).toContain(r.body.path)
      }
    }))

  it.effect("another organization's windows are 404; read tokens read and cannot write", () =>
    Effect.gen(function*() {
      const monitor = yield* createMonitor()
      const t0 = yield* now
      const w = yield* createWindow({ name: "mine", monitorIds: [monitor.id], start: iso(t0), end: iso(t0 + HOUR) })
      const other = yield* createOrganization("maint-other-b")
      const token = other.token
      expect((yield* call("GET", `/api/maintenance-windows/${w.id}`, { token })).status).toBe(404)
      expect((yield* call("PATCH", `/api/maintenance-windows/${w.id}`, { token, body: { name: "x" } })).status).toBe(404)
      expect((yield* call("POST", `/api/maintenance-windows/${w.id}/override`, { token, body: { reason: "x", durationSeconds: 60 } })).status)
        .toBe(404)
      expect((yield* call("GET", `/api/maintenance-windows/${w.id}/occurrences`, { token })).status).toBe(404)
      expect((yield* call("DELETE", `/api/maintenance-windows/${w.id}`, { token })).status).toBe(404)
      expect((yield* call("GET", "/api/maintenance-windows", { token })).body.windows).toEqual([])
      expect((yield* call("GET", "/api/maintenance-windows/active", { token })).body).toEqual([])
      expect((yield* call("GET", "/api/maintenance-windows/history", { token })).body).toEqual([])
      expect((yield* call("GET", "/api/maintenance-windows/not-a-uuid")).status).toBe(404)
      const read = yield* createToken("read")
      expect((yield* call("GET", `/api/maintenance-windows/${w.id}`, { token: read.token })).status).toBe(200)
      expect((yield* call("GET", "/api/maintenance-windows/history", { token: read.token })).status).toBe(200)
      expect((yield* call("DELETE", `/api/maintenance-windows/${w.id}`, { token: read.token })).status).toBe(403)
      expect((yield* call("POST", "/api/maintenance-windows", { token: read.token, body: {} })).status).toBe(403)
      expect((yield* call("GET", "/api/maintenance-windows", { token: null })).status).toBe(401)
      // Still there, and still active, after all that.
      expect((yield* call("GET", `/api/maintenance-windows/${w.id}`)).body.status).toBe("active")
      yield* call("DELETE", `/api/maintenance-windows/${w.id}`)
    }))
})
