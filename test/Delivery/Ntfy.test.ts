import { describe, expect, it, layer } from "@effect/vitest"
import { SqlClient } from "@effect/sql"
import { Effect, TestClock } from "effect"
import type { Alert } from "../../src/Delivery/Alert.js"
import type { IncidentFacts } from "../../src/Delivery/Channel.js"
import { ntfyMessageOf, ntfyVerdict } from "../../src/Delivery/NtfyChannel.js"
import { call, createMonitor, TestServer } from "../support/fixture.js"
import { raise } from "../Incidents/support.js"
import { ntfyProblems, ntfyReceiver } from "./ntfyReceiver.js"
import { alertFor, answered, flush, incidentWith, PUBLIC_URL } from "./alertFixtures.js"

// ntfy (docs/alerts.md#ntfy): JSON published to the server's root, priority and tags by severity,
// an optional access token as Bearer (never shown, never recorded), ntfy's answers and pace.


const incident = incidentWith({ output: "starting\ndisk full" })


const alert = (type: string, data: Record<string, unknown> = {}, facts: IncidentFacts = incident): Alert => alertFor(type, data, facts)


describe("ntfy message", () => {
  it("an opened incident: title, the facts and the output's end as text, priority and tags by severity, click to the incident", () => {
    const message = ntfyMessageOf(alert("incident.opened"), "ops-alerts")
    expect(ntfyProblems(message)).toEqual([])
    expect(message).toEqual({
      topic: "ops-alerts",
      title: "FAIL: nightly backup",
      message: "Monitor: nightly backup\nStatus: OPEN\nSeverity: HIGH\nExit code: 2\nDuration: 5.2 s\nExpected: 4.1 s\n\n" +
        "Output (the end):\nstarting\ndisk full",
      priority: 5,
      tags: ["rotating_light", "fail"],
      click: `${PUBLIC_URL}/incidents/${incident.id}`,
      actions: [{ action: "view", label: "View monitor", url: `${PUBLIC_URL}/monitors/${incident.monitorId}` }]
    })
    expect(ntfyMessageOf(alert("incident.opened", {}, { ...incident, severity: "MEDIUM" }), "t")).toMatchObject({ priority: 4, tags: ["warning", "fail"] })
    expect(ntfyMessageOf(alert("incident.opened", {}, { ...incident, severity: "LOW", type: "LATE" }), "t")).toMatchObject({ priority: 3, tags: ["information_source", "late"] })
  })

  it("resolved is quieter and says how long it lasted; acknowledged and reminders say so", () => {
    const resolved = ntfyMessageOf(alert("incident.resolved", { incident: { id: incident.id, mttrSeconds: 3900 }, resolvedBy: { name: "system" } }), "t")
    expect(resolved).toMatchObject({ title: "RESOLVED: nightly backup (FAIL, lasted 1h 5m)", priority: 2, tags: ["white_check_mark", "fail"] })
    expect(resolved.message).toContain("Lasted: 1h 5m")
    const ack = ntfyMessageOf(alert("incident.acknowledged", { acknowledgedBy: { name: "Ada" }, note: "on it" }), "t")
    expect(ack).toMatchObject({ title: "ACKNOWLEDGED: nightly backup (FAIL, by Ada)", priority: 3, tags: ["eyes", "fail"] })
    expect(ack.message).toContain("Note: on it")
    const reminder = ntfyMessageOf(alert("incident.reminder", { reminder: { n: 2, max: 3 } }), "t")
    expect(reminder).toMatchObject({ title: "REMINDER 2/3: FAIL: nightly backup (still open)", priority: 5, tags: ["alarm_clock", "fail"] })
    for (const m of [resolved, ack, reminder]) expect(ntfyProblems(m)).toEqual([])
  })

  it("whatever the output, the message stays within ntfy's 4,096 bytes and keeps the output's end", () => {
    const huge = { ...incident, monitorName: "ü".repeat(300), details: { ...incident.details, output: "💥é".repeat(20_000) + "THE END" } }
    const message = ntfyMessageOf(alert("incident.opened", {}, huge), "t")
    expect(ntfyProblems(message)).toEqual([])
    expect(Buffer.byteLength(message.message)).toBeLessThanOrEqual(4096)
    expect(message.message.endsWith("THE END")).toBe(true)
    expect(message.message).toContain("Severity: HIGH")
  })

  it("ntfy's answers", () => {
    expect(ntfyVerdict(answered(200, "{\"id\":\"x\"}"))._tag).toBe("Delivered")
    expect(ntfyVerdict(answered(429, "{\"code\":42901}"))).toMatchObject({ _tag: "RetryLater", retryAfterMs: 5000 })
    expect(ntfyVerdict(answered(429, "{\"code\":42901}", 30))).toMatchObject({ _tag: "RetryLater", retryAfterMs: 30000 })
    expect(ntfyVerdict(answered(507))._tag).toBe("RetryLater")
    for (const status of [401, 403, 404]) expect(ntfyVerdict(answered(status))._tag, `${status}`).toBe("Invalid")
    expect((ntfyVerdict(answered(403, "{\"code\":40301}")) as any).reason).toMatch(/^ntfy answered 403.*token/)
    expect(ntfyVerdict(answered(413, "{\"code\":41301}"))._tag).toBe("Rejected")
    expect(ntfyVerdict({ outcome: { _tag: "NoAnswer", error: "timeout" }, responseTimeMs: 5000 })._tag).toBe("RetryLater")
  })
})

