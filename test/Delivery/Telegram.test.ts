import { describe, expect, it, layer } from "@effect/vitest"
import { SqlClient } from "@effect/sql"
import { Effect, TestClock } from "effect"
import type { Alert } from "../../src/Delivery/Alert.js"
import { type IncidentFacts, type StoredMessage } from "../../src/Delivery/Channel.js"
import type { Outcome } from "../../src/Delivery/RetrySchedule.js"
import {
  packTelegramMessages,
  TELEGRAM_TEXT_LIMIT,
  telegramRequestBody,
  telegramTextOf,
  telegramVerdict
} from "../../src/Delivery/TelegramChannel.js"
import { call, createMonitor, TestServer } from "../support/fixture.js"
import { raise } from "../Incidents/support.js"
import { TELEGRAM_OK, telegramError, telegramHtmlProblems, telegramProblems, telegramReceiver } from "./telegramReceiver.js"
import { alertFor, flush, incidentWith, PUBLIC_URL } from "./alertFixtures.js"

// Telegram through a bot's sendMessage (docs/alerts.md#telegram): HTML within Telegram's rules and
// its 4,096 characters, the answers the Bot API gives, about one message a second per chat, and
// the bot token (in the url's path) never shown, logged in an answer or recorded.

const TOKEN = "123456789:AAEsecretBotTokenValue_0123456789"

const incident = incidentWith({ monitorName: "nightly <backup> & co", output: "starting\n<dump> & \"done\"\ndisk full" })


const alert = (type: string, data: Record<string, unknown> = {}, facts: IncidentFacts = incident): Alert => alertFor(type, data, facts)

const answered = (status: number, body?: unknown, retryAfterSeconds?: number) => ({
  outcome: { _tag: "Answered", status } as Outcome,
  responseTimeMs: 5,
  responseText: body === undefined ? undefined : JSON.stringify(body),
  retryAfterSeconds
})

const asSent = (text: string) => JSON.parse(telegramRequestBody(-100123, [text]))

