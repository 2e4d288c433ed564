import { expect, layer } from "@effect/vitest"
import { SqlClient } from "@effect/sql"
import { vi } from "vitest"
import { Effect } from "effect"
import { type ApiResponse, call, createMonitor, TestServer } from "../support/fixture.js"

layer(TestServer(), { excludeTestServices: true, timeout: 120_000 })("HTTP conventions", (it) => {
  it.effect("the OpenAPI document and the API reference page are public", () =>
    Effect.gen(function*() {
      const spec = yield* call("GET", "/api/openapi.json", { token: null })
      expect(spec.status).toBe(200)
      expect(spec.body.openapi).toMatch(/^3\./)
      expect(Object.keys(spec.body.paths)).toContain("/api/monitors")
      expect(Object.keys(spec.body.paths)).toContain("/api/tokens")
      const docs = yield* call("GET", "/api/docs", { token: null })
      expect(docs.status).toBe(200)
      expect(docs.text).toMatch(/<html/i)
      // The reference page is served whole by the service: no script from elsewhere.
      expect(docs.text).not.toMatch(/<script[^>]+src="https?:/)
    }))

  it.effect("an unknown path is 404 and a wrong method on a known path is 405, both JSON", () =>
    Effect.gen(function*() {
      const missing = yield* call("GET", "/api/nothing-here")
      expect(missing.status).toBe(404)
      expect(missing.body._tag).toBe("NotFound")
      const wrong = yield* call("PUT", "/api/monitors")
      expect(wrong.status).toBe(405)
      expect(wrong.body._tag).toBe("MethodNotAllowed")
      expect(wrong.body.message).toMatch(/GET|POST/)
    }))

  it.effect("malformed JSON is a 400 with a message, never a 500", () =>
    Effect.gen(function*() {
      const bad = yield* call("POST", "/api/monitors", { rawBody: "{\"name\": " })
      expect(bad.status).toBe(400)
      expect(bad.body._tag).toBe("ValidationError")
      expect(bad.body.message).toMatch(/not valid JSON/)
      const notObject = yield* call("POST", "/api/monitors", { rawBody: "[1,2]" })
      expect(notObject.status).toBe(400)
    }))

  it.effect("a value outside a list of choices is answered with every allowed value, in bodies and in query strings", () =>
    Effect.gen(function*() {
      const monitor = yield* createMonitor()
      const cases: ReadonlyArray<readonly [ApiResponse, string, ReadonlyArray<string>]> = [
        [yield* call("GET", "/api/events?type=bogus"), "type", ["incident.opened", "monitor.deleted", "ping.received", "maintenance.ended"]],
        [yield* call("GET", "/api/incidents?status=bogus"), "status", ["OPEN", "ACKNOWLEDGED", "RESOLVED"]],
        [yield* call("GET", "/api/incidents?type=bogus"), "type", ["MISSED", "LATE", "FAIL", "ANOMALY"]],
        [yield* call("POST", "/api/webhooks", { body: { url: "https://example.com/x", events: ["bogus"] } }), "events.0", ["incident.opened", "ping.received", "webhook.test"]],
        [yield* call("POST", "/api/webhooks", { body: { url: "https://example.com/x", events: ["incident.opened"], filters: { severity: ["bogus"] } } }), "filters.severity.0", ["HIGH", "MEDIUM", "LOW"]],
        [yield* call("POST", "/api/alerts/chat/webhooks", { body: { url: "https://discord.com/api/webhooks/1/abc", name: "x", rules: { types: ["bogus"] } } }), "rules.types.0", ["MISSED", "FAIL", "LATE", "ANOMALY"]],
        [yield* call("POST", "/api/monitors", { body: { name: "x", schedule: { type: "bogus", expression: "1h" } } }), "schedule.type", ["cron", "interval"]],
        [yield* call("POST", "/api/tokens", { body: { name: "x", scope: "bogus" } }), "scope", ["admin", "write", "read", "ping"]],
        [yield* call("PATCH", `/api/monitors/${monitor.id}`, { body: { sla: { durationTarget: "p42", maxDurationMs: 5 } } }), "sla.durationTarget", ["p95", "p99"]],
        [yield* call("POST", "/api/auth/invites", { body: { email: "a@example.com", role: "bogus" } }), "role", ["admin", "member"]]
      ]
      for (const [answer, path, allowed] of cases) {
        expect(answer.status, answer.text).toBe(400)
        expect(answer.body.path).toBe(path)
        for (const value of allowed) expect(answer.body.message, path).toContain(`"${value}"`)
      }
    }))

  it.effect("a body over 2 MiB is 413", () =>
    Effect.gen(function*() {
      const big = yield* call("POST", "/api/monitors", { rawBody: JSON.stringify({ name: "x".repeat(2 * 1024 * 1024 + 10) }) })
      expect(big.status).toBe(413)
      expect(big.body._tag).toBe("PayloadTooLarge")
    }))
})

layer(TestServer(), { excludeTestServices: true, timeout: 120_000 })("a failure of the service itself", (it) => {
  it.effect("is answered 500 without internals, and logged with its cause", () =>
    Effect.gen(function*() {
      const lines: Array<string> = []
      const spies = (["log", "error", "warn", "info"] as const).map((method) =>
        vi.spyOn(console, method).mockImplementation((...args: Array<unknown>) => void lines.push(args.map(String).join(" ")))
      )
      try {
        // A database that lost a table under the service: nothing the client sent is wrong.
        const sql = yield* SqlClient.SqlClient
        yield* sql`alter table incidents rename to incidents_gone`.pipe(Effect.orDie)
        const answer = yield* call("GET", "/api/incidents")
        expect(answer.status).toBe(500)
        expect(answer.body._tag).toBe("InternalError")
        expect(answer.text).not.toMatch(/incidents_gone|relation|SqlError/)
        const logged = lines.find((line) => line.includes("request GET /api/incidents failed"))
        expect(logged, lines.join("\n").slice(0, 2000)).toBeDefined()
        expect(logged).toMatch(/incidents/)
        yield* sql`alter table incidents_gone rename to incidents`.pipe(Effect.orDie)
      } finally {
        for (const spy of spies) spy.mockRestore()
      }
    }))
})
