import { describe, expect, it, layer } from "@effect/vitest"
import { Effect, TestClock } from "effect"
import { COLORS, errorOutputBlock, FIELD_VALUE_LIMIT, formatDuration } from "../../src/Delivery/ChatMessage.js"
import { Webhooks } from "../../src/Delivery/Webhooks.js"
import { Events } from "../../src/Events/Events.js"
import { call, createMonitor, TestServer } from "../support/fixture.js"
import { defaultOrg, raise } from "../Incidents/support.js"
import { receiver } from "./receiver.js"

const flush = Effect.flatMap(Webhooks, (w) => w.flush)
const PUBLIC_URL = "https://jobmon.example"

const createChat = (body: Record<string, unknown>) =>
  Effect.gen(function*() {
    const r = yield* call("POST", "/api/alerts/chat/webhooks", { body })
    expect(r.status, r.text).toBe(201)
    return r.body as { id: string; [key: string]: any }
  })

describe("chat message", () => {
  it("error output keeps its end and fits the 1024 field limit", () => {
    const long = "x".repeat(5000) + "THE END"
    const block = errorOutputBlock(long)
    expect(block.length).toBeLessThanOrEqual(FIELD_VALUE_LIMIT)
    expect(block.startsWith("```\n…")).toBe(true)
    expect(block.endsWith("THE END\n```")).toBe(true)
    expect(errorOutputBlock("short")).toBe("```\nshort\n```")
  })
  it("durations read like people write them", () => {
    expect(formatDuration(450)).toBe("450 ms")
    expect(formatDuration(5230)).toBe("5.2 s")
    expect(formatDuration(125_000)).toBe("2m 5s")
    expect(formatDuration(null)).toBe("—")
  })
})

