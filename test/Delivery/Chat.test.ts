import { describe, expect, it, layer } from "@effect/vitest"
import { SqlClient } from "@effect/sql"
import { Effect, TestClock } from "effect"
import { COLORS, errorOutputBlock, FIELD_VALUE_LIMIT, formatDuration } from "../../src/Delivery/ChatMessage.js"
import { Webhooks } from "../../src/Delivery/Webhooks.js"
import { Events } from "../../src/Events/Events.js"
import { call, createMonitor, TestServer } from "../support/fixture.js"
import { defaultOrg, raise } from "../Incidents/support.js"
import { receiver } from "./receiver.js"

const flush = Effect.flatMap(Webhooks, (w) => w.flush)

const chatDeliveries = (chatWebhookId: string) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    return yield* sql<{ id: string; status: string; attempts: number; last_status_code: number | null }>`
      select id, status, attempts, last_status_code from webhook_deliveries
      where chat_webhook_id = ${chatWebhookId} order by event_seq`
  }).pipe(Effect.orDie)
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
      yield* createChat({ url: `${chat.url}?thread_id=42`, name: "ops", mention: "<@&123>" })
      const { incident } = yield* raise(monitor.id, {
        details: { exitCode: 2, durationMs: 5230, output: "y".repeat(3000) + "disk full", expectedDurationMs: 4100 }
      })
      yield* flush
      expect(chat.received).toHaveLength(1)
      // the thread stays; Discord shows a non-application webhook's buttons only when asked to
      const query = new URL(chat.received[0]!.url, "http://x").searchParams
      expect(query.get("thread_id")).toBe("42")
      expect(query.get("with_components")).toBe("true")
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

  it.effect("the url is masked after the create answer; a PATCH without url, or with the masked url, keeps posting to the real one", () =>
    Effect.scoped(Effect.gen(function*() {
      const chat = yield* receiver([204])
      const url = `${chat.url.replace(/\/hook$/, "")}/api/webhooks/424242/tok3n-SECRET_value?thread_id=9`
      const created = yield* createChat({ url, name: "masked" })
      expect(created.url).toBe(url)
      const shown = (yield* call("GET", `/api/alerts/chat/webhooks/${created.id}`)).body.url
      expect(shown).toBe(url.replace("tok3n-SECRET_value", "***"))
      const renamed = yield* call("PATCH", `/api/alerts/chat/webhooks/${created.id}`, { body: { name: "masked-2" } })
      expect(renamed.body.url).toBe(shown)
      const echoed = yield* call("PATCH", `/api/alerts/chat/webhooks/${created.id}`, { body: { url: shown, mention: "<@&5>" } })
      expect(echoed.status).toBe(200)
      expect(echoed.body).toMatchObject({ url: shown, status: "active", mention: "<@&5>" })
      const monitor = yield* createMonitor({ name: "masked job" })
      yield* raise(monitor.id)
      yield* flush
      expect(chat.received).toHaveLength(1)
      const posted = new URL(chat.received[0]!.url, "http://x")
      expect(posted.pathname).toBe("/api/webhooks/424242/tok3n-SECRET_value")
      expect(posted.searchParams.get("thread_id")).toBe("9")
      expect(chat.received[0]!.body.content).toBe("<@&5>")
      expect((yield* call("DELETE", `/api/alerts/chat/webhooks/${created.id}`)).status).toBe(204)
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
      const chat = yield* receiver([{ status: 429, headers: { "retry-after": "3" } }, 204])
      const monitor = yield* createMonitor()
      const hook = yield* createChat({ url: chat.url, name: "limited" })
      yield* raise(monitor.id)
      yield* flush
      expect(chat.received).toHaveLength(1)
      yield* TestClock.adjust("2999 millis")
      yield* flush
      expect(chat.received).toHaveLength(1)
      yield* TestClock.adjust("1 millis")
      yield* flush
      expect(chat.received).toHaveLength(2)
      expect(chat.received[1]!.raw.equals(chat.received[0]!.raw)).toBe(true)
      const [d] = yield* chatDeliveries(hook.id)
      expect(d).toMatchObject({ status: "succeeded", attempts: 2, last_status_code: 204 })
    })))

  it.effect("429 then 5xx: waits Retry-After, then the 1, 2, 4 s backoff (each at least Retry-After)", () =>
    Effect.scoped(Effect.gen(function*() {
      const chat = yield* receiver([{ status: 429, headers: { "retry-after": "1" } }, 500, 503, 200])
      const monitor = yield* createMonitor()
      const hook = yield* createChat({ url: chat.url, name: "backoff" })
      yield* raise(monitor.id)
      yield* flush
      for (const [gap, expected] of [[999, 1], [1, 2], [1999, 2], [1, 3], [3999, 3], [1, 4]] as const) {
        yield* TestClock.adjust(`${gap} millis`)
        yield* flush
        expect(chat.received.length, `after +${gap} ms`).toBe(expected)
      }
      const [d] = yield* chatDeliveries(hook.id)
      expect(d).toMatchObject({ status: "succeeded", attempts: 4 })
    })))

  it.effect("a burst while the webhook waits goes out as messages of at most 10 embeds, in order, each incident once", () =>
    Effect.scoped(Effect.gen(function*() {
      const chat = yield* receiver([{ status: 429, headers: { "retry-after": "2" } }, 204])
      const monitors = yield* Effect.forEach(Array.from({ length: 26 }, (_, i) => i), (i) => createMonitor({ name: `burst-${i}` }))
      const hook = yield* createChat({ url: `${chat.url}?thread_id=7`, name: "burst", mention: "<@&9>" })
      yield* raise(monitors[0]!.id)
      yield* flush
      expect(chat.received).toHaveLength(1)
      // 25 more incidents while it waits: nothing goes out
      for (const m of monitors.slice(1)) yield* raise(m.id)
      yield* flush
      expect(chat.received).toHaveLength(1)
      yield* TestClock.adjust("2 seconds")
      yield* flush
      const messages = chat.received.slice(1).map((r) => r.body)
      expect(messages.map((m) => m.embeds.length)).toEqual([10, 10, 6])
      const titles = messages.flatMap((m) => m.embeds.map((e: any) => e.title))
      expect(titles).toEqual(monitors.map((m) => `FAIL: ${m.name}`))
      for (const [i, r] of chat.received.slice(1).entries()) {
        const m = messages[i]
        expect(m.content).toBe("<@&9>")
        // every embed keeps the spec's shape, and its title links to its incident
        for (const e of m.embeds) {
          expect(e.fields.map((f: any) => f.name)).toEqual(["Monitor", "Status", "Severity", "Exit Code", "Duration", "Expected", "Error Output"])
          expect(e.url).toMatch(new RegExp(`^${PUBLIC_URL}/incidents/`))
        }
        const buttons = m.components.flatMap((row: any) => row.components)
        expect(m.components.length).toBeLessThanOrEqual(5)
        expect(buttons).toHaveLength(2 * m.embeds.length)
        expect(buttons[0].label).toBe("View incident 1")
        expect(buttons[0].url).toBe(m.embeds[0].url)
        const query = new URL(r.url, "http://x").searchParams
        expect([query.get("thread_id"), query.get("with_components")]).toEqual(["7", "true"])
      }
      const rows = yield* chatDeliveries(hook.id)
      expect(rows).toHaveLength(26)
      expect(rows.every((d) => d.status === "succeeded")).toBe(true)
      yield* TestClock.adjust("10 minutes")
      yield* flush
      expect(chat.received).toHaveLength(4)
    })))

  it.effect("a burst of long embeds keeps every message within 6,000 characters", () =>
    Effect.scoped(Effect.gen(function*() {
      const chat = yield* receiver([{ status: 429, headers: { "retry-after": "1" } }, 204])
      const monitors = yield* Effect.forEach(
        Array.from({ length: 12 }, (_, i) => i),
        (i) => createMonitor({ name: `long-${String(i).padStart(2, "0")}-${"n".repeat(190)}` })
      )
      yield* createChat({ url: chat.url, name: "long" })
      const details = { exitCode: 1, durationMs: 1000, output: "o".repeat(5000), expectedDurationMs: 900 }
      yield* raise(monitors[0]!.id, { details })
      yield* flush
      for (const m of monitors.slice(1)) yield* raise(m.id, { details })
      yield* TestClock.adjust("1 second")
      yield* flush
      const messages = chat.received.slice(1).map((r) => r.body)
      for (const m of messages) {
        const characters = m.embeds.reduce((n: number, e: any) =>
          n + e.title.length + e.footer.text.length + e.fields.reduce((k: number, f: any) => k + f.name.length + f.value.length, 0), 0)
        expect(characters).toBeLessThanOrEqual(6000)
        expect(m.embeds.length).toBeLessThanOrEqual(10)
      }
      // about 1,500 characters an embed: three a message, not ten
      expect(messages.length).toBeGreaterThan(2)
      expect(messages.flatMap((m) => m.embeds.map((e: any) => e.title))).toEqual(monitors.map((m) => `FAIL: ${m.name}`))
    })))

  it.effect("over 30 messages a minute: the rest wait for the next minute and go out together", () =>
    Effect.scoped(Effect.gen(function*() {
      const chat = yield* receiver([204])
      const monitors = yield* Effect.forEach(Array.from({ length: 35 }, (_, i) => i), (i) => createMonitor({ name: `rate-${i}` }))
      yield* createChat({ url: chat.url, name: "rate" })
      const now = yield* TestClock.currentTimeMillis
      yield* TestClock.adjust(`${60_000 - (now % 60_000)} millis`)
      for (const m of monitors.slice(0, 30)) {
        yield* raise(m.id)
        yield* flush
      }
      expect(chat.received).toHaveLength(30)
      for (const m of monitors.slice(30)) yield* raise(m.id)
      yield* flush
      expect(chat.received).toHaveLength(30)
      yield* TestClock.adjust("60 seconds")
      yield* flush
      expect(chat.received).toHaveLength(31)
      expect(chat.received[30]!.body.embeds.map((e: any) => e.title)).toEqual(monitors.slice(30).map((m) => `FAIL: ${m.name}`))
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
