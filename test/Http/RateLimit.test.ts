import { expect, layer } from "@effect/vitest"
import { Effect, TestClock } from "effect"
import { call, createToken, createUser, signIn, TestServer } from "../support/fixture.js"

const newTokenFor = (scope: "read" | "admin") => Effect.map(createToken(scope), (created) => created.token)

const createSessionFor = (email: string) =>
  Effect.gen(function*() {
    yield* createUser({ email, password: "correct horse battery" })
    return (yield* signIn(email, "correct horse battery")).cookie
  })

// docs/decisions.md#rate-limits: other endpoints than the ping intake, per credential; here 2 per second, bursts of 5.
layer(TestServer({ apiRatePerSecond: 2, apiBurst: 5 }), { timeout: 120_000 })("API rate limit per credential", (it) => {
  it.effect("a burst passes, the next request is 429 with Retry-After and X-RateLimit-*, and the bucket refills with time", () =>
    Effect.gen(function*() {
      const token = yield* newTokenFor("read")
      for (let i = 0; i < 5; i++) {
        const r = yield* call("GET", "/api/monitors", { token })
        expect(r.status, `request ${i + 1}`).toBe(200)
        expect(r.headers["x-ratelimit-limit"]).toBe("5")
        expect(r.headers["x-ratelimit-remaining"]).toBe(String(4 - i))
      }
      const limited = yield* call("GET", "/api/monitors", { token })
      expect(limited.status).toBe(429)
      expect(limited.body._tag).toBe("RateLimited")
      expect(limited.body.message).toContain("at most 2 per second")
      expect(limited.headers["retry-after"]).toBe("1")
      expect(limited.headers["x-ratelimit-remaining"]).toBe("0")
      // Another token is not held back by this one.
      expect((yield* call("GET", "/api/monitors", { token: yield* newTokenFor("read") })).status).toBe(200)
      // Half a second is one more request at 2 per second; the one after waits again.
      yield* TestClock.adjust("500 millis")
      expect((yield* call("GET", "/api/monitors", { token })).status).toBe(200)
      expect((yield* call("GET", "/api/monitors", { token })).status).toBe(429)
      yield* TestClock.adjust("3 seconds")
      expect((yield* call("GET", "/api/monitors", { token })).status).toBe(200)
    }))

  it.effect("the ping intake is not counted (it has its per-monitor limit), nor are requests without a credential", () =>
    Effect.gen(function*() {
      const token = yield* newTokenFor("admin")
      const monitor = (yield* call("POST", "/api/monitors", {
        token,
        body: { name: "limited", schedule: { type: "interval", expression: "1m" } }
      })).body
      for (let i = 0; i < 8; i++) {
        expect((yield* call("POST", `/api/ping/${monitor.id}/success`, { token })).status).toBe(200)
      }
      for (let i = 0; i < 8; i++) expect((yield* call("GET", "/api/monitors", { token: null })).status).toBe(401)
      // One request of the burst went to the create: four are left.
      for (let i = 0; i < 4; i++) expect((yield* call("GET", `/api/monitors/${monitor.id}`, { token })).status).toBe(200)
      expect((yield* call("GET", `/api/monitors/${monitor.id}`, { token })).status).toBe(429)
    }))

  it.effect("a dashboard session has its own bucket", () =>
    Effect.gen(function*() {
      const cookie = yield* createSessionFor("limit@example.com")
      const statuses: Array<number> = []
      for (let i = 0; i < 6; i++) statuses.push((yield* call("GET", "/api/monitors", { token: null, headers: { cookie } })).status)
      expect(statuses).toEqual([200, 200, 200, 200, 200, 429])
    }))
})
