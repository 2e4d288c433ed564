import { expect, layer } from "@effect/vitest"
import { Effect } from "effect"
import { call, createMonitor, createToken, TestApp, TestServer } from "../support/fixture.js"
import { chunkedRequest, rawRequest, stalledConnection } from "../support/raw.js"

const MiB = 1024 * 1024

/**
 * What one request may cost the service (docs/security.md): bodies are counted as they arrive on
 * every route, chunked or not, and stop at 2 MiB; an error quotes at most a short prefix of a bad
 * value; slow clients are cut off; every answer carries headers that keep it out of caches and frames.
 */
layer(TestServer({ headersTimeoutMs: 1000, requestTimeoutMs: 2000 }), {
  excludeTestServices: true,
  timeout: 120_000
})("request limits", (it) => {
  it.effect("a chunked body over 2 MiB is cut off with 413 on sign-in, on the API and on the ping route, unauthenticated or not", () =>
    Effect.gen(function*() {
      const app = yield* TestApp
      const monitor = yield* createMonitor()
      const cases = [
        ["POST", "/api/auth/login", {}, '{"email":"'],
        ["POST", "/api/monitors", { authorization: `Bearer ${app.adminToken}` }, '{"name":"'],
        ["POST", `/api/ping/${monitor.id}/fail`, { authorization: `Bearer ${app.adminToken}` }, '{"output":"'],
        ["POST", `/api/ping/${monitor.id}/fail`, {}, '{"output":"']
      ] as const
      // The service runs in this process: its memory is this process's.
      const rssBefore = process.memoryUsage().rss
      let answered413 = 0
      for (const [method, path, headers, prefix] of cases) {
        const answer = yield* chunkedRequest(app.baseUrl, method, path, { headers, prefix, filler: "a", totalBytes: 150 * MiB })
        // The server stops reading at the limit and closes: the client reads the 413, or, when it
        // keeps writing into the closed connection, sees the connection reset.
        if (!answer.reset) {
          expect(answer.status, path).toBe(413)
          expect(answer.body._tag).toBe("PayloadTooLarge")
          expect(answer.text.length).toBeLessThan(500)
          answered413++
        }
        // Either way long before the 150 MiB were sent.
        expect(answer.sentBytes, path).toBeGreaterThan(2 * MiB)
        expect(answer.sentBytes, path).toBeLessThan(32 * MiB)
      }
      expect(process.memoryUsage().rss - rssBefore).toBeLessThan(100 * MiB)
      // A client that sends a little over the limit and then reads gets the 413 itself.
      const small = yield* rawRequest(app.baseUrl, "POST", "/api/auth/login", {
        headers: { "transfer-encoding": "chunked" },
        body: JSON.stringify({ email: "e".repeat(2 * MiB + 1000), password: "x" })
      })
      expect(small.status).toBe(413)
      // The server lingers after refusing (src/Http/Server.ts, refuseRestOfBody): clients that keep
      // sending still read the 413.
      expect(answered413).toBe(cases.length)
      // The service is still there and answers normally.
      expect((yield* call("GET", "/healthz", { token: null })).status).toBe(200)
    }))

  it.effect("a body over 2 MiB gets one and the same 413 wherever it is refused", () =>
    Effect.gen(function*() {
      const app = yield* TestApp
      const monitor = yield* createMonitor()
      const bearer = { authorization: `Bearer ${app.adminToken}` }
      const overLimit = JSON.stringify({ name: "n".repeat(2 * MiB + 1000) })
      const answers = [
        // refused from its Content-Length, before the router (src/Http/Server.ts)
        yield* rawRequest(app.baseUrl, "POST", "/api/monitors", { headers: bearer, body: overLimit }),
        // counted as it arrives by the API (HttpApi), and by the ping route ahead of it
        yield* rawRequest(app.baseUrl, "POST", "/api/monitors", { headers: { ...bearer, "transfer-encoding": "chunked" }, body: overLimit }),
        yield* rawRequest(app.baseUrl, "POST", `/api/ping/${monitor.id}/fail`, { headers: { ...bearer, "transfer-encoding": "chunked" }, body: overLimit })
      ]
      for (const answer of answers) expect(answer.status).toBe(413)
      expect(answers[0]!.body).toEqual({ _tag: "PayloadTooLarge", message: expect.stringMatching(/^The request body is over 2097152 bytes \(2 MiB\)/) })
      expect(answers.map((a) => a.body)).toEqual([answers[0]!.body, answers[0]!.body, answers[0]!.body])
    }))

  it.effect("a bad value is quoted back by at most a short prefix", () =>
    Effect.gen(function*() {
      const login = yield* call("POST", "/api/auth/login", { token: null, body: { email: "x".repeat(MiB), password: "p" } })
      expect(login.status).toBe(400)
      expect(login.body.message).toMatch(/email/)
      expect(login.text.length).toBeLessThan(600)
      const monitor = yield* call("POST", "/api/monitors", { body: { name: "y".repeat(600_000), schedule: { type: "cron", expression: "z".repeat(600_000) } } })
      expect(monitor.status).toBe(400)
      expect(monitor.text.length).toBeLessThan(600)
      const wrongType = yield* call("POST", "/api/monitors", { body: { name: ["q".repeat(MiB)], schedule: { type: "interval", expression: "1h" } } })
      expect(wrongType.status).toBe(400)
      expect(wrongType.body.message).toMatch(/^name/)
      expect(wrongType.text.length).toBeLessThan(600)
    }))

  it.effect("deeply nested JSON is a 400, never a 500, and the service stays up", () =>
    Effect.gen(function*() {
      const depth = 500_000
      for (const body of [
        `{"name":${"[".repeat(depth)}${"]".repeat(depth)},"schedule":{"type":"interval","expression":"1h"}}`,
        `{"name":"deep","schedule":{"type":"interval","expression":"1h"},"tags":${"[".repeat(depth)}${"]".repeat(depth)}}`,
        `{"name":"deep","schedule":{"type":"interval","expression":"1h"},"extra":${'{"a":'.repeat(depth / 5)}1${"}".repeat(depth / 5)}}`
      ]) {
        const answer = yield* call("POST", "/api/monitors", { rawBody: body })
        expect(answer.status, answer.text.slice(0, 200)).toBeLessThan(500)
        expect(answer.status).not.toBe(201)
      }
      expect((yield* call("GET", "/healthz", { token: null })).status).toBe(200)
    }))

  it.effect("every API answer says: do not store, do not sniff, do not frame; the reference page too", () =>
    Effect.gen(function*() {
      const { token } = yield* createToken("admin")
      const created = yield* call("POST", "/api/tokens", { token, body: { name: "ci", scope: "read" } })
      expect(created.status).toBe(201)
      const list = yield* call("GET", "/api/monitors", { token })
      const unauthorized = yield* call("GET", "/api/monitors", { token: null })
      const monitor = yield* createMonitor()
      const ping = yield* call("POST", `/api/ping/${monitor.id}/success`, { token })
      for (const answer of [created, list, unauthorized, ping]) {
        expect(answer.headers["cache-control"]).toBe("no-store")
        expect(answer.headers["x-content-type-options"]).toBe("nosniff")
      }
      for (const answer of [created, list, unauthorized]) {
        expect(answer.headers["content-security-policy"]).toContain("frame-ancestors 'none'")
      }
      const docs = yield* call("GET", "/api/docs", { token: null })
      expect(docs.status).toBe(200)
      expect(docs.headers["content-security-policy"]).toContain("frame-ancestors 'none'")
      expect(docs.headers["x-content-type-options"]).toBe("nosniff")
    }))

  it.effect("a client that sends its headers or its body too slowly is cut off", () =>
    Effect.gen(function*() {
      const app = yield* TestApp
      // Headers never finished: closed after the headers timeout (1 s here).
      const headers = yield* stalledConnection(app.baseUrl, "POST /api/auth/login HTTP/1.1\r\nHost: x\r\n")
      expect(headers.closedAfterMs).toBeLessThan(5_000)
      // A body that never comes: answered 408 and closed after the request timeout (2 s here).
      const body = yield* stalledConnection(
        app.baseUrl,
        "POST /api/auth/login HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{\"email\":"
      )
      expect(body.closedAfterMs).toBeLessThan(6_000)
      expect(body.received).toMatch(/^HTTP\/1\.1 408/)
    }))
})

layer(TestServer({ apiRatePerSecond: 2, apiBurst: 5 }), { excludeTestServices: true, timeout: 120_000 })("the API rate limit's key", (it) => {
  it.effect("the API rate limit is per authenticated token: spelling the header or the path differently gets no fresh bucket", () =>
    Effect.gen(function*() {
      const app = yield* TestApp
      const { token } = yield* createToken("read")
      const spellings = [
        { authorization: `Bearer ${token}` },
        { authorization: `bearer ${token}` },
        { authorization: `BEARER    ${token}  ` },
        { authorization: ` Bearer ${token}` }
      ]
      const targets = ["/api/monitors", "http://x/api/monitors", "/api//monitors", "/API/Monitors", "/api/monitors/"]
      const statuses: Record<number, number> = {}
      for (let i = 0; i < 60; i++) {
        const answer = yield* rawRequest(app.baseUrl, "GET", targets[i % targets.length]!, { headers: spellings[i % spellings.length]! })
        statuses[answer.status] = (statuses[answer.status] ?? 0) + 1
      }
      // A burst of 5 and 2 per second for however long the 60 requests took.
      expect(statuses[200]).toBeLessThanOrEqual(15)
      expect(statuses[429]).toBeGreaterThanOrEqual(45)
    }))
})
