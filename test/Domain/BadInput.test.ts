import { expect, layer } from "@effect/vitest"
import { SqlClient } from "@effect/sql"
import { Effect } from "effect"
import { MAX_QUOTED_CHARS } from "../../src/Domain/Text.js"
import { raise } from "../Incidents/support.js"
import { call, createMonitor, TestServer, validMonitor } from "../support/fixture.js"

/**
 * Input that used to reach PostgreSQL and come back as a 500 (docs/decisions.md#errors: no input may produce
 * one): absurd dates and forged cursors in query strings, NUL characters in stored text. Each is a
 * 400 that names the parameter or field, and quotes at most the start of what was sent.
 */

const cursorOf = (text: string) => Buffer.from(text, "utf8").toString("base64url")
const DASHES = "-".repeat(36)
const ABSURD_DATES = [
  "-100000-01-01T00:00:00Z",
  "-000001-01-01T00:00:00Z",
  "+010000-01-01T00:00:00Z",
  "+275760-09-13T00:00:00Z",
  "+275761-01-01T00:00:00Z"
]
const LONG = "x".repeat(10_000)

const expect400 = (response: { status: number; body: any; text: string }, path: string, message?: RegExp) => {
  expect(response.status, response.text.slice(0, 500)).toBe(400)
  expect(response.body._tag).toBe("ValidationError")
  expect(response.body.path).toBe(path)
  if (message !== undefined) expect(response.body.message).toMatch(message)
}

/** The message quotes at most MAX_QUOTED_CHARS characters of the long value, and says how long it was. */
const expectShortQuote = (response: { status: number; body: any; text: string }) => {
  expect(response.status, response.text.slice(0, 500)).toBeGreaterThanOrEqual(400)
  expect(response.status).toBeLessThan(500)
  expect(response.body.message).not.toContain("x".repeat(MAX_QUOTED_CHARS + 1))
  expect(response.body.message.length).toBeLessThan(600)
}

const encode = encodeURIComponent

