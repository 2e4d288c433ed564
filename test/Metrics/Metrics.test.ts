import { expect, it, layer } from "@effect/vitest"
import { FetchHttpClient } from "@effect/platform"
import { Effect, Layer, Logger, LogLevel, Option, Redacted, TestClock } from "effect"
import { readFileSync } from "node:fs"
import { AppFromConfig } from "../../src/App.js"
import { AppConfigWith } from "../../src/Config.js"
import { Webhooks } from "../../src/Delivery/Webhooks.js"
import { Engine } from "../../src/Engine/Engine.js"
import { ServerAddress } from "../../src/Http/Server.js"
import { type MonitorSample, renderMonitors } from "../../src/Metrics/Monitors.js"
import { receiver } from "../Delivery/receiver.js"
import { checkWithPromtool, find, parseExposition, valueOf } from "./exposition.js"
import { call, createMonitor, createOrganization, createToken, makeTestDatabase, newAdminToken, sendPing, serviceLives, TestApp } from "../support/fixture.js"

/**
 * GET /metrics through the real server after known activity: monitors created, pings sent (some
 * refused), an incident opened by a fail ping and one by a missed deadline, an alert delivered to a
 * real HTTP receiver. The values are checked, not only the names, and the whole answer goes through
 * `promtool check metrics` when promtool is installed (Debian's `prometheus` package).
 */

// ---- the server, with every log line kept --------------------------------------------------------

const logLines: Array<string> = []
const keepLogs = Logger.replace(
  Logger.defaultLogger,
  Logger.make((options) => {
    logLines.push(Logger.logfmtLogger.log(options))
  })
)

/** TestServer's service (test/support/fixture.ts), with every log line at every level kept in logLines. */
const MetricsServer = Layer.unwrapScoped(
  Effect.gen(function*() {
    const db = yield* makeTestDatabase()
    const adminToken = newAdminToken()
    const app = AppFromConfig(AppConfigWith({
      databaseUrl: Option.some(Redacted.make(db.url)),
      host: "127.0.0.1",
      port: 0,
      bootstrapToken: Option.some(Redacted.make(adminToken)),
      apiRatePerSecond: 1_000_000,
      apiBurst: 1_000_000,
      allowPrivateTargets: true
    }))
    const context = Layer.effect(
      TestApp,
      Effect.map(ServerAddress, (address) => ({ baseUrl: address.url, databaseUrl: db.url, adminToken }))
    )
    return Layer.provideMerge(context, app).pipe(
      Layer.provideMerge(FetchHttpClient.layer),
      Layer.provide(Layer.mergeAll(keepLogs, Logger.minimumLogLevel(LogLevel.All)))
    )
  })
)

/** Lets the monitors' actors finish judging what was answered (they write through the real database). */
const settle = Effect.gen(function*() {
  const engine = yield* Engine
  yield* Effect.promise(() => new Promise((resolve) => setTimeout(resolve, 20)))
  yield* engine.idle
})

const scrape = (token: string | null) => call("GET", "/metrics", { token })

const monitorLabels = (id: string) => ({ monitor_id: id })

const sample = (changes: Partial<MonitorSample>): MonitorSample => ({
  id: "0d6f1c2e-1111-4222-8333-444455556666",
  name: "job",
  tags: [],
  status: "OK",
  health_score: 100,
  last_ping_at: new Date("2026-01-31T03:00:00.000Z"),
  next_expected_at: new Date("2026-02-01T03:00:00.000Z"),
  open_incidents: 0,
  ...changes
})

