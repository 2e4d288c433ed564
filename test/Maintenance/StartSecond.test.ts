import { expect, layer } from "@effect/vitest"
import { Clock, Duration, Effect, TestClock } from "effect"
import { call, createMonitor, TestServer } from "../support/fixture.js"
import { createWindow, fail, historyOf, incidentsOf, settle } from "./support.js"

/**
 * A window never starts suppressing later than the start it was given (docs/maintenance.md,
 * "Start to the second"): a recurring window's DTSTART keeps its second and every period starts at
 * that second past the minute; a one-time window starts at its instant, milliseconds included.
 */

const SECOND = 1000
const MIN = 60_000
const HOUR = 3_600_000
const iso = (t: number) => new Date(t).toISOString()
const now = Clock.currentTimeMillis

/** Moves the TestClock forward to the next instant that is `second` seconds past a minute (.000). */
const toSecondOfMinute = (second: number) =>
  Effect.gen(function*() {
    const t = yield* now
    let target = Math.floor(t / MIN) * MIN + second * SECOND
    while (target <= t || target < 2 * MIN) target += MIN
    yield* TestClock.adjust(Duration.millis(target - t))
    yield* settle
    return target
  })

const windowOf = (id: string) => Effect.map(call("GET", `/api/maintenance-windows/${id}`), (r) => r.body as Record<string, any>)

const hourlyMonitor = () => createMonitor({ schedule: { type: "interval", expression: "1h" }, graceSeconds: 600 })

