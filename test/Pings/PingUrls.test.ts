import { expect, layer } from "@effect/vitest"
import { SqlClient } from "@effect/sql"
import { Effect } from "effect"
import { execFile } from "node:child_process"
import { randomUUID } from "node:crypto"
import { existsSync } from "node:fs"
import * as http from "node:http"
import { Engine } from "../../src/Engine/Engine.js"
import { call, createMonitor, createToken, TestApp, TestServer } from "../support/fixture.js"

/**
 * Ping URLs (docs/pings.md#ping-urls): every call form of Healthchecks' documentation, by the real
 * curl and wget when the machine has them (else the node http client sends the same requests),
 * against the real server.
 */

const hasCurl = existsSync("/usr/bin/curl") || existsSync("/bin/curl")
const hasWget = existsSync("/usr/bin/wget") || existsSync("/bin/wget")

interface Answer {
  readonly status: number
  readonly text: string
  readonly headers: http.IncomingHttpHeaders
}

/** A request by node's http client: method, URL, optional body and headers. */
const nodeRequest = (method: string, url: string, body?: string, headers: Record<string, string> = {}) =>
  Effect.async<Answer>((resume) => {
    const req = http.request(url, { method, headers: body === undefined ? headers : { ...headers, "content-length": Buffer.byteLength(body) } }, (res) => {
      const chunks: Array<Buffer> = []
      res.on("data", (c: Buffer) => chunks.push(c))
      res.on("end", () => resume(Effect.succeed({ status: res.statusCode ?? 0, text: Buffer.concat(chunks).toString("utf8"), headers: res.headers })))
    })
    req.on("error", (e) => resume(Effect.die(e)))
    req.end(body)
  })

/** A real program run with its arguments: its exit code and what it printed. */
const run = (program: string, args: ReadonlyArray<string>, input?: string) =>
  Effect.async<{ code: number; stdout: string; stderr: string }>((resume) => {
    const child = execFile(program, args as Array<string>, { timeout: 20_000 }, (error, stdout, stderr) =>
      resume(Effect.succeed({ code: error === null ? 0 : typeof error.code === "number" ? error.code : 1, stdout, stderr })))
    if (input !== undefined) child.stdin?.end(input)
  })

/** `curl -fsS -m 10 --retry 5 [more] url` (Healthchecks' documented form), or the same request by node. */
const curl = (url: string, more: ReadonlyArray<string> = [], fallback: { method: string; body?: string } = { method: "GET" }) =>
  hasCurl
    ? Effect.map(run("curl", ["-fsS", "-m", "10", "--retry", "5", ...more, url]), (r) => ({ ok: r.code === 0, text: r.stdout, code: r.code }))
    : Effect.map(nodeRequest(fallback.method, url, fallback.body), (a) => ({ ok: a.status < 400, text: a.text, code: a.status < 400 ? 0 : 22 }))

const runsOf = (monitorId: string) =>
  Effect.map(call("GET", `/api/monitors/${monitorId}/runs`), (r) => {
    expect(r.status).toBe(200)
    return r.body.runs as Array<any>
  })

/**
 * The URL the API gave, on the test server: the API builds it from PUBLIC_URL, which is not the
 * test server's own (a free port).
 */
const here = (url: string) => Effect.map(TestApp, (app) => `${app.baseUrl}${new URL(url).pathname}`)

const settle = Effect.gen(function*() {
  yield* Effect.sleep("30 millis")
  yield* (yield* Engine).idle
})