layer(TestServer({ allowPrivateTargets: true, publicUrl: PUBLIC_URL }), { timeout: 120_000 })("chat webhooks", (it) => {
  it.effect("create, list, get, patch, delete", () =>
    Effect.gen(function*() {
      const created = yield* createChat({ url: "http://127.0.0.1:1/chat", name: "ops" })
      expect(created).toMatchObject({
        name: "ops",
        url: "http://127.0.0.1:1/chat",
        rules: { severity: [], types: [] },
        mention: null,
        status: "active",
        statusReason: null
      })
      const list = yield* call("GET", "/api/alerts/chat/webhooks")
      expect(list.body.webhooks.map((w: any) => w.id)).toContain(created.id)
      const patched = yield* call("PATCH", `/api/alerts/chat/webhooks/${created.id}`, {
        body: { rules: { types: ["FAIL"], severity: ["HIGH"] }, mention: "<@&42>" }
      })
      expect(patched.status).toBe(200)
      expect(patched.body).toMatchObject({ rules: { types: ["FAIL"], severity: ["HIGH"] }, mention: "<@&42>" })
      expect((yield* call("GET", `/api/alerts/chat/webhooks/${created.id}`)).body.mention).toBe("<@&42>")
      const bad = yield* call("POST", "/api/alerts/chat/webhooks", { body: { url: "ftp://x/y" } })
      expect(bad.status).toBe(400)
      expect(bad.body.path).toBe("url")
      const badType = yield* call("POST", "/api/alerts/chat/webhooks", { body: { url: "http://127.0.0.1:1/c", rules: { types: ["RESOLVED"] } } })
      expect(badType.status).toBe(400)
      expect((yield* call("DELETE", `/api/alerts/chat/webhooks/${created.id}`)).status).toBe(204)
      expect((yield* call("GET", `/api/alerts/chat/webhooks/${created.id}`)).status).toBe(404)
    }))

  it.effect("a FAIL incident posts one embed per the spec's shape; its resolution posts RESOLVED", () =>
    Effect.scoped(Effect.gen(function*() {
      const chat = yield* receiver([204])
      const monitor = yield* createMonitor({ name: "db backup" })
      yield* createChat({ url: chat.url, name: "ops", mention: "<@&123>" })
      const { incident } = yield* raise(monitor.id, {
        details: { exitCode: 2, durationMs: 5230, output: "y".repeat(3000) + "disk full", expectedDurationMs: 4100 }
      })
      yield* flush
      expect(chat.received).toHaveLength(1)
      const message = chat.received[0]!.body
      expect(message.content).toBe("<@&123>")
      expect(message.embeds).toHaveLength(1)
      const embed = message.embeds[0]
      expect(embed.title).toBe("FAIL: db backup")
      expect(embed.color).toBe(COLORS.FAIL)
      expect(embed.fields.map((f: any) => [f.name, f.inline])).toEqual([
        ["Monitor", true],
        ["Status", true],
        ["Severity", true],
        ["Exit Code", true],
        ["Duration", true],
        ["Expected", true],
        ["Error Output", false]
      ])
      expect(embed.fields.slice(0, 6).map((f: any) => f.value)).toEqual(["db backup", "OPEN", "HIGH", "2", "5.2 s", "4.1 s"])
      const output = embed.fields[6].value as string
      expect(output.length).toBeLessThanOrEqual(1024)
      expect(output.endsWith("disk full\n```")).toBe(true)
      expect(embed.timestamp).toBe(incident.createdAt)
      expect(embed.footer.text).toBe("jobmon")
      expect(message.components).toEqual([{
        type: 1,
        components: [
          { type: 2, style: 5, label: "View incident", url: `${PUBLIC_URL}/incidents/${incident.id}` },
          { type: 2, style: 5, label: "View monitor", url: `${PUBLIC_URL}/monitors/${monitor.id}` }
        ]
      }])

      expect((yield* call("POST", `/api/incidents/${incident.id}/resolve`)).status).toBe(200)
      yield* flush
      expect(chat.received).toHaveLength(2)
      const resolved = chat.received[1]!.body.embeds[0]
      expect(resolved.title).toBe("RESOLVED: db backup")
      expect(resolved.color).toBe(COLORS.RESOLVED)
      expect(resolved.fields[1].value).toBe("RESOLVED")
    })))

  it.effect("routing by rules: only matching types and severities", () =>
    Effect.scoped(Effect.gen(function*() {
      const missedOnly = yield* receiver([200])
      const lowOnly = yield* receiver([200])
      const monitor = yield* createMonitor()
      yield* createChat({ url: missedOnly.url, name: "missed", rules: { types: ["MISSED"] } })
      yield* createChat({ url: lowOnly.url, name: "low", rules: { severity: ["LOW"] } })
      yield* raise(monitor.id, { type: "FAIL", severity: "HIGH" })
      yield* raise(monitor.id, { type: "ANOMALY", severity: "LOW", details: {} })
      yield* flush
      expect(missedOnly.received).toHaveLength(0)
      expect(lowOnly.received.map((r) => r.body.embeds[0].title)).toEqual([expect.stringMatching(/^ANOMALY: /)])
    })))

  it.effect("404 from the chat service: status invalid with a reason, nothing more is sent until the url changes", () =>
    Effect.scoped(Effect.gen(function*() {
      const gone = yield* receiver([404])
      const fresh = yield* receiver([200])
      const a = yield* createMonitor()
      const b = yield* createMonitor()
      const hook = yield* createChat({ url: gone.url, name: "gone" })
      yield* raise(a.id)
      yield* flush
      expect(gone.received).toHaveLength(1)
      const got = yield* call("GET", `/api/alerts/chat/webhooks/${hook.id}`)
      expect(got.body.status).toBe("invalid")
      expect(got.body.statusReason).toContain("404")
      yield* raise(b.id)
      yield* flush
      yield* TestClock.adjust("1 minute")
      yield* flush
      expect(gone.received).toHaveLength(1)
      const patched = yield* call("PATCH", `/api/alerts/chat/webhooks/${hook.id}`, { body: { url: fresh.url } })
      expect(patched.body).toMatchObject({ status: "active", statusReason: null })
      yield* raise(b.id, { type: "LATE", severity: "MEDIUM", details: {} })
      yield* flush
      expect(fresh.received).toHaveLength(1)
    })))

  it.effect("429 with Retry-After: the message waits that long, then goes", () =>
    Effect.scoped(Effect.gen(function*() {
      const chat = yield* receiver([429, 200])
      chat.server.removeAllListeners("request")
      let n = 0
      chat.server.on("request", (req, res) => {
        req.resume()
        req.on("end", () => {
          n++
          if (n === 1) res.writeHead(429, { "retry-after": "3" }).end()
          else res.writeHead(204).end()
        })
      })
      const monitor = yield* createMonitor()
      yield* createChat({ url: chat.url, name: "limited" })
      yield* raise(monitor.id)
      yield* flush
      expect(n).toBe(1)
      yield* TestClock.adjust("2999 millis")
      yield* flush
      expect(n).toBe(1)
      yield* TestClock.adjust("1 millis")
      yield* flush
      expect(n).toBe(2)
    })))

  it.effect("test message: 200 {sent, status}; a 401 makes it invalid and answers 502 naming it", () =>
    Effect.scoped(Effect.gen(function*() {
      const ok = yield* receiver([204])
      const hook = yield* createChat({ url: ok.url, name: "test-ok", mention: "<@&7>" })
      const r = yield* call("POST", "/api/alerts/chat/test", { body: { webhookId: hook.id } })
      expect(r.status).toBe(200)
      expect(r.body).toEqual({ sent: true, status: "active" })
      expect(ok.received[0]!.body.content).toBe("<@&7>")
      expect(ok.received[0]!.body.embeds).toHaveLength(1)

      const unauthorized = yield* receiver([401])
      const bad = yield* createChat({ url: unauthorized.url, name: "test-bad" })
      const r2 = yield* call("POST", "/api/alerts/chat/test", { body: { webhookId: bad.id } })
      expect(r2.status).toBe(502)
      expect(r2.body._tag).toBe("BadGateway")
      expect(r2.body.message).toContain("401")
      expect((yield* call("GET", `/api/alerts/chat/webhooks/${bad.id}`)).body.status).toBe("invalid")
      expect((yield* call("POST", "/api/alerts/chat/test", { body: { webhookId: "00000000-0000-4000-8000-000000000000" } })).status).toBe(404)
    })))

  it.effect("maintenance notices go to the chat webhooks a window's channels name", () =>
    Effect.scoped(Effect.gen(function*() {
      const named = yield* receiver([204])
      const other = yield* receiver([204])
      yield* createChat({ url: named.url, name: "maint-ops", rules: { types: ["FAIL"] } })
      yield* createChat({ url: other.url, name: "maint-other" })
      const monitor = yield* createMonitor()
      const { orgId } = yield* defaultOrg
      const events = yield* Events
      const now = yield* TestClock.currentTimeMillis
      const startsAt = new Date(now).toISOString()
      const endsAt = new Date(now + 3_600_000).toISOString()
      yield* events.record({
        orgId,
        type: "maintenance.started",
        data: {
          window: { id: "00000000-0000-4000-8000-000000000001", name: "db upgrade", monitorIds: [monitor.id], reason: "v17", timezone: "UTC" },
          startsAt,
          endsAt,
          endedAt: null,
          endReason: null,
          beforeStartSeconds: null,
          channels: ["chat:maint-ops", "webhook:00000000-0000-4000-8000-000000000002"]
        },
        monitorIds: [monitor.id],
        at: now
      })
      yield* flush
      expect(other.received).toHaveLength(0)
      expect(named.received).toHaveLength(1)
      const embed = named.received[0]!.body.embeds[0]
      expect(embed.title).toBe("Maintenance started: db upgrade")
      expect(embed.fields.map((f: any) => [f.name, f.value])).toEqual([
        ["Monitors", "1"],
        ["Starts", startsAt],
        ["Ends", endsAt],
        ["Reason", "v17"]
      ])
    })))
})