layer(TestServer(), { timeout: 120_000 })("a window starts at the second it was given", (it) => {
  it.effect("FREQ=HOURLY, duration 600, start 30 s ago: active at :10 and at :45 past the minute, from the given second", () =>
    Effect.gen(function*() {
      for (const second of [10, 45]) {
        const t = yield* toSecondOfMinute(second)
        const start = t - 30 * SECOND
        const monitor = yield* hourlyMonitor()
        const w = yield* createWindow({ name: `hourly at :${second}`, monitorIds: [monitor.id], rrule: "FREQ=HOURLY", duration: 600, start: iso(start) })
        expect(w, `clock at :${second}`).toMatchObject({
          kind: "recurring",
          start: iso(start),
          rrule: `FREQ=HOURLY;BYMINUTE=${new Date(start).getUTCMinutes()}`,
          status: "active",
          currentEnd: iso(start + 10 * MIN),
          nextStart: iso(start + HOUR)
        })
        const active = (yield* call("GET", "/api/maintenance-windows/active")).body as Array<any>
        expect(active.find((a) => a.id === w.id)).toEqual({
          id: w.id,
          name: `hourly at :${second}`,
          monitorIds: [monitor.id],
          startedAt: iso(start),
          endsAt: iso(start + 10 * MIN),
          remainingSeconds: 570
        })
        // occurrences from now: the running period first; from the start: the same periods
        const upcoming = yield* call("GET", `/api/maintenance-windows/${w.id}/occurrences?count=2`)
        expect(upcoming.body.occurrences).toEqual([
          { start: iso(start), end: iso(start + 10 * MIN) },
          { start: iso(start + HOUR), end: iso(start + HOUR + 10 * MIN) }
        ])
        const fromStart = yield* call("GET", `/api/maintenance-windows/${w.id}/occurrences?count=2&from=${iso(start)}`)
        expect(fromStart.body.occurrences).toEqual(upcoming.body.occurrences)
        expect((yield* call("GET", `/api/monitors/${monitor.id}`)).body.inMaintenance).toBe(true)
        // a failed run now is suppressed and counted on the period that began at the given second
        yield* fail(monitor.id)
        expect(yield* incidentsOf(monitor.id)).toEqual([])
        expect(yield* historyOf(w.id)).toEqual([
          expect.objectContaining({ startedAt: iso(start), endsAt: iso(start + 10 * MIN), endedAt: null, suppressedIncidents: 1 })
        ])
      }
    }))

  it.effect("suppression begins at the given second, not before and not after: recurring, and one-time with milliseconds", () =>
    Effect.gen(function*() {
      const t = yield* toSecondOfMinute(10)
      const recurringMonitor = yield* hourlyMonitor()
      const oneTimeMonitor = yield* hourlyMonitor()
      const start = t + 20 * SECOND // :30 past the minute
      const body = { rrule: "FREQ=HOURLY", duration: 600, start: iso(start) }
      const preview = yield* call("POST", "/api/maintenance-windows/preview", { body: { ...body, count: 2 } })
      expect(preview.body.occurrences).toEqual([
        { start: iso(start), end: iso(start + 10 * MIN) },
        { start: iso(start + HOUR), end: iso(start + HOUR + 10 * MIN) }
      ])
      const recurring = yield* createWindow({ name: "recurring", monitorIds: [recurringMonitor.id], ...body })
      expect(recurring).toMatchObject({ start: iso(start), status: "scheduled", nextStart: iso(start) })
      const oneTimeStart = start + 250
      const oneTime = yield* createWindow({
        name: "one-time",
        monitorIds: [oneTimeMonitor.id],
        start: iso(oneTimeStart),
        end: iso(oneTimeStart + 10 * MIN)
      })
      expect(oneTime).toMatchObject({ start: iso(oneTimeStart), status: "scheduled", nextStart: iso(oneTimeStart) })

      yield* TestClock.adjust("19 seconds") // start - 1 s
      yield* settle
      expect((yield* windowOf(recurring.id)).status).toBe("scheduled")
      expect((yield* windowOf(oneTime.id)).status).toBe("scheduled")

      yield* TestClock.adjust("2 seconds") // start + 1 s
      yield* settle
      expect(yield* windowOf(recurring.id)).toMatchObject({ status: "active", currentEnd: iso(start + 10 * MIN) })
      expect(yield* windowOf(oneTime.id)).toMatchObject({ status: "active", currentEnd: iso(oneTimeStart + 10 * MIN) })
      yield* fail(recurringMonitor.id)
      yield* fail(oneTimeMonitor.id)
      expect(yield* incidentsOf(recurringMonitor.id)).toEqual([])
      expect(yield* incidentsOf(oneTimeMonitor.id)).toEqual([])
      expect(yield* historyOf(recurring.id)).toEqual([expect.objectContaining({ startedAt: iso(start), suppressedIncidents: 1 })])
      expect(yield* historyOf(oneTime.id)).toEqual([expect.objectContaining({ startedAt: iso(oneTimeStart), suppressedIncidents: 1 })])
    }))

  it.effect("without a start, the creation minute anchors the rule: active at once at :45, periods on whole minutes, preview agrees", () =>
    Effect.gen(function*() {
      const t = yield* toSecondOfMinute(45)
      const minute = t - 45 * SECOND
      const monitor = yield* hourlyMonitor()
      const preview = yield* call("POST", "/api/maintenance-windows/preview", { body: { rrule: "FREQ=HOURLY", duration: 600, count: 2 } })
      expect(preview.body.occurrences).toEqual([
        { start: iso(minute), end: iso(minute + 10 * MIN) },
        { start: iso(minute + HOUR), end: iso(minute + HOUR + 10 * MIN) }
      ])
      const w = yield* createWindow({ name: "from now", monitorIds: [monitor.id], rrule: "FREQ=HOURLY", duration: 600 })
      expect(w).toMatchObject({ start: iso(minute), status: "active", currentEnd: iso(minute + 10 * MIN), nextStart: iso(minute + HOUR) })
      yield* fail(monitor.id)
      expect(yield* incidentsOf(monitor.id)).toEqual([])
      // BYHOUR/BYMINUTE given: the periods are at that minute's second 0, not the creation time's second
      const daily = yield* createWindow({ name: "nightly", monitorIds: [monitor.id], rrule: "FREQ=DAILY;BYHOUR=2;BYMINUTE=30", duration: 600 })
      expect(new Date(daily.nextStart).getUTCSeconds()).toBe(0)
      expect(new Date(daily.nextStart).getUTCMilliseconds()).toBe(0)
      expect(daily.start).toBe(iso(minute))
    }))

  it.effect("a DAILY window with BYHOUR/BYMINUTE and a start with seconds: preview, window and occurrences keep the second, also across DST", () =>
    Effect.gen(function*() {
      const monitor = yield* hourlyMonitor()
      const body = { rrule: "FREQ=DAILY;BYHOUR=2,14;BYMINUTE=15", duration: 600, start: "2026-03-01T12:34:30.750Z" }
      const expected = [
        { start: "2026-03-01T14:15:30.000Z", end: "2026-03-01T14:25:30.000Z" },
        { start: "2026-03-02T02:15:30.000Z", end: "2026-03-02T02:25:30.000Z" },
        { start: "2026-03-02T14:15:30.000Z", end: "2026-03-02T14:25:30.000Z" }
      ]
      const preview = yield* call("POST", "/api/maintenance-windows/preview", {
        body: { ...body, from: "2026-03-01T00:00:00Z", count: 3 }
      })
      expect(preview.status, preview.text).toBe(200)
      expect(preview.body.occurrences).toEqual(expected)
      const w = yield* createWindow({ name: "twice a day", monitorIds: [monitor.id], ...body })
      // DTSTART is the start without its milliseconds (never later than asked); the rule gets no BYSECOND
      expect(w).toMatchObject({ start: "2026-03-01T12:34:30.000Z", rrule: "FREQ=DAILY;BYHOUR=2,14;BYMINUTE=15", nextStart: expected[0]!.start })
      const occurrences = yield* call("GET", `/api/maintenance-windows/${w.id}/occurrences?from=2026-03-01T00:00:00Z&count=3`)
      expect(occurrences.body.occurrences).toEqual(expected)
      // The rule returned by the API can be sent back: a PATCH with it changes nothing.
      const patched = yield* call("PATCH", `/api/maintenance-windows/${w.id}`, { body: { rrule: w.rrule } })
      expect(patched.status, patched.text).toBe(200)
      expect(patched.body).toMatchObject({ start: w.start, rrule: w.rrule, nextStart: w.nextStart })

      // London, 01:30 local: skipped on 29 March (shifted to 02:30 BST), repeated on 25 October (first pass)
      const london = { rrule: "FREQ=DAILY;BYHOUR=1;BYMINUTE=30", duration: 3600, timezone: "Europe/London", start: "2026-03-20T10:00:45Z" }
      const spring = yield* call("POST", "/api/maintenance-windows/preview", { body: { ...london, from: "2026-03-28T00:00:00Z", count: 3 } })
      expect(spring.body.occurrences.map((o: any) => o.start)).toEqual([
        "2026-03-28T01:30:45.000Z",
        "2026-03-29T01:30:45.000Z",
        "2026-03-30T00:30:45.000Z"
      ])
      const autumn = yield* call("POST", "/api/maintenance-windows/preview", { body: { ...london, from: "2026-10-24T00:00:00Z", count: 3 } })
      expect(autumn.body.occurrences.map((o: any) => o.start)).toEqual([
        "2026-10-24T00:30:45.000Z",
        "2026-10-25T00:30:45.000Z",
        "2026-10-26T01:30:45.000Z"
      ])
    }))
})