const serverOf = (url: string) => url.replace(/\/hook$/, "")

const ntfyChannel = (config: Record<string, unknown>) =>
  Effect.gen(function*() {
    const r = yield* call("POST", "/api/alerts/channels", { body: { type: "ntfy", config } })
    expect(r.status, r.text).toBe(201)
    return r.body as { id: string; name: string; config: Record<string, unknown> }
  })

const attemptsOf = (channelId: string) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    return yield* sql<{ at: Date; status_code: number | null; request_headers: unknown }>`
      select a.at, a.status_code, a.request_headers from webhook_delivery_attempts a
      join webhook_deliveries d on d.id = a.delivery_id where d.channel_id = ${channelId} order by a.at, a.id`
  }).pipe(Effect.orDie)

layer(TestServer({ allowPrivateTargets: true, publicUrl: PUBLIC_URL }), { timeout: 120_000 })("ntfy channels", (it) => {
  it.effect("published to the server's root with the token as Bearer; the token is never shown nor recorded", () =>
    Effect.scoped(Effect.gen(function*() {
      const token = "tk_s3cr3t0000000000000000000000"
      const ntfy = yield* ntfyReceiver([200], token)
      const channel = yield* ntfyChannel({ server: `${serverOf(ntfy.url)}/`, topic: "ops-alerts", token })
      expect(channel.name).toBe("ntfy ops-alerts")
      expect(channel.config).toEqual({ server: `${serverOf(ntfy.url)}/`, topic: "ops-alerts" })
      expect(JSON.stringify((yield* call("GET", "/api/alerts/channels")).body)).not.toContain("s3cr3t")
      const monitor = yield* createMonitor({ name: "db backup" })
      const { incident: opened } = yield* raise(monitor.id)
      yield* flush
      expect(ntfy.refused).toEqual([])
      expect(ntfy.received).toHaveLength(1)
      expect(ntfy.received[0]!.headers.authorization).toBe(`Bearer ${token}`)
      expect(ntfy.received[0]!.body).toMatchObject({
        topic: "ops-alerts",
        title: "FAIL: db backup",
        priority: 5,
        tags: ["rotating_light", "fail"],
        click: `${PUBLIC_URL}/incidents/${opened.id}`
      })
      const deliveries = (yield* call("GET", `/api/alerts/channels/${channel.id}/deliveries`)).body.deliveries
      expect(deliveries[0]).toMatchObject({ status: "succeeded" })
      expect(JSON.stringify(deliveries)).not.toContain("s3cr3t")
      expect(JSON.stringify(yield* attemptsOf(channel.id))).not.toContain("s3cr3t")
      // a PATCH that leaves the token out keeps it; resolved then goes out quieter
      expect((yield* call("PATCH", `/api/alerts/channels/${channel.id}`, { body: { name: "phones" } })).status).toBe(200)
      yield* TestClock.adjust("1 second")
      expect((yield* call("POST", `/api/incidents/${opened.id}/resolve`)).status).toBe(200)
      yield* flush
      expect(ntfy.received[1]!.body).toMatchObject({ title: expect.stringMatching(/^RESOLVED: db backup \(FAIL, lasted /), priority: 2 })
      expect(ntfy.received[1]!.headers.authorization).toBe(`Bearer ${token}`)
    })))

  it.effect("a wrong token (403) makes the channel invalid with the reason, said by the Test button", () =>
    Effect.scoped(Effect.gen(function*() {
      const ntfy = yield* ntfyReceiver([200], "tk_right")
      const channel = yield* ntfyChannel({ server: serverOf(ntfy.url), topic: "ops", token: "tk_wrong" })
      const test = yield* call("POST", `/api/alerts/channels/${channel.id}/test`)
      expect(test.body).toMatchObject({ sent: false, channel: { status: "invalid" } })
      expect(test.body.answer).toContain("HTTP 403")
      expect(test.body.channel.statusReason).toMatch(/^ntfy answered 403.*token/)
      expect(ntfy.received[0]!.body.title).toBe("Test message: ntfy ops")
      const fixed = yield* call("PATCH", `/api/alerts/channels/${channel.id}`, { body: { config: { token: "tk_right" } } })
      expect(fixed.body.status).toBe("active")
      expect((yield* call("POST", `/api/alerts/channels/${channel.id}/test`)).body).toMatchObject({ sent: true })
      expect(ntfy.received[1]!.headers.authorization).toBe("Bearer tk_right")
      // "token": null removes it: the server then refuses the channel
      const removed = yield* call("PATCH", `/api/alerts/channels/${channel.id}`, { body: { config: { token: null } } })
      expect(removed.body.config).toEqual({ server: serverOf(ntfy.url), topic: "ops" })
      expect((yield* call("POST", `/api/alerts/channels/${channel.id}/test`)).body).toMatchObject({ sent: false, channel: { status: "invalid" } })
      expect(ntfy.received[2]!.headers.authorization).toBeUndefined()
    })))

  it.effect("429 without Retry-After waits ntfy's 5 seconds; 5xx retries; nothing is lost", () =>
    Effect.scoped(Effect.gen(function*() {
      const ntfy = yield* ntfyReceiver([{ status: 429, body: "{\"code\":42901,\"http\":429,\"error\":\"limit reached\"}" }, 503, 200])
      const monitor = yield* createMonitor()
      const channel = yield* ntfyChannel({ server: serverOf(ntfy.url), topic: "ops" })
      yield* raise(monitor.id)
      yield* flush
      yield* TestClock.adjust("4999 millis")
      yield* flush
      expect(ntfy.received).toHaveLength(1)
      yield* TestClock.adjust("1 millis")
      yield* flush
      expect(ntfy.received).toHaveLength(2)
      yield* TestClock.adjust("2 seconds")
      yield* flush
      expect((yield* attemptsOf(channel.id)).map((a) => a.status_code)).toEqual([429, 503, 200])
    })))

  it.effect("bad config: topic, server url, NUL", () =>
    Effect.gen(function*() {
      for (const [config, path] of [
        [{ topic: "has space" }, "config.topic"],
        [{ topic: "x".repeat(65) }, "config.topic"],
        [{ server: "ftp://ntfy.example.com", topic: "ok" }, "config.server"],
        [{ server: "http://127.0.0.1:1", topic: "ok", token: "" }, "config.token"]
      ] as const) {
        const r = yield* call("POST", "/api/alerts/channels", { body: { type: "ntfy", config } })
        expect(r.status, JSON.stringify(config)).toBe(400)
        expect(r.body.path).toBe(path)
      }
    }))

  it.effect("a burst of 100 incidents: every one reaches ntfy, at most 12 a minute, one a second", () =>
    Effect.scoped(Effect.gen(function*() {
      const ntfy = yield* ntfyReceiver([200])
      const monitors = yield* Effect.forEach(Array.from({ length: 100 }, (_, i) => i), (i) => createMonitor({ name: `burst ${i}` }), {
        concurrency: 8
      })
      const channel = yield* ntfyChannel({ server: serverOf(ntfy.url), topic: "burst" })
      yield* Effect.forEach(monitors, (m) => raise(m.id), { discard: true })
      yield* flush
      for (let i = 0; i < 200 && ntfy.received.length < 100; i++) {
        yield* TestClock.adjust("5 seconds")
        yield* flush
      }
      expect(ntfy.received.map((r) => r.body.title).sort()).toEqual(monitors.map((m) => `FAIL: ${m.name}`).sort())
      expect(ntfy.refused).toEqual([])
      const times = (yield* attemptsOf(channel.id)).map((a) => a.at.getTime())
      expect(times).toHaveLength(100)
      for (let i = 1; i < times.length; i++) expect(times[i]! - times[i - 1]!).toBeGreaterThanOrEqual(1000)
      for (let i = 12; i < times.length; i++) expect(times[i]! - times[i - 12]!).toBeGreaterThanOrEqual(60_000 - 12_000)
    })))
})
