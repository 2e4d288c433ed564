import { expect, layer } from "@effect/vitest"
import { Effect } from "effect"
import { call, TestServer } from "../support/fixture.js"

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

  it.effect("a body over 2 MiB is 413", () =>
    Effect.gen(function*() {
      const big = yield* call("POST", "/api/monitors", { rawBody: JSON.stringify({ name: "x".repeat(2 * 1024 * 1024 + 10) }) })
      expect(big.status).toBe(413)
      expect(big.body._tag).toBe("PayloadTooLarge")
    }))
})