describe("Telegram message", () => {
  it("an opened incident: the title in bold, the facts, the output's end in <pre>, links, the time; <, > and & escaped", () => {
    const text = telegramTextOf(alert("incident.opened"))
    expect(telegramProblems(asSent(text))).toEqual([])
    expect(text).toBe([
      "\u{1F534} <b>FAIL: nightly &lt;backup&gt; &amp; co</b>",
      "<b>Monitor:</b> nightly &lt;backup&gt; &amp; co",
      "<b>Status:</b> OPEN",
      "<b>Severity:</b> HIGH",
      "<b>Exit code:</b> 2",
      "<b>Duration:</b> 5.2 s",
      "<b>Expected:</b> 4.1 s",
      "<b>Output</b>",
      "<pre>starting\n&lt;dump&gt; &amp; &quot;done&quot;\ndisk full</pre>",
      `<a href="${PUBLIC_URL}/incidents/${incident.id}">View incident</a> · <a href="${PUBLIC_URL}/monitors/${incident.monitorId}">View monitor</a>`,
      "<i>jobmon · 2026-01-31T03:00:01.000Z</i>"
    ].join("\n"))
    expect(asSent(text)).toMatchObject({ chat_id: -100123, parse_mode: "HTML", disable_web_page_preview: true })
  })

  it("whatever the name and output, a message keeps within 4,096 characters and the output keeps its end", () => {
    const huge: IncidentFacts = {
      ...incident,
      monitorName: "<&>".repeat(200),
      details: { ...incident.details, output: "<&>\"".repeat(40_000) + "THE END" }
    }
    const text = telegramTextOf(alert("incident.opened", {}, huge))
    expect(text.length).toBeLessThanOrEqual(TELEGRAM_TEXT_LIMIT)
    expect(telegramProblems(asSent(text))).toEqual([])
    expect(text).toContain("THE END</pre>")
    expect(text.length).toBeGreaterThan(3500)
  })

  it("acknowledged, resolved (how long it lasted) and reminders say so", () => {
    const ack = telegramTextOf(alert("incident.acknowledged", { acknowledgedBy: { name: "Ada" }, note: "on <it>" }))
    expect(ack.split("\n")[0]).toBe("\u{1F440} <b>ACKNOWLEDGED: nightly &lt;backup&gt; &amp; co (FAIL, by Ada)</b>")
    expect(ack).toContain("<b>Note:</b> on &lt;it&gt;")
    const resolved = telegramTextOf(alert("incident.resolved", { incident: { id: incident.id, mttrSeconds: 3900 }, resolvedBy: { name: "system" } }))
    expect(resolved).toContain("<b>Lasted:</b> 1h 5m")
    const reminder = telegramTextOf(alert("incident.reminder", { reminder: { n: 2, max: 3 } }))
    expect(reminder.split("\n")[0]).toContain("REMINDER 2/3: FAIL")
    for (const t of [ack, resolved, reminder]) expect(telegramProblems(asSent(t))).toEqual([])
  })

  it("a burst packs into messages of at most 4,096 characters, each alert once, in order", () => {
    const messages: Array<StoredMessage> = Array.from({ length: 40 }, (_, i) => ({
      deliveryId: `d${i}`,
      eventType: "incident.opened",
      body: telegramTextOf(alert("incident.opened", {}, { ...incident, monitorName: `job ${i}` }))
    }))
    const groups = packTelegramMessages(messages)
    expect(groups.flat()).toEqual(messages)
    expect(groups.length).toBeGreaterThan(1)
    for (const group of groups) {
      const sent = JSON.parse(telegramRequestBody("@ops", group.map((m) => m.body)))
      expect(telegramProblems(sent)).toEqual([])
      expect(sent.text.length).toBeLessThanOrEqual(TELEGRAM_TEXT_LIMIT)
    }
  })

  it("the receiver's check refuses what Telegram refuses", () => {
    expect(telegramHtmlProblems("a < b").problems).not.toEqual([])
    expect(telegramHtmlProblems("a & b").problems).not.toEqual([])
    expect(telegramHtmlProblems("<b>x</i>").problems).not.toEqual([])
    expect(telegramHtmlProblems("<div>x</div>").problems).not.toEqual([])
    expect(telegramHtmlProblems("<b>a &lt; b &amp; c</b>")).toEqual({ problems: [], length: 9 })
  })

  it("Telegram's answers", () => {
    expect(telegramVerdict(answered(200, { ok: true, result: {} }))._tag).toBe("Delivered")
    expect(telegramVerdict(answered(429, { ok: false, error_code: 429, description: "Too Many Requests: retry after 7", parameters: { retry_after: 7 } })))
      .toEqual({ _tag: "RetryLater", retryAfterMs: 7000, detail: "HTTP 429: Too Many Requests: retry after 7" })
    expect(telegramVerdict(answered(502, { ok: false, error_code: 502, description: "Bad Gateway" }))._tag).toBe("RetryLater")
    expect(telegramVerdict({ outcome: { _tag: "NoAnswer", error: "timeout" }, responseTimeMs: 5000 })._tag).toBe("RetryLater")
    expect(telegramVerdict({ outcome: { _tag: "Refused", error: "refused: not public" }, responseTimeMs: 0 })._tag).toBe("Rejected")
    const cases = [
      [401, "Unauthorized"],
      [403, "Forbidden: bot was blocked by the user"],
      [403, "Forbidden: bot was kicked from the group chat"],
      [400, "Bad Request: chat not found"],
      [404, "Not Found"]
    ] as const
    for (const [status, description] of cases) {
      const verdict = telegramVerdict(answered(status, { ok: false, error_code: status, description }))
      expect(verdict, description).toMatchObject({ _tag: "Invalid", detail: `HTTP ${status}: ${description}` })
      expect((verdict as any).reason).toContain(`Telegram answered ${status} ${description}`)
    }
    const moved = telegramVerdict(answered(400, {
      ok: false,
      error_code: 400,
      description: "Bad Request: group chat was upgraded to a supergroup chat",
      parameters: { migrate_to_chat_id: -1001234567890 }
    }))
    expect((moved as any).reason).toContain("-1001234567890")
    expect(telegramVerdict(answered(400, { ok: false, error_code: 400, description: "Bad Request: can't parse entities" })))
      .toEqual({ _tag: "Rejected", detail: "HTTP 400: Bad Request: can't parse entities" })
  })
})

const telegramChannel = (base: string, extra: Record<string, unknown> = {}) =>
  Effect.gen(function*() {
    const r = yield* call("POST", "/api/alerts/channels", {
      body: { type: "telegram", name: "tg", config: { botToken: TOKEN, chatId: -100123, baseUrl: base }, ...extra }
    })
    expect(r.status, r.text).toBe(201)
    expect(r.text).not.toContain("secretBotToken")
    return r.body as { id: string; config: Record<string, unknown> }
  })

/** Everything recorded of a channel's messages and attempts, as text. */
const recordedOf = (channelId: string) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const rows = yield* sql<{ row: string }>`
      select row_to_json(a)::text || row_to_json(d)::text as row from webhook_delivery_attempts a
      join webhook_deliveries d on d.id = a.delivery_id where d.channel_id = ${channelId}`
    return rows.map((r) => r.row).join("\n")
  }).pipe(Effect.orDie)

