import { expect, it as plain, layer } from "@effect/vitest"
import { Effect } from "effect"
import { existsSync, mkdtempSync, readdirSync, rmSync } from "node:fs"
import * as http from "node:http"
import type { AddressInfo } from "node:net"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { defaultWebRoot, webRoutes } from "../../src/Http/Web.js"
import { call, TestServer } from "../support/fixture.js"

/** The dashboard is served by the service itself, beside the API (docs/dashboard.md). */

const built = existsSync(join(defaultWebRoot, "index.html"))
if (!built) throw new Error("web/dist is missing: run `npm run build:web` (npm ci does it) before these tests")

layer(TestServer(), { excludeTestServices: true, timeout: 120_000 })("the dashboard's files", (it) => {
  it.effect("GET / and every page route answer the app's index.html; the API keeps its JSON 404 and 405", () =>
    Effect.gen(function*() {
      for (const path of ["/", "/monitors", "/monitors/6f1c0a2e-0000-4000-8000-000000000000", "/settings", "/invite?token=abc"]) {
        const page = yield* call("GET", path, { token: null })
        expect(page.status, path).toBe(200)
        expect(page.headers["content-type"]).toMatch(/^text\/html/)
        expect(page.headers["cache-control"]).toBe("no-cache")
        expect(page.headers["content-security-policy"]).toMatch(/default-src 'self'/)
        expect(page.text).toMatch(/<script type="module"[^>]+src="\/assets\/[^"]+\.js"/)
        // nothing from a CDN
        expect(page.text).not.toMatch(/(src|href)="https?:/)
      }
      const missing = yield* call("GET", "/api/nothing-here", { token: null })
      expect(missing.status).toBe(404)
      expect(missing.body._tag).toBe("NotFound")
      const wrong = yield* call("PUT", "/api/monitors")
      expect(wrong.status).toBe(405)
      expect(wrong.body._tag).toBe("MethodNotAllowed")
      const health = yield* call("GET", "/healthz", { token: null })
      expect(health.body.status).toBe("ok")
    }))

  it.effect("the bundle under /assets is served with its type and a year-long immutable cache; an unknown asset is 404", () =>
    Effect.gen(function*() {
      const index = yield* call("GET", "/", { token: null })
      const script = /src="(\/assets\/[^"]+\.js)"/.exec(index.text)![1]!
      const js = yield* call("GET", script, { token: null })
      expect(js.status).toBe(200)
      expect(js.headers["content-type"]).toMatch(/^text\/javascript/)
      expect(js.headers["cache-control"]).toBe("public, max-age=31536000, immutable")
      expect(js.text.length).toBeGreaterThan(1000)
      const css = readdirSync(join(defaultWebRoot, "assets")).find((f) => f.endsWith(".css"))!
      const style = yield* call("GET", `/assets/${css}`, { token: null })
      expect(style.headers["content-type"]).toMatch(/^text\/css/)
      const gone = yield* call("GET", "/assets/not-there-123.js", { token: null })
      expect(gone.status).toBe(404)
      const escape = yield* call("GET", "/assets/..%2f..%2fpackage.json", { token: null })
      expect(escape.status).toBe(404)
    }))
})

plain.effect("without web/dist the service explains how to build the dashboard instead of failing", () =>
  Effect.acquireUseRelease(
    Effect.promise(async () => {
      const empty = mkdtempSync(join(tmpdir(), "jobmon-web-"))
      const routes = webRoutes(empty)
      const server = http.createServer((req, res) => {
        if (!routes(req, res)) res.writeHead(418).end()
      })
      await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
      return { empty, server, url: `http://127.0.0.1:${(server.address() as AddressInfo).port}` }
    }),
    ({ url }) =>
      Effect.promise(async () => {
        const page = await fetch(`${url}/monitors`)
        expect(page.status).toBe(503)
        expect(await page.text()).toMatch(/npm run build:web/)
        // the API is still left to the router
        expect((await fetch(`${url}/api/monitors`)).status).toBe(418)
      }),
    ({ empty, server }) =>
      Effect.promise(async () => {
        await new Promise((resolve) => server.close(resolve))
        rmSync(empty, { recursive: true, force: true })
      })
  ))