layer(TestServer(), { excludeTestServices: true, timeout: 120_000 })("bad input", (it) => {
  it.effect("runs: a forged cursor and absurd from/to dates are 400s naming the parameter", () =>
    Effect.gen(function*() {
      const monitor = yield* createMonitor()
      const runs = (query: string) => call("GET", `/api/monitors/${monitor.id}/runs?${query}`)
      expect400(yield* runs(`cursor=${DASHES}`), "cursor")
      expect400(yield* runs(`cursor=${cursorOf(`2026-01-01T00:00:00Z|${DASHES}`)}`), "cursor")
      expect400(yield* runs(`cursor=${cursorOf(`-100000-01-01T00:00:00Z|${monitor.id}`)}`), "cursor")
      expect400(yield* runs(`cursor=${cursorOf(`2026-01-01T00:00:00Z|${monitor.id}|x`)}`), "cursor")
      for (const date of ABSURD_DATES) {
        expect400(yield* runs(`from=${encode(date)}`), "from", /^from must be/)
        expect400(yield* runs(`to=${encode(date)}`), "to", /^to must be/)
      }
      expect((yield* runs(`from=${encode("0001-01-01T00:00:00Z")}&to=${encode("9999-12-31T23:59:59Z")}`)).status).toBe(200)
    }))

  it.effect("incidents: a cursor with an absurd date or a forged id is a 400 naming cursor", () =>
    Effect.gen(function*() {
      const monitor = yield* createMonitor()
      yield* raise(monitor.id)
      expect400(yield* call("GET", `/api/incidents?cursor=${DASHES}`), "cursor")
      expect400(yield* call("GET", `/api/incidents?cursor=${cursorOf(`-100000-01-01T00:00:00Z|${monitor.id}`)}`), "cursor")
      expect400(yield* call("GET", `/api/incidents?cursor=${cursorOf(`+275760-09-13T00:00:00Z|${monitor.id}`)}`), "cursor")
      expect400(yield* call("GET", `/api/incidents?cursor=${cursorOf(`2026-01-01T00:00:00Z|${DASHES}`)}`), "cursor")
      const page = yield* call("GET", "/api/incidents?limit=1")
      expect(page.status).toBe(200)
    }))

  it.effect("maintenance: absurd dates in history, occurrences, preview and windows are 400s naming the parameter", () =>
    Effect.gen(function*() {
      const monitor = yield* createMonitor()
      expect400(yield* call("GET", "/api/maintenance-windows/history?from=0000-01-01"), "from")
      expect400(yield* call("GET", "/api/maintenance-windows/history?to=10000-01-01"), "to")
      // The first and last days of the range are dates like any other (years below 100 included).
      for (const query of ["to=0001-01-01", "from=0001-01-01&to=0099-12-31", "from=9999-12-31&to=9999-12-31"]) {
        expect((yield* call("GET", `/api/maintenance-windows/history?${query}`)).status).toBe(200)
      }
      const created = yield* call("POST", "/api/maintenance-windows", {
        body: { name: "w", monitorIds: [monitor.id], start: "2031-01-01T00:00:00Z", end: "2031-01-01T01:00:00Z" }
      })
      expect(created.status).toBe(201)
      for (const date of ["0000-01-01T00:00:00Z", ...ABSURD_DATES]) {
        expect400(yield* call("GET", `/api/maintenance-windows/${created.body.id}/occurrences?from=${encode(date)}`), "from")
        expect400(
          yield* call("POST", "/api/maintenance-windows/preview", {
            body: { start: "2031-01-01T00:00:00Z", end: "2031-01-01T01:00:00Z", from: date }
          }),
          "from"
        )
      }
      expect400(
        yield* call("POST", "/api/maintenance-windows", {
          body: { name: "w", monitorIds: [monitor.id], start: "0000-01-01T00:00:00Z", end: "2031-01-01T01:00:00Z" }
        }),
        "start",
        /between 0001-01-01 and 9999-12-31/
      )
    }))

  it.effect("schedule preview: an absurd from is a 400 naming from", () =>
    Effect.gen(function*() {
      for (const from of ABSURD_DATES) {
        expect400(
          yield* call("POST", "/api/schedules/preview", { body: { schedule: { type: "cron", expression: "* * * * *" }, from } }),
          "from"
        )
      }
      const ok = yield* call("POST", "/api/schedules/preview", {
        body: { schedule: { type: "cron", expression: "0 3 * * *" }, from: "2031-01-01T00:00:00Z", count: 1 }
      })
      expect(ok.body.occurrences).toEqual(["2031-01-01T03:00:00.000Z"])
    }))

  it.effect("a NUL character in a monitor's stored text is a 400 naming the field; nothing is stored", () =>
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const count = Effect.map(sql<{ n: number }>`select count(*)::int as n from monitors`, (rows) => rows[0]!.n)
      const before = yield* count
      const cases: ReadonlyArray<[Record<string, unknown>, string]> = [
        [{ name: "nightly\u0000backup" }, "name"],
        [{ tags: ["ok", "bad\u0000tag"] }, "tags.1"],
        [{ schedule: { type: "cron", expression: "0 3 * * *\u0000" } }, "schedule.expression"],
        [{ schedule: { type: "interval", expression: "1h", timezone: "UTC\u0000" } }, "schedule.timezone"]
      ]
      for (const [extra, path] of cases) {
        const response = yield* call("POST", "/api/monitors", { body: validMonitor(extra) })
        expect400(response, path, /NUL character/)
      }
      expect(yield* count).toBe(before)
      const monitor = yield* createMonitor({ name: "clean" })
      for (const [body, path] of [[{ name: "a\u0000" }, "name"], [{ tags: ["\u0000"] }, "tags.0"]] as const) {
        expect400(yield* call("PATCH", `/api/monitors/${monitor.id}`, { body }), path, /NUL character/)
      }
      expect((yield* call("GET", `/api/monitors/${monitor.id}`)).body.name).toBe("clean")
    }))

  it.effect("a NUL character in a maintenance window's stored text is a 400 naming the field", () =>
    Effect.gen(function*() {
      const monitor = yield* createMonitor()
      const base = { name: "deploy", monitorIds: [monitor.id], start: "2031-01-01T00:00:00Z", end: "2031-01-01T01:00:00Z" }
      const cases: ReadonlyArray<[Record<string, unknown>, string]> = [
        [{ name: "de\u0000ploy" }, "name"],
        [{ reason: "because\u0000" }, "reason"],
        [{ timezone: "Europe/London\u0000" }, "timezone"],
        [{ monitorIds: [`${monitor.id}\u0000`] }, "monitorIds.0"],
        [{ notifications: { channels: ["chat:\u0000ops"] } }, "notifications.channels.0"],
        [{ start: undefined, end: undefined, rrule: "FREQ=DAILY\u0000", duration: 3600 }, "rrule"]
      ]
      for (const [extra, path] of cases) {
        expect400(yield* call("POST", "/api/maintenance-windows", { body: { ...base, ...extra } }), path, /NUL character/)
      }
      const windows = (yield* call("GET", "/api/maintenance-windows")).body.windows
      expect(windows.filter((w: any) => w.monitorIds.includes(monitor.id))).toEqual([])

      const active = yield* call("POST", "/api/maintenance-windows", {
        body: { ...base, start: new Date(Date.now() - 60_000).toISOString(), end: new Date(Date.now() + 3_600_000).toISOString() }
      })
      expect(active.status).toBe(201)
      expect400(yield* call("PATCH", `/api/maintenance-windows/${active.body.id}`, { body: { name: "\u0000" } }), "name", /NUL character/)
      expect400(
        yield* call("POST", `/api/maintenance-windows/${active.body.id}/override`, { body: { reason: "\u0000", durationSeconds: 60 } }),
        "reason",
        /NUL character/
      )
      expect((yield* call("GET", `/api/maintenance-windows/${active.body.id}`)).body.status).toBe("active")
    }))

  it.effect("a NUL character in an incident note is a 400 naming note; nothing is stored", () =>
    Effect.gen(function*() {
      const monitor = yield* createMonitor()
      const { incident } = yield* raise(monitor.id)
      expect400(yield* call("POST", `/api/incidents/${incident.id}/notes`, { body: { note: "seen\u0000" } }), "note", /NUL character/)
      expect400(yield* call("POST", `/api/incidents/${incident.id}/acknowledge`, { body: { note: "\u0000" } }), "note", /NUL character/)
      expect400(yield* call("POST", `/api/incidents/${incident.id}/resolve`, { body: { note: "\u0000" } }), "note", /NUL character/)
      const stored = yield* call("GET", `/api/incidents/${incident.id}`)
      expect(stored.body.status).toBe("OPEN")
      expect(stored.body.notes).toEqual([])
    }))

  it.effect("error messages quote at most the first 100 characters of a bad value", () =>
    Effect.gen(function*() {
      const monitor = yield* createMonitor()
      const responses = [
        yield* call("GET", `/api/monitors/${monitor.id}/runs?from=${LONG}`),
        yield* call("GET", `/api/incidents?monitorId=${LONG}`),
        yield* call("GET", `/api/events?monitorId=${LONG}`),
        yield* call("GET", `/api/monitors/${monitor.id}/percentiles?window=${LONG}`),
        yield* call("GET", `/api/maintenance-windows/history?from=${LONG}`),
        yield* call("POST", "/api/schedules/preview", { body: { schedule: { type: "interval", expression: LONG } } }),
        yield* call("POST", "/api/schedules/preview", { body: { schedule: { type: "cron", expression: "0 3 * * *", timezone: LONG } } }),
        yield* call("POST", "/api/schedules/preview", { body: { schedule: { type: "cron", expression: "0 3 * * *" }, from: LONG } }),
        yield* call("POST", "/api/maintenance-windows", { body: { name: "w", monitorIds: [LONG], start: "2031-01-01T00:00:00Z", end: "2031-01-01T01:00:00Z" } }),
        yield* call("POST", "/api/maintenance-windows", { body: { name: "w", monitorIds: [monitor.id], start: LONG, end: "2031-01-01T01:00:00Z" } }),
        yield* call("POST", "/api/maintenance-windows", {
          body: { name: "w", monitorIds: [monitor.id], start: "2031-01-01T00:00:00Z", end: "2031-01-01T01:00:00Z", timezone: LONG }
        }),
        yield* call("POST", "/api/maintenance-windows", {
          body: { name: "w", monitorIds: [monitor.id], start: "2031-01-01T00:00:00Z", end: "2031-01-01T01:00:00Z", notifications: { channels: [LONG] } }
        }),
        yield* call("POST", "/api/maintenance-windows/preview", { body: { rrule: `FREQ=DAILY;BYDAY=${"x".repeat(900)}`, duration: 60 } }),
        yield* call("POST", "/api/maintenance-windows/preview", { body: { rrule: `FREQ=${"x".repeat(900)}`, duration: 60 } }),
        yield* call("POST", "/api/maintenance-windows/preview", { body: { rrule: "FREQ=DAILY", duration: 60, timezone: LONG } })
      ]
      for (const response of responses) expectShortQuote(response)
      // A request target over 4096 characters is refused before anything reads it (414).
      expect(responses[0]!.status).toBe(414)
      expect(responses[0]!.body.message).toContain("the limit is 4096")
      expect(responses.find((r) => r.status === 400 && r.body.message.includes("(10000 characters)"))).toBeDefined()
    }))
})