const attemptsOf = (channelId: string) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    return yield* sql<{ at: Date; status_code: number | null }>`
      select a.at, a.status_code from webhook_delivery_attempts a
      join webhook_deliveries d on d.id = a.delivery_id where d.channel_id = ${channelId} order by a.at, a.id`
  }).pipe(Effect.orDie)

layer(TestServer({ allowPrivateTargets: true, publicUrl: PUBLIC_URL }), { timeout: 120_000 })("Telegram channels", (it) => {
  it.effect("config: the token is write-only, malformed tokens and chat ids are 400 naming the field, a PATCH keeps the token", () =>
    Effect.scoped(Effect.gen(function*() {
      const tg = yield* telegramReceiver(TOKEN)
      const created = yield* telegramChannel(tg.base)
      expect(created.config).toEqual({ chatId: -100123, baseUrl: tg.base })
      const listed = yield* call("GET", "/api/alerts/channels")
      expect(listed.text).not.toContain("secretBotToken")
      for (const [config, path] of [
        [{ botToken: "not a token", chatId: 1 }, "config.botToken"],
        [{ botToken: TOKEN, chatId: "general" }, "config.chatId"],
        [{ botToken: TOKEN, chatId: 1, baseUrl: "ftp://x" }, "config.baseUrl"]
      ] as const) {
        const r = yield* call("POST", "/api/alerts/channels", { body: { type: "telegram", config } })
        expect(r.status, JSON.stringify(config)).toBe(400)
        expect(r.body.path).toBe(path)
        expect(r.text).not.toContain("secretBotToken")
      }
      const patched = yield* call("PATCH", `/api/alerts/channels/${created.id}`, { body: { config: { chatId: "@ops_alerts" } } })
      expect(patched.status, patched.text).toBe(200)
      expect(patched.body.config).toEqual({ chatId: "@ops_alerts", baseUrl: tg.base })
      const test = yield* call("POST", `/api/alerts/channels/${created.id}/test`)
      expect(test.body.sent).toBe(true)
      expect(tg.received.at(-1)!.body).toMatchObject({ chat_id: "@ops_alerts", text: expect.stringContaining("Test message: tg") })
      expect(tg.refused).toEqual([])
    })))

  it.effect("an incident opened, acknowledged and resolved: three messages, as sendMessage takes them; the token recorded nowhere", () =>
    Effect.scoped(Effect.gen(function*() {
      const tg = yield* telegramReceiver(TOKEN)
      const monitor = yield* createMonitor({ name: "db <backup>" })
      const channel = yield* telegramChannel(tg.base)
      const { incident: opened } = yield* raise(monitor.id, { details: { exitCode: 2, output: "x".repeat(9000) + "disk & full" } })
      yield* flush
      yield* TestClock.adjust("1 second")
      expect((yield* call("POST", `/api/incidents/${opened.id}/acknowledge`, { body: { note: "looking" } })).status).toBe(200)
      yield* flush
      yield* TestClock.adjust("1 second")
      expect((yield* call("POST", `/api/incidents/${opened.id}/resolve`)).status).toBe(200)
      yield* flush
      expect(tg.refused).toEqual([])
      expect(tg.received.map((r) => r.body.text.split("\n")[0])).toEqual([
        expect.stringContaining("<b>FAIL: db &lt;backup&gt;</b>"),
        expect.stringMatching(/<b>ACKNOWLEDGED: db &lt;backup&gt; \(FAIL, by /),
        expect.stringMatching(/<b>RESOLVED: db &lt;backup&gt; \(FAIL, lasted /)
      ])
      expect(tg.received[0]!.body.text).toContain("disk &amp; full</pre>")
      expect(tg.received[0]!.body).toMatchObject({ chat_id: -100123, parse_mode: "HTML", disable_web_page_preview: true })
      const deliveries = yield* call("GET", `/api/alerts/channels/${channel.id}/deliveries`)
      expect(deliveries.body.deliveries.map((d: any) => d.status)).toEqual(["succeeded", "succeeded", "succeeded"])
      expect(deliveries.text).not.toContain("secretBotToken")
      const recorded = yield* recordedOf(channel.id)
      expect(recorded).toContain("application/json")
      expect(recorded).not.toContain("secretBotToken")
    })))

  it.effect("429 waits parameters.retry_after; 5xx retries after the backoff; nothing is lost", () =>
    Effect.scoped(Effect.gen(function*() {
      const tg = yield* telegramReceiver(TOKEN, [
        telegramError(429, "Too Many Requests: retry after 3", { retry_after: 3 }),
        telegramError(502, "Bad Gateway"),
        TELEGRAM_OK
      ])
      const monitor = yield* createMonitor()
      const channel = yield* telegramChannel(tg.base)
      yield* raise(monitor.id)
      yield* flush
      expect(tg.received).toHaveLength(1)
      yield* TestClock.adjust("2999 millis")
      yield* flush
      expect(tg.received).toHaveLength(1)
      yield* TestClock.adjust("1 millis")
      yield* flush
      expect(tg.received).toHaveLength(2)
      yield* TestClock.adjust("2 seconds")
      yield* flush
      expect(tg.received).toHaveLength(3)
      const [d] = (yield* call("GET", `/api/alerts/channels/${channel.id}/deliveries`)).body.deliveries
      expect(d).toMatchObject({ status: "succeeded", attempts: 3, lastStatusCode: 200 })
      expect((yield* attemptsOf(channel.id)).map((a) => a.status_code)).toEqual([429, 502, 200])
    })))

  it.effect("a bot blocked (403) makes the channel invalid with Telegram's description; the test endpoint shows 'chat not found'", () =>
    Effect.scoped(Effect.gen(function*() {
      const blocked = yield* telegramReceiver(TOKEN, [telegramError(403, "Forbidden: bot was blocked by the user")])
      const monitor = yield* createMonitor()
      const channel = yield* telegramChannel(blocked.base)
      yield* raise(monitor.id)
      yield* flush
      const got = (yield* call("GET", `/api/alerts/channels/${channel.id}`)).body
      expect(got.status).toBe("invalid")
      expect(got.statusReason).toContain("Forbidden: bot was blocked by the user")
      const [d] = (yield* call("GET", `/api/alerts/channels/${channel.id}/deliveries`)).body.deliveries
      expect(d).toMatchObject({ status: "failed", lastError: "HTTP 403: Forbidden: bot was blocked by the user" })

      const missing = yield* telegramReceiver(TOKEN, [telegramError(400, "Bad Request: chat not found")])
      const other = yield* telegramChannel(missing.base)
      const test = yield* call("POST", `/api/alerts/channels/${other.id}/test`)
      expect(test.status).toBe(200)
      expect(test.body).toMatchObject({ sent: false, channel: { status: "invalid", statusReason: expect.stringContaining("chat not found") } })
      expect(test.body.answer).toContain("chat not found")
      expect(test.text).not.toContain("secretBotToken")

      // a wrong token: Telegram answers 401 Unauthorized
      const wrong = yield* telegramReceiver("1:someOtherTokenValue_0123456789")
      const third = yield* telegramChannel(wrong.base)
      const unauthorized = yield* call("POST", `/api/alerts/channels/${third.id}/test`)
      expect(unauthorized.body).toMatchObject({ sent: false, channel: { status: "invalid", statusReason: expect.stringContaining("401 Unauthorized") } })
      expect(unauthorized.text).not.toContain("secretBotToken")
    })))

  it.effect("a burst of 100 incidents: every one reaches the chat, packed, one request a second and 20 a minute at most", () =>
    Effect.scoped(Effect.gen(function*() {
      const tg = yield* telegramReceiver(TOKEN)
      const monitors = yield* Effect.forEach(Array.from({ length: 100 }, (_, i) => i), (i) => createMonitor({ name: `burst ${i}` }), {
        concurrency: 8
      })
      const channel = yield* telegramChannel(tg.base)
      yield* Effect.forEach(monitors, (m) => raise(m.id), { discard: true })
      yield* flush
      const titles = () => tg.received.flatMap((r) => [...(r.body.text as string).matchAll(/<b>FAIL: (burst \d+)<\/b>/g)].map((m) => m[1]))
      for (let i = 0; i < 180 && titles().length < 100; i++) {
        yield* TestClock.adjust("1 second")
        yield* flush
      }
      expect(tg.refused).toEqual([])
      expect([...titles()].sort()).toEqual(monitors.map((m) => m.name).sort())
      const times = [...new Set((yield* attemptsOf(channel.id)).map((a) => a.at.getTime()))]
      expect(times.length).toBe(tg.received.length)
      for (let i = 1; i < times.length; i++) expect(times[i]! - times[i - 1]!).toBeGreaterThanOrEqual(1000)
      const perMinute = new Map<number, number>()
      for (const t of times) perMinute.set(Math.floor(t / 60_000), (perMinute.get(Math.floor(t / 60_000)) ?? 0) + 1)
      for (const n of perMinute.values()) expect(n).toBeLessThanOrEqual(20)
      const rows = (yield* call("GET", `/api/alerts/channels/${channel.id}/deliveries?limit=500`)).body.deliveries
      expect(rows).toHaveLength(100)
      expect(rows.every((d: any) => d.status === "succeeded")).toBe(true)
    })))
})