it.effect("any name or tag is a valid label value: the text parses back to it, and promtool accepts it", () =>
  Effect.gen(function*() {
    const tricky = [
      sample({ id: "00000000-0000-4000-8000-000000000001", name: 'line one\nline two "quoted" \\ back\\slash', tags: ["b,c", 'q"uote', "a"] }),
      sample({ id: "00000000-0000-4000-8000-000000000002", name: "日本語 ✓ {braces} = #hash", tags: ["x", "x"], status: "PAUSED", next_expected_at: null }),
      sample({ id: "00000000-0000-4000-8000-000000000003", name: "never pinged", status: "NEW", last_ping_at: null, health_score: 37.5, open_incidents: 2 })
    ]
    const text = yield* renderMonitors(tricky)
    const parsed = parseExposition(text)
    const [first, second, third] = tricky.map((m) => find(parsed, "jobmon_monitor_up", { monitor_id: m.id }))
    expect(first![0]!.labels).toEqual({ monitor_id: tricky[0]!.id, name: tricky[0]!.name, tags: 'a,b,c,q"uote' })
    expect(second![0]!.labels).toEqual({ monitor_id: tricky[1]!.id, name: tricky[1]!.name, tags: "x" })
    expect(third![0]!.value).toBe(1)
    expect(valueOf(parsed, "jobmon_monitor_health_score", { monitor_id: tricky[2]!.id })).toBe(37.5)
    expect(valueOf(parsed, "jobmon_monitor_open_incidents", { monitor_id: tricky[2]!.id })).toBe(2)
    expect(find(parsed, "jobmon_monitor_last_ping_timestamp_seconds", { monitor_id: tricky[2]!.id })).toEqual([])
    expect(find(parsed, "jobmon_monitor_next_expected_timestamp_seconds", { monitor_id: tricky[1]!.id })).toEqual([])
    expect(valueOf(parsed, "jobmon_monitor_last_ping_timestamp_seconds", { monitor_id: tricky[0]!.id })).toBe(Date.parse("2026-01-31T03:00:00.000Z") / 1000)
    expect(find(parsed, "jobmon_monitor_status").map((s) => s.labels.status)).toEqual(["OK", "PAUSED", "NEW"])
    // six families, each with its type and help once
    expect([...parsed.types].filter(([name]) => name.startsWith("jobmon_monitor_"))).toHaveLength(6)
    const check = checkWithPromtool(text)
    if (check !== "skipped") expect(check).toEqual({ status: 0, output: "" })
  }))

it.effect("a deadline that fell due while the service was down fires as it starts again, and the lag says how late", () =>
  Effect.gen(function*() {
    const db = yield* makeTestDatabase()
    const token = newAdminToken()
    /** One life of the service on this database: start, use, stop. */
    const run = serviceLives(db.url, token)
    // expected 10 minutes after its creation, MISSED a minute later (its grace)
    const monitor = yield* run(createMonitor({ schedule: { type: "interval", expression: "10m" }, graceSeconds: 60 }))
    // down for an hour
    yield* TestClock.adjust("1 hour")
    const text = yield* run(Effect.gen(function*() {
      yield* settle
      return (yield* scrape(token)).text
    }))
    const metrics = parseExposition(text)
    // the missed deadline fired once, 49 minutes (2,940 s) after it was due
    expect(valueOf(metrics, "jobmon_engine_deadline_lag_seconds_count")).toBe(1)
    expect(valueOf(metrics, "jobmon_engine_deadline_lag_seconds_sum")).toBe(2940)
    expect(valueOf(metrics, "jobmon_engine_deadline_lag_seconds_bucket", { le: "300" })).toBe(0)
    expect(valueOf(metrics, "jobmon_engine_deadline_lag_seconds_bucket", { le: "+Inf" })).toBe(1)
    expect(valueOf(metrics, "jobmon_monitor_status", { monitor_id: monitor.id, status: "MISSED" })).toBe(1)
  }).pipe(Effect.scoped), 120_000)

