import { expect, layer } from "@effect/vitest"
import { Effect } from "effect"
import { call, TestServer, validMonitor } from "../support/fixture.js"

layer(TestServer(), { excludeTestServices: true, timeout: 120_000 })("monitors API", (it) => {
  it.effect("create returns the whole monitor with defaults, NEW status, health 100 and the next expected time", () =>
    Effect.gen(function*() {
      const before = Date.now()
      const created = yield* call("POST", "/api/monitors", {
        body: { name: "  db backup ", schedule: { type: "cron", expression: "30 2 * * *", timezone: "America/New_York" } }
      })
      expect(created.status).toBe(201)
      const m = created.body
      expect(m).toMatchObject({
        name: "db backup",
        schedule: { type: "cron", expression: "30 2 * * *", timezone: "America/New_York" },
        status: "NEW",
        healthScore: 100,
        graceSeconds: 60,
        maxRuntimeSeconds: null,
        maxOutputSizeKb: 10,
        captureOutput: true,
        sla: null,
        tags: [],
        autoResolve: true,
        paused: false,
        lastPingAt: null,
        inMaintenance: false,
        maintenance: null
      })
      expect(Date.parse(m.createdAt)).toBeGreaterThanOrEqual(before - 1000)
      // 02:30 in New York is 06:30 or 07:30 UTC, within the next day.
      const next = Date.parse(m.nextExpectedAt)
      expect(next).toBeGreaterThan(before)
      expect(next - before).toBeLessThanOrEqual(25 * 3600 * 1000)
      expect(new Date(next).getUTCMinutes()).toBe(30)
      expect([6, 7]).toContain(new Date(next).getUTCHours())
      const got = yield* call("GET", `/api/monitors/${m.id}`)
      expect(got.status).toBe(200)
      expect(got.body).toEqual(m)
    }))

  it.effect("an interval monitor expects its first run one interval after creation; timezone defaults to UTC", () =>
    Effect.gen(function*() {
      const created = yield* call("POST", "/api/monitors", {
        body: { name: "heartbeat", schedule: { type: "interval", expression: "5m" }, graceSeconds: 30, sla: { durationTarget: "p95", maxDurationMs: 60000 }, tags: ["prod"] }
      })
      expect(created.status).toBe(201)
      expect(created.body.schedule.timezone).toBe("UTC")
      const lag = Date.parse(created.body.nextExpectedAt) - Date.parse(created.body.createdAt)
      expect(lag).toBe(5 * 60 * 1000)
      expect(created.body.sla).toEqual({ durationTarget: "p95", maxDurationMs: 60000 })
      expect(created.body.tags).toEqual(["prod"])
    }))

  const invalid: ReadonlyArray<[string, unknown, string]> = [
    ["bad cron", validMonitor({ schedule: { type: "cron", expression: "61 * * * *" } }), "schedule.expression"],
    ["cron with 6 fields", validMonitor({ schedule: { type: "cron", expression: "0 0 3 * * *" } }), "schedule.expression"],
    ["garbage cron", validMonitor({ schedule: { type: "cron", expression: "every day" } }), "schedule.expression"],
    ["unknown zone", validMonitor({ schedule: { type: "cron", expression: "0 3 * * *", timezone: "Mars/Olympus" } }), "schedule.timezone"],
    ["interval too short", validMonitor({ schedule: { type: "interval", expression: "5s" } }), "schedule.expression"],
    ["interval garbage", validMonitor({ schedule: { type: "interval", expression: "soon" } }), "schedule.expression"],
    ["unknown schedule type", validMonitor({ schedule: { type: "weekly", expression: "x" } }), "schedule.type"],
    ["missing name", { schedule: { type: "interval", expression: "1h" } }, "name"],
    ["empty name", validMonitor({ name: "   " }), "name"],
    ["name too long", validMonitor({ name: "x".repeat(201) }), "name"],
    ["name not a string", validMonitor({ name: 42 }), "name"],
    ["grace negative", validMonitor({ graceSeconds: -1 }), "graceSeconds"],
    ["grace fractional", validMonitor({ graceSeconds: 1.5 }), "graceSeconds"],
    ["grace as string", validMonitor({ graceSeconds: "60" }), "graceSeconds"],
    ["output size 0", validMonitor({ maxOutputSizeKb: 0 }), "maxOutputSizeKb"],
    ["output size too big", validMonitor({ maxOutputSizeKb: 4096 }), "maxOutputSizeKb"],
    ["sla target", validMonitor({ sla: { durationTarget: "p50", maxDurationMs: 10 } }), "sla.durationTarget"],
    ["tags not strings", validMonitor({ tags: [1] }), "tags.0"],
    ["captureOutput not boolean", validMonitor({ captureOutput: "yes" }), "captureOutput"]
  ]
  for (const [label, body, path] of invalid) {
    it.effect(`create rejects ${label} with a 400 naming ${path}`, () =>
      Effect.gen(function*() {
        const response = yield* call("POST", "/api/monitors", { body })
        expect(response.status).toBe(400)
        expect(response.body._tag).toBe("ValidationError")
        expect(response.body.path).toBe(path)
        expect(response.body.message.length).toBeGreaterThan(10)
      }))
  }

  it.effect("unknown fields are ignored", () =>
    Effect.gen(function*() {
      const response = yield* call("POST", "/api/monitors", { body: validMonitor({ colour: "blue" }) })
      expect(response.status).toBe(201)
      expect(response.body.colour).toBeUndefined()
    }))

  it.effect("list pages in creation order; limit 0/101 and page 0 are 400", () =>
    Effect.gen(function*() {
      const names: Array<string> = []
      for (let i = 0; i < 7; i++) {
        const name = `paged ${i}`
        names.push(name)
        expect((yield* call("POST", "/api/monitors", { body: validMonitor({ name, tags: ["paging"] }) })).status).toBe(201)
      }
      const all = yield* call("GET", "/api/monitors?limit=100")
      expect(all.status).toBe(200)
      const paged = all.body.monitors.filter((m: any) => m.tags.includes("paging")).map((m: any) => m.name)
      expect(paged).toEqual(names)
      const createdAts = all.body.monitors.map((m: any) => Date.parse(m.createdAt))
      expect([...createdAts].sort((a, b) => a - b)).toEqual(createdAts)
      const total = all.body.total
      expect(total).toBe(all.body.monitors.length)
      const page1 = yield* call("GET", "/api/monitors?page=1&limit=3")
      const page2 = yield* call("GET", "/api/monitors?page=2&limit=3")
      expect(page1.body).toMatchObject({ page: 1, limit: 3, total })
      expect(page2.body).toMatchObject({ page: 2, limit: 3, total })
      expect(page1.body.monitors.map((m: any) => m.id)).toEqual(all.body.monitors.slice(0, 3).map((m: any) => m.id))
      expect(page2.body.monitors.map((m: any) => m.id)).toEqual(all.body.monitors.slice(3, 6).map((m: any) => m.id))
      const defaults = yield* call("GET", "/api/monitors")
      expect(defaults.body).toMatchObject({ page: 1, limit: 50 })
      for (const query of ["limit=0", "limit=101", "page=0", "page=-1", "limit=abc", "page=1.5"]) {
        const response = yield* call("GET", `/api/monitors?${query}`)
        expect(response.status, query).toBe(400)
        expect(response.body._tag).toBe("ValidationError")
        expect(response.body.path).toBe(query.split("=")[0])
      }
    }))

  it.effect("patch changes settings and recomputes the next expected time when the schedule changes", () =>
    Effect.gen(function*() {
      const created = (yield* call("POST", "/api/monitors", { body: validMonitor() })).body
      const patched = yield* call("PATCH", `/api/monitors/${created.id}`, {
        body: { name: "renamed", graceSeconds: 300, schedule: { type: "interval", expression: "1h" }, maxRuntimeSeconds: 120 }
      })
      expect(patched.status).toBe(200)
      expect(patched.body).toMatchObject({
        id: created.id,
        name: "renamed",
        graceSeconds: 300,
        maxRuntimeSeconds: 120,
        schedule: { type: "interval", expression: "1h", timezone: "UTC" }
      })
      expect(Date.parse(patched.body.nextExpectedAt) - Date.parse(patched.body.updatedAt)).toBe(3600 * 1000)
      const bad = yield* call("PATCH", `/api/monitors/${created.id}`, { body: { schedule: { type: "cron", expression: "* * *" } } })
      expect(bad.status).toBe(400)
      expect(bad.body.path).toBe("schedule.expression")
      const clear = yield* call("PATCH", `/api/monitors/${created.id}`, { body: { maxRuntimeSeconds: null } })
      expect(clear.body.maxRuntimeSeconds).toBeNull()
      expect(clear.body.name).toBe("renamed")
    }))

  it.effect("pause and resume; delete makes the monitor 404", () =>
    Effect.gen(function*() {
      const created = (yield* call("POST", "/api/monitors", { body: validMonitor() })).body
      const paused = yield* call("POST", `/api/monitors/${created.id}/pause`)
      expect(paused.status).toBe(200)
      expect(paused.body).toMatchObject({ status: "PAUSED", paused: true })
      const resumed = yield* call("POST", `/api/monitors/${created.id}/resume`)
      expect(resumed.body).toMatchObject({ status: "NEW", paused: false })
      expect((yield* call("DELETE", `/api/monitors/${created.id}`)).status).toBe(204)
      expect((yield* call("GET", `/api/monitors/${created.id}`)).status).toBe(404)
      expect((yield* call("DELETE", `/api/monitors/${created.id}`)).status).toBe(404)
      expect((yield* call("GET", `/api/monitors/not-a-uuid`)).status).toBe(404)
    }))

  it.effect("schedule preview lists the next times in the zone, validated like monitor create", () =>
    Effect.gen(function*() {
      const preview = yield* call("POST", "/api/schedules/preview", {
        body: { schedule: { type: "cron", expression: "30 2 * * *", timezone: "America/New_York" }, from: "2026-03-07T00:00:00Z", count: 3 }
      })
      expect(preview.status).toBe(200)
      // 2026-03-08 is spring-forward day in New York: 02:30 does not exist; the job runs at 03:00 EDT.
      expect(preview.body.occurrences).toEqual([
        "2026-03-07T07:30:00.000Z",
        "2026-03-08T07:00:00.000Z",
        "2026-03-09T06:30:00.000Z"
      ])
      expect(typeof preview.body.description).toBe("string")
      const bad = yield* call("POST", "/api/schedules/preview", { body: { schedule: { type: "cron", expression: "0 3 * * *", timezone: "Nowhere/City" } } })
      expect(bad.status).toBe(400)
      expect(bad.body.path).toBe("schedule.timezone")
      const tooMany = yield* call("POST", "/api/schedules/preview", { body: { schedule: { type: "interval", expression: "1h" }, count: 101 } })
      expect(tooMany.status).toBe(400)
      const defaults = yield* call("POST", "/api/schedules/preview", { body: { schedule: { type: "interval", expression: "1h" } } })
      expect(defaults.body.occurrences).toHaveLength(10)
    }))
})