layer(TestServer({ pingAutoCreatePerHour: 3 }), { excludeTestServices: true, timeout: 120_000 })("ping URLs", (it) => {
  it.effect("a monitor's pingUrl: write and admin tokens see it, read tokens do not", () =>
    Effect.gen(function*() {
      const app = yield* TestApp
      const monitor = yield* createMonitor()
      expect(monitor.pingUrl).toMatch(/^http:\/\/[^/]+\/ping\/[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/)
      expect(app.baseUrl).toMatch(/^http:/)
      expect(monitor.pingUrl).not.toContain(monitor.id)
      const write = yield* createToken("write")
      const read = yield* createToken("read")
      expect((yield* call("GET", `/api/monitors/${monitor.id}`, { token: write.token })).body.pingUrl).toBe(monitor.pingUrl)
      const asRead = yield* call("GET", `/api/monitors/${monitor.id}`, { token: read.token })
      expect(asRead.status).toBe(200)
      expect(asRead.body).not.toHaveProperty("pingUrl")
      const listed = yield* call("GET", "/api/monitors", { token: read.token })
      expect(listed.body.monitors.every((m: any) => !("pingUrl" in m))).toBe(true)
      // Nor do the events a read token can list.
      const events = yield* call("GET", `/api/events?monitorId=${monitor.id}`, { token: read.token })
      expect(events.text).not.toContain(monitor.pingUrl.split("/ping/")[1])
      // Rotating needs write.
      expect((yield* call("POST", `/api/monitors/${monitor.id}/ping-url/rotate`, { token: read.token })).status).toBe(403)
    }))

  it.effect("Healthchecks' call forms: curl and wget GET, HEAD, POST body, /start, /fail, exit statuses", () =>
    Effect.gen(function*() {
      const monitor = yield* createMonitor()
      const url = yield* here(monitor.pingUrl)

      // curl -fsS -m 10 --retry 5 <url>
      const plain = yield* curl(url)
      expect(plain).toMatchObject({ ok: true, text: "OK" })
      // wget -q -O /dev/null <url> (or the same GET)
      if (hasWget) expect((yield* run("wget", ["-q", "-O", "/dev/null", url])).code).toBe(0)
      else expect((yield* nodeRequest("GET", url)).status).toBe(200)
      // HEAD: the status and headers, no body.
      const head = yield* nodeRequest("HEAD", url)
      expect(head.status).toBe(200)
      expect(head.text).toBe("")
      if (hasCurl) expect((yield* run("curl", ["-fsS", "-m", "10", "--retry", "5", "-I", url])).stdout).toMatch(/^HTTP\/1\.1 200/)
      yield* settle
      let runs = yield* runsOf(monitor.id)
      expect(runs.filter((r) => r.status === "SUCCESS")).toHaveLength(hasCurl ? 4 : 3)

      // POST body: the output, kept like a run's (--data-raw sends it as a form body).
      const posted = yield* curl(url, ["--data-raw", "backup done: 42 files"], { method: "POST", body: "backup done: 42 files" })
      expect(posted.ok).toBe(true)
      runs = yield* runsOf(monitor.id)
      expect(runs[0]).toMatchObject({ status: "SUCCESS", output: "backup done: 42 files" })

      // /start then /0: one run, closed with exit code 0 and a duration.
      expect((yield* curl(`${url}/start`)).text).toBe("OK")
      yield* Effect.sleep("40 millis")
      expect((yield* curl(`${url}/0`)).text).toBe("OK")
      runs = yield* runsOf(monitor.id)
      expect(runs[0]).toMatchObject({ status: "SUCCESS", exitCode: 0, startInferred: false })
      expect(runs[0].durationMs).toBeGreaterThanOrEqual(30)

      // /<exit-status> 1 to 255: a failure with that exit code; /fail: a failure.
      expect((yield* curl(`${url}/1`)).ok).toBe(true)
      expect((yield* runsOf(monitor.id))[0]).toMatchObject({ status: "FAIL", exitCode: 1 })
      expect((yield* curl(`${url}/255`)).ok).toBe(true)
      expect((yield* runsOf(monitor.id))[0]).toMatchObject({ status: "FAIL", exitCode: 255 })
      const failed = yield* curl(`${url}/fail`, ["--data-raw", "disk full"], { method: "POST", body: "disk full" })
      expect(failed.ok).toBe(true)
      expect((yield* runsOf(monitor.id))[0]).toMatchObject({ status: "FAIL", exitCode: null, output: "disk full" })

      // 256 is no exit status: 400 "invalid url format", nothing stored.
      const before = (yield* runsOf(monitor.id)).length
      const bad = yield* nodeRequest("GET", `${url}/256`)
      expect(bad).toMatchObject({ status: 400, text: "invalid url format" })
      expect(yield* runsOf(monitor.id)).toHaveLength(before)
      // Other methods are refused.
      expect((yield* nodeRequest("PUT", url, "")).status).toBe(405)
    }))

  it.effect("/log stores the output and changes nothing; rid pairs a start with its end", () =>
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const monitor = yield* createMonitor()
      const url = yield* here(monitor.pingUrl)
      const logged = yield* curl(`${url}/log`, ["--data-binary", "step 1 of 3 done, password=hunter2"], { method: "POST", body: "step 1 of 3 done, password=hunter2" })
      expect(logged).toMatchObject({ ok: true, text: "OK" })
      expect(yield* runsOf(monitor.id)).toHaveLength(0)
      const logs = yield* sql<{ output: string }>`select output from ping_logs where monitor_id = ${monitor.id}`
      expect(logs).toHaveLength(1)
      expect(logs[0]!.output).toContain("step 1 of 3 done")
      expect(logs[0]!.output).not.toContain("hunter2")
      // The API lists them, newest first, as stored (redacted).
      const listed = yield* call("GET", `/api/monitors/${monitor.id}/logs`)
      expect(listed.status).toBe(200)
      expect(listed.body).toEqual({
        logs: [{
          id: expect.any(String),
          monitorId: monitor.id,
          receivedAt: expect.any(String),
          runId: null,
          output: logs[0]!.output,
          outputTruncated: false,
          outputBytes: "step 1 of 3 done, password=hunter2".length
        }],
        nextCursor: null
      })
      yield* settle
      expect((yield* call("GET", `/api/monitors/${monitor.id}`)).body.status).toBe("NEW")

      // Two overlapping runs, told apart by rid; each end closes its own start.
      const a = randomUUID()
      const b = randomUUID()
      expect((yield* curl(`${url}/start?rid=${a}`)).ok).toBe(true)
      expect((yield* curl(`${url}/start?rid=${b}`)).ok).toBe(true)
      expect((yield* curl(`${url}/1?rid=${a}`)).ok).toBe(true)
      expect((yield* curl(`${url}?rid=${b}`)).ok).toBe(true)
      const runs = yield* runsOf(monitor.id)
      const byId = Object.fromEntries(runs.map((r) => [r.id, r]))
      expect(runs).toHaveLength(2)
      expect(byId[a]).toMatchObject({ status: "FAIL", exitCode: 1, startInferred: false })
      expect(byId[b]).toMatchObject({ status: "SUCCESS", startInferred: false })
      // A retried end (curl --retry after a lost answer) is answered OK and stored once.
      expect((yield* curl(`${url}?rid=${b}`)).ok).toBe(true)
      expect(yield* runsOf(monitor.id)).toHaveLength(2)
      // An end whose rid matches no start is recorded, as Healthchecks does.
      expect((yield* curl(`${url}?rid=${randomUUID()}`)).ok).toBe(true)
      expect(yield* runsOf(monitor.id)).toHaveLength(3)
      // A rid that is not a UUID: 400.
      expect((yield* nodeRequest("GET", `${url}/start?rid=nope`)).status).toBe(400)
    }))

  it.effect("JSON answers when asked for; unknown and rotated ping ids are 404 not found", () =>
    Effect.gen(function*() {
      const app = yield* TestApp
      const monitor = yield* createMonitor()
      const pingUrl = yield* here(monitor.pingUrl)
      const json = yield* nodeRequest("POST", `${pingUrl}/start`, "", { accept: "application/json" })
      expect(json.status).toBe(200)
      expect(JSON.parse(json.text)).toEqual({ received: true, runId: expect.stringMatching(/^[0-9a-f-]{36}$/) })

      const unknown = yield* nodeRequest("GET", `${app.baseUrl}/ping/${randomUUID()}`)
      expect(unknown).toMatchObject({ status: 404, text: "not found" })
      expect(unknown.headers["content-type"]).toMatch(/^text\/plain/)
      // The monitor's own id is not its ping id.
      expect((yield* nodeRequest("GET", `${app.baseUrl}/ping/${monitor.id}`)).status).toBe(404)
      if (hasCurl) expect((yield* curl(`${app.baseUrl}/ping/${randomUUID()}`)).code).toBe(22)
      const unknownJson = yield* nodeRequest("GET", `${app.baseUrl}/ping/${randomUUID()}`, undefined, { accept: "application/json" })
      expect(JSON.parse(unknownJson.text)._tag).toBe("NotFound")

      const rotated = yield* call("POST", `/api/monitors/${monitor.id}/ping-url/rotate`)
      expect(rotated.status).toBe(200)
      expect(rotated.body.pingUrl).not.toBe(monitor.pingUrl)
      expect((yield* nodeRequest("GET", pingUrl)).status).toBe(404)
      expect((yield* nodeRequest("GET", yield* here(rotated.body.pingUrl))).status).toBe(200)
      // A deleted monitor's URL is gone too.
      expect((yield* call("DELETE", `/api/monitors/${monitor.id}`)).status).toBe(204)
      expect((yield* nodeRequest("GET", yield* here(rotated.body.pingUrl))).status).toBe(404)
    }))

  it.effect("slugs: set on create and PATCH, unique, filtered by ?slug=, validated", () =>
    Effect.gen(function*() {
      const a = yield* createMonitor({ slug: "db-backup" })
      expect(a.slug).toBe("db-backup")
      const dup = yield* call("POST", "/api/monitors", { body: { name: "x", schedule: { type: "interval", expression: "1h" }, slug: "db-backup" } })
      expect(dup.status).toBe(409)
      expect(dup.body.message).toContain("slug")
      const b = yield* createMonitor()
      expect(b.slug).toBeNull()
      expect((yield* call("PATCH", `/api/monitors/${b.id}`, { body: { slug: "db-backup" } })).status).toBe(409)
      const patched = yield* call("PATCH", `/api/monitors/${b.id}`, { body: { slug: "logs_rotate-2" } })
      expect(patched.status).toBe(200)
      expect(patched.body.slug).toBe("logs_rotate-2")
      const bad = yield* call("PATCH", `/api/monitors/${b.id}`, { body: { slug: "Has Spaces" } })
      expect(bad.status).toBe(400)
      expect(bad.body.message).toContain("lowercase letters")
      const found = yield* call("GET", "/api/monitors?slug=db-backup")
      expect(found.body.monitors.map((m: any) => m.id)).toEqual([a.id])
      expect((yield* call("GET", "/api/monitors?slug=nothing-here")).body.monitors).toEqual([])
      expect((yield* call("GET", "/api/monitors?slug=NOPE!")).status).toBe(400)
      // null clears it, and a deleted monitor's slug is free again.
      expect((yield* call("PATCH", `/api/monitors/${b.id}`, { body: { slug: null } })).body.slug).toBeNull()
      expect((yield* call("DELETE", `/api/monitors/${a.id}`)).status).toBe(204)
      expect((yield* createMonitor({ slug: "db-backup" })).slug).toBe("db-backup")
    }))

  it.effect("slug ping URLs with the organization's ping key; ?create=1 auto-provisions, within a limit", () =>
    Effect.gen(function*() {
      const app = yield* TestApp
      const keys = yield* call("GET", "/api/keys")
      expect(keys.status).toBe(200)
      expect(keys.body.pingKey).toMatch(/^[0-9a-f]{32}$/)
      expect(keys.body.slugPingUrl).toMatch(new RegExp(`^http://[^/]+/ping/${keys.body.pingKey}$`))
      const write = yield* createToken("write")
      expect((yield* call("GET", "/api/keys", { token: write.token })).status).toBe(403)
      const base = yield* here(keys.body.slugPingUrl)

      const m = yield* createMonitor({ slug: "nightly-report" })
      expect((yield* curl(`${base}/nightly-report/start`)).text).toBe("OK")
      expect((yield* curl(`${base}/nightly-report/3`)).ok).toBe(true)
      expect((yield* runsOf(m.id))[0]).toMatchObject({ status: "FAIL", exitCode: 3, startInferred: false })
      expect((yield* nodeRequest("GET", `${base}/no-such-slug`))).toMatchObject({ status: 404, text: "not found" })
      expect((yield* nodeRequest("GET", `${app.baseUrl}/ping/${"0".repeat(32)}/nightly-report`)).status).toBe(404)

      // ?create=1: 201 the first time, with Healthchecks' defaults; 200 after.
      const first = yield* nodeRequest("GET", `${base}/srv01?create=1`)
      expect(first).toMatchObject({ status: 201, text: "Created" })
      const again = yield* nodeRequest("GET", `${base}/srv01?create=1`)
      expect(again).toMatchObject({ status: 200, text: "OK" })
      const made = (yield* call("GET", "/api/monitors?slug=srv01")).body.monitors
      expect(made).toHaveLength(1)
      expect(made[0]).toMatchObject({ name: "srv01", slug: "srv01", schedule: { type: "interval", expression: "1d" }, graceSeconds: 3600 })
      expect(yield* runsOf(made[0].id)).toHaveLength(2)
      // The schedule given in the URL.
      const custom = yield* curl(`${base}/srv02/start?create=1&schedule=${encodeURIComponent("30 2 * * *")}&tz=Europe/Paris&grace=15m`)
      expect(custom.ok).toBe(true)
      const srv02 = (yield* call("GET", "/api/monitors?slug=srv02")).body.monitors[0]
      expect(srv02).toMatchObject({ schedule: { type: "cron", expression: "30 2 * * *", timezone: "Europe/Paris" }, graceSeconds: 900 })
      const badSchedule = yield* nodeRequest("GET", `${base}/srv03?create=1&schedule=${encodeURIComponent("61 * * * *")}`)
      expect(badSchedule.status).toBe(400)
      expect(badSchedule.text).toContain("schedule")
      // PING_AUTO_CREATE_PER_HOUR=3 here, and every attempt to create counts (srv01, srv02, srv03):
      // a typo loop is refused from now on, 429 "rate limited" with Retry-After; nothing is created.
      for (let i = 0; i < 5; i++) {
        const refused = yield* nodeRequest("GET", `${base}/typo-${i}?create=1`)
        expect(refused).toMatchObject({ status: 429, text: "rate limited" })
        expect(Number(refused.headers["retry-after"])).toBeGreaterThan(0)
      }
      expect((yield* call("GET", "/api/monitors?q=typo-")).body.total).toBe(0)
      // Monitors that exist are pinged as before.
      expect((yield* nodeRequest("GET", `${base}/srv01?create=1`)).status).toBe(200)

      // A rotated ping key: the old slug URLs are 404 at once.
      const rotated = yield* call("POST", "/api/keys/ping/rotate")
      expect(rotated.body.pingKey).not.toBe(keys.body.pingKey)
      expect((yield* nodeRequest("GET", `${base}/nightly-report`)).status).toBe(404)
      expect((yield* nodeRequest("GET", `${yield* here(rotated.body.slugPingUrl)}/nightly-report`)).status).toBe(200)
    }))

  it.effect("badges: up, down, late, in maintenance, by slug or by tag, as SVG, JSON and Shields endpoint", () =>
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const keys = (yield* call("GET", "/api/keys")).body
      const badgeUrl = yield* here(keys.badgeUrl)
      const badge = (name: string, format = "json") => nodeRequest("GET", `${badgeUrl}/${encodeURIComponent(name)}.${format}`)
      const up = yield* createMonitor({ slug: "b-up", tags: ["team-a"] })
      const down = yield* createMonitor({ slug: "b-down", tags: ["team-a"] })
      const late = yield* createMonitor({ slug: "b-late", tags: ["team-b"] })
      const held = yield* createMonitor({ slug: "b-maint", tags: ["team-b"] })
      expect((yield* curl(yield* here(up.pingUrl))).ok).toBe(true)
      expect((yield* curl(`${yield* here(down.pingUrl)}/fail`)).ok).toBe(true)
      yield* settle
      // LATE is the engine's judgement after an expected time; set as it would write it.
      yield* sql`update monitors set status = 'LATE' where id = ${late.id}`
      const now = Date.now()
      const window = yield* call("POST", "/api/maintenance-windows", {
        body: { name: "upgrade", monitorIds: [held.id], start: new Date(now).toISOString(), end: new Date(now + 3_600_000).toISOString() }
      })
      expect(window.status).toBe(201)
      yield* Effect.sleep("100 millis")

      expect(JSON.parse((yield* badge("b-up")).text)).toMatchObject({ name: "b-up", status: "up", total: 1 })
      expect(JSON.parse((yield* badge("b-down")).text)).toMatchObject({ status: "down" })
      expect(JSON.parse((yield* badge("b-late")).text)).toMatchObject({ status: "late" })
      expect(JSON.parse((yield* badge("b-maint")).text)).toMatchObject({ status: "maintenance" })
      // A tag: the worst of its monitors.
      expect(JSON.parse((yield* badge("team-a")).text)).toMatchObject({ status: "down", total: 2, up: 1, down: 1 })
      expect(JSON.parse((yield* badge("team-b")).text)).toMatchObject({ status: "late", total: 2, late: 1, maintenance: 1 })

      const svg = yield* badge("b-down", "svg")
      expect(svg.status).toBe(200)
      expect(svg.headers["content-type"]).toBe("image/svg+xml")
      expect(svg.headers["cache-control"]).toMatch(/^public, max-age=\d+$/)
      expect(svg.text).toMatch(/^<svg [^>]*>.*<text[^>]*>b-down<\/text><text[^>]*>down<\/text><\/g><\/svg>$/)
      const shields = yield* badge("b-up", "shields")
      expect(JSON.parse(shields.text)).toEqual({ schemaVersion: 1, label: "b-up", message: "up", color: "brightgreen" })
      // Nothing by that name, a wrong key, a rotated key: 404.
      expect((yield* badge("nobody")).status).toBe(404)
      expect((yield* nodeRequest("GET", `${badgeUrl.replace(keys.badgeKey, "f".repeat(32))}/b-up.svg`)).status).toBe(404)
      const rotated = (yield* call("POST", "/api/keys/badge/rotate")).body
      expect(rotated.badgeKey).not.toBe(keys.badgeKey)
      expect((yield* badge("b-up")).status).toBe(404)
      expect((yield* nodeRequest("GET", `${yield* here(rotated.badgeUrl)}/b-up.svg`)).status).toBe(200)
    }))
})

/** The ping URLs do not depend on the token routes' fast path: with it off, they answer the same. */
layer(TestServer({}, {}, { fastPings: false }), { excludeTestServices: true, timeout: 120_000 })("ping URLs, fast token route off", (it) => {
  it.effect("a ping URL start and exit status pair into one run", () =>
    Effect.gen(function*() {
      const monitor = yield* createMonitor()
      const url = yield* here(monitor.pingUrl)
      expect(yield* nodeRequest("GET", `${url}/start`)).toMatchObject({ status: 200, text: "OK" })
      expect(yield* nodeRequest("POST", `${url}/2`, "exit 2")).toMatchObject({ status: 200, text: "OK" })
      const runs = yield* runsOf(monitor.id)
      expect(runs).toHaveLength(1)
      expect(runs[0]).toMatchObject({ status: "FAIL", exitCode: 2, output: "exit 2", startInferred: false })
    }))
})