// The whole service runs on the TestClock: deadlines fire only when the test moves the clock.
layer(MetricsServer, { timeout: 120_000 })("GET /metrics", (it) => {
  it.effect("after known activity: per-monitor values as the API shows them, service counters as counted; promtool accepts it", () =>
    Effect.scoped(Effect.gen(function*() {
      const hookTarget = yield* receiver([200])
      const failingTarget = yield* receiver([500])
      // Escaping: a quote, a backslash and a non-ASCII letter in the name; tags out of order.
      const backup = yield* createMonitor({ name: 'nightly "backup" \\ Zürich', tags: ["nightly", "db"] })
      const report = yield* createMonitor({ name: "weekly report", tags: ["reports"] })
      const heartbeat = yield* createMonitor({ name: "heartbeat", schedule: { type: "interval", expression: "1m" }, graceSeconds: 30 })
      const paused = yield* createMonitor({ name: "paused one" })
      expect((yield* call("POST", `/api/monitors/${paused.id}/pause`)).status).toBe(200)
      const hook = yield* call("POST", "/api/webhooks", { body: { url: hookTarget.url, events: ["incident.opened"] } })
      expect(hook.status, hook.text).toBe(201)
      const failingHook = yield* call("POST", "/api/webhooks", { body: { url: failingTarget.url, events: ["incident.opened"] } })
      expect(failingHook.status, failingHook.text).toBe(201)

      // Pings, one at a time (one batch each): 4 accepted, 1 to an unknown monitor, 1 without a token, 1 invalid.
      expect((yield* sendPing(backup.id, "start")).status).toBe(200)
      expect((yield* sendPing(backup.id, "success", { body: { durationMs: 1200 } })).status).toBe(200)
      expect((yield* sendPing(report.id, "fail", { body: { exitCode: 2, output: "disk full" } })).status).toBe(200)
      expect((yield* sendPing(heartbeat.id, "success")).status).toBe(200)
      expect((yield* sendPing("7d1e2c4a-0000-4000-8000-00000000abcd", "success")).status).toBe(404)
      expect((yield* sendPing(backup.id, "success", { token: null })).status).toBe(401)
      expect((yield* sendPing(backup.id, "fail", { rawBody: "{not json" })).status).toBe(400)
      yield* settle
      // The heartbeat misses its next ping: the engine fires its deadline (60 s + 30 s grace).
      yield* TestClock.adjust("2 minutes")
      yield* settle
      // The alert of the FAIL (and of the MISSED) goes out to the receiver.
      yield* Effect.flatMap(Webhooks, (w) => w.flush)
      expect(hookTarget.received).toHaveLength(2)
      // the other receiver answers 500: its deliveries are retried (the first while the clock moved)
      const failingDeliveries = (yield* call("GET", `/api/webhooks/${failingHook.body.id}/deliveries`)).body.deliveries as Array<any>
      expect(failingDeliveries).toHaveLength(2)
      expect(failingTarget.received.length).toBeGreaterThanOrEqual(2)

      const read = yield* createToken("read")
      const response = yield* scrape(read.token)
      expect(response.status).toBe(200)
      expect(response.headers["content-type"]).toBe("text/plain; version=0.0.4; charset=utf-8")
      const metrics = parseExposition(response.text)

      // ---- per monitor: the same values the API shows -------------------------------------------
      for (const monitor of [backup, report, heartbeat, paused]) {
        const shown = (yield* call("GET", `/api/monitors/${monitor.id}`)).body
        const labels = monitorLabels(monitor.id)
        expect(find(metrics, "jobmon_monitor_status", labels).map((s) => [s.labels.status, s.value]), monitor.name).toEqual([[shown.status, 1]])
        expect(valueOf(metrics, "jobmon_monitor_health_score", labels)).toBe(shown.healthScore)
        const lastPing = find(metrics, "jobmon_monitor_last_ping_timestamp_seconds", labels)
        expect(lastPing.map((s) => s.value * 1000)).toEqual(shown.lastPingAt === null ? [] : [Date.parse(shown.lastPingAt)])
        const next = find(metrics, "jobmon_monitor_next_expected_timestamp_seconds", labels)
        expect(next.map((s) => s.value * 1000)).toEqual(shown.nextExpectedAt === null ? [] : [Date.parse(shown.nextExpectedAt)])
        const open = (yield* call("GET", `/api/incidents?monitorId=${monitor.id}`)).body.incidents.filter((i: any) => i.status !== "RESOLVED")
        expect(valueOf(metrics, "jobmon_monitor_open_incidents", labels)).toBe(open.length)
      }
      expect(valueOf(metrics, "jobmon_monitor_status", { ...monitorLabels(backup.id), status: "OK" })).toBe(1)
      expect(valueOf(metrics, "jobmon_monitor_status", { ...monitorLabels(report.id), status: "FAILING" })).toBe(1)
      expect(valueOf(metrics, "jobmon_monitor_status", { ...monitorLabels(heartbeat.id), status: "MISSED" })).toBe(1)
      expect(valueOf(metrics, "jobmon_monitor_status", { ...monitorLabels(paused.id), status: "PAUSED" })).toBe(1)
      expect(valueOf(metrics, "jobmon_monitor_up", monitorLabels(backup.id))).toBe(1)
      expect(valueOf(metrics, "jobmon_monitor_up", monitorLabels(report.id))).toBe(0)
      expect(valueOf(metrics, "jobmon_monitor_up", monitorLabels(heartbeat.id))).toBe(0)
      expect(valueOf(metrics, "jobmon_monitor_up", monitorLabels(paused.id))).toBe(1)
      expect(valueOf(metrics, "jobmon_monitor_open_incidents", monitorLabels(report.id))).toBe(1)
      expect(valueOf(metrics, "jobmon_monitor_open_incidents", monitorLabels(heartbeat.id))).toBe(1)
      expect(valueOf(metrics, "jobmon_monitor_open_incidents", monitorLabels(backup.id))).toBe(0)
      // name and tags as labels: the name as written (escaped on the wire), the tags sorted and comma-joined
      const backupSample = find(metrics, "jobmon_monitor_up", monitorLabels(backup.id))[0]!
      expect(backupSample.labels).toEqual({ monitor_id: backup.id, name: 'nightly "backup" \\ Zürich', tags: "db,nightly" })
      expect(response.text).toContain('name="nightly \\"backup\\" \\\\ Zürich"')
      expect(find(metrics, "jobmon_monitor_up", monitorLabels(heartbeat.id))[0]!.labels.tags).toBe("")

      // ---- the service ---------------------------------------------------------------------------
      expect(valueOf(metrics, "jobmon_pings_total", { outcome: "accepted" })).toBe(4)
      expect(valueOf(metrics, "jobmon_pings_total", { outcome: "not_found" })).toBe(1)
      expect(valueOf(metrics, "jobmon_pings_total", { outcome: "unauthorized" })).toBe(1)
      expect(valueOf(metrics, "jobmon_pings_total", { outcome: "invalid" })).toBe(1)
      expect(valueOf(metrics, "jobmon_pings_total", { outcome: "rate_limited" })).toBe(0)
      // one batch per accepted ping (each was answered before the next was sent), one run each
      expect(valueOf(metrics, "jobmon_ping_writer_batch_size_count")).toBe(4)
      expect(valueOf(metrics, "jobmon_ping_writer_batch_size_sum")).toBe(4)
      expect(valueOf(metrics, "jobmon_ping_writer_batch_size_bucket", { le: "1" })).toBe(4)
      expect(valueOf(metrics, "jobmon_ping_writer_commit_seconds_count")).toBe(4)
      const commitSum = valueOf(metrics, "jobmon_ping_writer_commit_seconds_sum")
      expect(commitSum).toBeGreaterThan(0)
      expect(commitSum).toBeLessThan(10)
      // the heartbeat's deadline fired (on the TestClock, exactly when it was due); no other deadline came due
      expect(valueOf(metrics, "jobmon_engine_deadline_lag_seconds_count")).toBe(1)
      expect(valueOf(metrics, "jobmon_engine_deadline_lag_seconds_sum")).toBe(0)
      expect(valueOf(metrics, "jobmon_engine_monitors")).toBe(4)
      expect(valueOf(metrics, "jobmon_deliveries_total", { channel: "webhook", outcome: "delivered" })).toBe(2)
      // every 500 was counted: retried, or failed for good once no retry was left
      const refused = find(metrics, "jobmon_deliveries_total", { channel: "webhook" })
        .filter((s) => s.labels.outcome === "retrying" || s.labels.outcome === "failed")
        .reduce((sum, s) => sum + s.value, 0)
      expect(refused).toBe(failingTarget.received.length)
      expect(valueOf(metrics, "jobmon_deliveries_total", { channel: "webhook", outcome: "retrying" })).toBeGreaterThanOrEqual(2)
      // the outbox holds what still waits for a retry
      expect(valueOf(metrics, "jobmon_delivery_queue_depth", { channel: "webhook" }))
        .toBe(failingDeliveries.filter((d) => d.status === "pending").length)
      expect(valueOf(metrics, "jobmon_delivery_queue_depth", { channel: "slack" })).toBe(0)
      // process metrics (prom-client's defaults)
      expect(valueOf(metrics, "process_cpu_user_seconds_total")).toBeGreaterThan(0)
      expect(valueOf(metrics, "process_resident_memory_bytes")).toBeGreaterThan(0)
      expect(find(metrics, "nodejs_heap_size_used_bytes")).toHaveLength(1)
      // every metric has its type and help
      for (const name of ["jobmon_pings_total", "jobmon_monitor_up", "jobmon_ping_writer_commit_seconds", "jobmon_deliveries_total"]) {
        expect(metrics.types.has(name), name).toBe(true)
        expect(metrics.helps.get(name), name).toBeTruthy()
      }
      expect(metrics.types.get("jobmon_pings_total")).toBe("counter")
      expect(metrics.types.get("jobmon_ping_writer_commit_seconds")).toBe("histogram")
      expect(metrics.types.get("jobmon_monitor_up")).toBe("gauge")

      // docs/metrics.md lists every metric the endpoint serves, with its type
      const docs = readFileSync(new URL("../../docs/metrics.md", import.meta.url), "utf8")
      const rows = docs.split("\n").filter((line) => line.startsWith("| `"))
      for (const [name, type] of metrics.types) {
        const row = rows.find((line) => line.split("|")[1]!.includes(`\`${name}\``))
        expect(row, `docs/metrics.md has no row for ${name}`).toBeDefined()
        expect(row!.split("|")[2]!.trim(), name).toBe(type)
      }

      const check = checkWithPromtool(response.text)
      if (check !== "skipped") expect(check).toEqual({ status: 0, output: "" })

      // A later scrape shows later activity: counters only grow, by what happened since.
      expect((yield* sendPing(backup.id, "success")).status).toBe(200)
      // a ping URL's answers count the same (docs/pings.md#ping-urls): one accepted, one unknown
      const pingPath = new URL(String(backup.pingUrl)).pathname
      expect((yield* call("GET", pingPath, { token: null })).text).toBe("OK")
      expect((yield* call("GET", "/ping/0b6e1d9a-2c4f-4d3e-9a8b-7c6d5e4f3a2b", { token: null })).status).toBe(404)
      const again = parseExposition((yield* scrape(read.token)).text)
      expect(valueOf(again, "jobmon_pings_total", { outcome: "accepted" })).toBe(6)
      expect(valueOf(again, "jobmon_pings_total", { outcome: "not_found" })).toBe(2)
      expect(valueOf(again, "jobmon_ping_writer_batch_size_count")).toBe(6)
    })))

  it.effect("per-monitor metrics are the scraping token's organization's only", () =>
    Effect.gen(function*() {
      const ours = yield* createMonitor({ name: "ours" })
      const other = yield* createOrganization("metrics-other")
      const theirs = yield* call("POST", "/api/monitors", { token: other.token, body: { name: "theirs", schedule: { type: "interval", expression: "5m" } } })
      expect(theirs.status).toBe(201)
      const otherView = parseExposition((yield* scrape(other.token)).text)
      expect(find(otherView, "jobmon_monitor_up").map((s) => s.labels.monitor_id)).toEqual([theirs.body.id])
      const ourView = parseExposition((yield* scrape((yield* createToken("read")).token)).text)
      const ids = find(ourView, "jobmon_monitor_up").map((s) => s.labels.monitor_id)
      expect(ids).toContain(ours.id)
      expect(ids).not.toContain(theirs.body.id)
      expect(find(ourView, "jobmon_monitor_up", { name: "theirs" })).toEqual([])
    }))

  it.effect("auth: no token 401, read token 200, metrics token 200 and nothing else, wrong key 401; no key in the logs", () =>
    Effect.gen(function*() {
      const app = yield* TestApp
      const metricsKey = yield* createToken("metrics")
      expect(metricsKey.scope).toBe("metrics")
      const read = yield* createToken("read")
      const ping = yield* createToken("ping")

      const none = yield* scrape(null)
      expect(none.status).toBe(401)
      expect(none.body._tag).toBe("Unauthorized")
      expect(none.headers["www-authenticate"]).toBe('Bearer realm="jobmon"')
      expect((yield* scrape(read.token)).status).toBe(200)
      expect((yield* scrape(app.adminToken)).status).toBe(200)
      const withKey = yield* scrape(metricsKey.token)
      expect(withKey.status).toBe(200)
      expect(withKey.text).toContain("jobmon_pings_total")
      const wrongKey = `${metricsKey.token.slice(0, -4)}AAAA`
      const wrong = yield* scrape(wrongKey)
      expect(wrong.status).toBe(401)
      expect(wrong.text).not.toContain(wrongKey)
      // the ping scope is not enough; the metrics key opens nothing but /metrics
      expect((yield* scrape(ping.token)).status).toBe(403)
      const monitor = yield* createMonitor({ name: "key probe" })
      for (const [method, path] of [["GET", "/api/monitors"], ["GET", `/api/monitors/${monitor.id}`], ["GET", "/api/incidents"], ["GET", "/api/tokens"], ["POST", "/api/monitors"]] as const) {
        const r = yield* call(method, path, { token: metricsKey.token, ...(method === "POST" ? { body: { name: "x", schedule: { type: "interval", expression: "5m" } } } : {}) })
        expect(r.status, `${method} ${path}`).toBe(403)
      }
      expect((yield* sendPing(monitor.id, "success", { token: metricsKey.token })).status).toBe(403)
      // the key is listed like any token, without its secret
      const listed = (yield* call("GET", "/api/tokens")).body.tokens.find((t: any) => t.id === metricsKey.id)
      expect(listed).toMatchObject({ scope: "metrics" })
      expect(JSON.stringify(listed)).not.toContain(metricsKey.token)
      // nothing logged, at any level, carries a key
      expect(logLines.length).toBeGreaterThan(0)
      for (const secret of [metricsKey.token, wrongKey, read.token, app.adminToken]) {
        expect(logLines.filter((line) => line.includes(secret))).toEqual([])
      }
    }))
})
