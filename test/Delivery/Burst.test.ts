import { afterAll, expect, layer } from "@effect/vitest"
import { Effect, Option, Redacted, TestClock } from "effect"
import { createHmac } from "node:crypto"
import { CHAT_RATE_LIMIT_PER_MINUTE, RATE_LIMIT_PER_MINUTE } from "../../src/Delivery/RetrySchedule.js"
import { EMAIL_PER_MINUTE } from "../../src/Delivery/EmailChannel.js"
import { NTFY_PER_MINUTE, NTFY_SPACING_MS } from "../../src/Delivery/NtfyChannel.js"
import { OPSGENIE_PER_MINUTE } from "../../src/Delivery/OpsgenieChannel.js"
import { PAGERDUTY_PER_MINUTE } from "../../src/Delivery/PagerDutyChannel.js"
import { SLACK_PER_MINUTE, SLACK_SPACING_MS } from "../../src/Delivery/SlackChannel.js"
import { TEAMS_PER_MINUTE, TEAMS_SPACING_MS } from "../../src/Delivery/TeamsChannel.js"
import { TELEGRAM_PER_MINUTE, TELEGRAM_SPACING_MS } from "../../src/Delivery/TelegramChannel.js"
import { call, createMonitor, TestServer } from "../support/fixture.js"
import { raise } from "../Incidents/support.js"
import { flush, PUBLIC_URL } from "./alertFixtures.js"
import { ntfyReceiver } from "./ntfyReceiver.js"
import { opsgenieReceiver, pagerDutyReceiver } from "./onCallReceivers.js"
import { receiver } from "./receiver.js"
import { slackReceiver } from "./slackReceiver.js"
import { startSmtp } from "./smtpReceiver.js"
import { teamsReceiver } from "./teamsReceiver.js"
import { TELEGRAM_OK, telegramReceiver } from "./telegramReceiver.js"

// A burst of 100 incidents opened at once, with one channel of every type (email through a real
// SMTP server, Slack, Teams, PagerDuty, Opsgenie, Telegram, ntfy, a Discord chat webhook and a
// signed webhook): every receiver gets every incident, nothing dropped, and no receiver sees its
// provider's pace broken. The pace runs on the service's Clock, driven here by TestClock: each
// receiver stamps what it accepts with the Clock's time, and the stamps are checked against the
// channel's configured limits (requests per aligned minute, least spacing between two).

/** The service's Clock (the test's TestClock, once the test runs): what the receivers stamp their requests with. */
let clockNow: () => number = () => Number.NaN
const smtp = await startSmtp(() => clockNow())
afterAll(smtp.close)

const TOKEN = "123456789:AAEsecretBotTokenValue_0123456789"
const SECRET = "burst-signing-secret-0123456789abcdef"

/** Accepted requests' Clock times, per receiver. */
const stamps: Record<string, Array<number>> = {}
const stamped = <A>(name: string, answer: A) => () => {
  ;(stamps[name] ??= []).push(clockNow())
  return answer
}

const created = (r: { status: number; text: string; body: any }) => {
  expect(r.status, r.text).toBe(201)
  return r.body as { id: string }
}

/** At most `perMinute` in any minute of the Clock (the limiter's windows), and `spacingMs` between two. */
const expectPace = (name: string, times: ReadonlyArray<number>, perMinute: number, spacingMs: number) => {
  const perWindow = new Map<number, number>()
  for (const t of times) perWindow.set(Math.floor(t / 60_000), (perWindow.get(Math.floor(t / 60_000)) ?? 0) + 1)
  expect(Math.max(...perWindow.values()), `${name}: requests in one minute`).toBeLessThanOrEqual(perMinute)
  for (let i = 1; i < times.length; i++) expect(times[i]! - times[i - 1]!, `${name}: spacing`).toBeGreaterThanOrEqual(spacingMs)
}

layer(
  TestServer({ allowPrivateTargets: true, publicUrl: PUBLIC_URL, smtpUrl: Option.some(Redacted.make(smtp.url)), smtpFrom: "jobmon <alerts@jobmon.example>" }),
  { timeout: 120_000 }
)("a burst of 100 incidents", (it) => {
  it.effect("reaches a channel of every type, nothing dropped, each provider's pace kept", () =>
    Effect.scoped(Effect.gen(function*() {
      const clock = yield* Effect.clock
      clockNow = () => clock.unsafeCurrentTimeMillis()
      const slack = yield* slackReceiver(stamped("slack", 200))
      const teams = yield* teamsReceiver(stamped("teams", 202))
      const pd = yield* pagerDutyReceiver(stamped("pagerduty", { status: 202, body: "{\"status\":\"success\"}" }))
      const og = yield* opsgenieReceiver("g3n1e", stamped("opsgenie", { status: 202, body: "{\"result\":\"Request will be processed\"}" }))
      const tg = yield* telegramReceiver(TOKEN, stamped("telegram", TELEGRAM_OK))
      const ntfy = yield* ntfyReceiver(stamped("ntfy", 200))
      const discord = yield* receiver(stamped("discord", 204))
      const hook = yield* receiver(stamped("webhook", 200))

      created(yield* call("POST", "/api/alerts/channels", { body: { type: "email", config: { to: ["oncall@example.com"] } } }))
      created(yield* call("POST", "/api/alerts/channels", { body: { type: "slack", config: { url: slack.url } } }))
      created(yield* call("POST", "/api/alerts/channels", { body: { type: "teams", config: { url: teams.url } } }))
      created(yield* call("POST", "/api/alerts/channels", { body: { type: "pagerduty", config: { routingKey: "k", baseUrl: pd.base } } }))
      created(yield* call("POST", "/api/alerts/channels", { body: { type: "opsgenie", config: { apiKey: "g3n1e", baseUrl: og.base } } }))
      created(yield* call("POST", "/api/alerts/channels", { body: { type: "telegram", config: { botToken: TOKEN, chatId: -100123, baseUrl: tg.base } } }))
      created(yield* call("POST", "/api/alerts/channels", { body: { type: "ntfy", config: { server: ntfy.url.replace(/\/hook$/, ""), topic: "burst" } } }))
      created(yield* call("POST", "/api/alerts/chat/webhooks", { body: { url: discord.url, name: "burst-discord" } }))
      created(yield* call("POST", "/api/webhooks", { body: { url: hook.url, events: ["incident.opened"], secret: SECRET } }))

      const monitors = yield* Effect.forEach(Array.from({ length: 100 }, (_, i) => i), (i) => createMonitor({ name: `burst ${i}` }), { concurrency: 8 })
      const expected = monitors.map((m) => m.name as string).sort()
      yield* Effect.forEach(monitors, (m) => raise(m.id), { discard: true })

      const incidentsAt = {
        email: () => smtp.mails.map((m) => /^\[jobmon\] FAIL: (burst \d+)$/.exec(m.mail.subject ?? "")?.[1]),
        slack: () => slack.received.flatMap((r) => r.body.blocks.filter((b: any) => b.type === "header").map((b: any) => /FAIL: (burst \d+)$/.exec(b.text.text)?.[1])),
        teams: () => teams.received.map((r) => /^FAIL: (burst \d+)$/.exec(r.body.summary)?.[1]),
        pagerduty: () => pd.received.map((r) => /^FAIL: (burst \d+)$/.exec(r.body.payload.summary)?.[1]),
        opsgenie: () => og.received.map((r) => /^FAIL: (burst \d+)$/.exec(r.body.message)?.[1]),
        telegram: () => tg.received.flatMap((r) => [...(r.body.text as string).matchAll(/<b>FAIL: (burst \d+)<\/b>/g)].map((m) => m[1])),
        ntfy: () => ntfy.received.map((r) => /^FAIL: (burst \d+)$/.exec(r.body.title)?.[1]),
        discord: () => discord.received.flatMap((r) => r.body.embeds.map((e: any) => /^FAIL: (burst \d+)$/.exec(e.title)?.[1])),
        webhook: () => hook.received.map((r) => r.body.data.incident.monitor.name)
      }
      const done = () => Object.values(incidentsAt).every((got) => got().length >= 100)
      yield* flush
      // Steps shorter than a second while the one-a-second channels work through the burst (a pass
      // that sent each time would show), longer ones while email and ntfy wait for their minutes.
      for (let i = 0; i < 400 && !done(); i++) {
        yield* TestClock.adjust(i < 60 ? "700 millis" : "3 seconds")
        yield* flush
      }

      // Every incident once at every channel: nothing dropped, nothing doubled, nothing refused.
      for (const [name, got] of Object.entries(incidentsAt)) expect(got().sort(), name).toEqual(expected)
      for (const r of [slack, teams, pd, og, tg, ntfy]) expect(r.refused).toEqual([])
      // The signed webhook: each envelope signed with the webhook's secret over its exact bytes.
      for (const r of hook.received) {
        expect(r.headers["x-service-signature"]).toBe(createHmac("sha256", SECRET).update(r.raw).digest("hex"))
      }
      // Discord's own limits on a message: at most 10 embeds.
      for (const r of discord.received) expect(r.body.embeds.length).toBeLessThanOrEqual(10)

      // Each provider's pace, as its receiver saw it on the Clock.
      expectPace("email", smtp.mails.map((m) => m.at), EMAIL_PER_MINUTE, 0)
      expectPace("slack", stamps.slack!, SLACK_PER_MINUTE, SLACK_SPACING_MS)
      expectPace("teams", stamps.teams!, TEAMS_PER_MINUTE, TEAMS_SPACING_MS)
      expectPace("pagerduty", stamps.pagerduty!, PAGERDUTY_PER_MINUTE, 0)
      expectPace("opsgenie", stamps.opsgenie!, OPSGENIE_PER_MINUTE, 0)
      expectPace("telegram", stamps.telegram!, TELEGRAM_PER_MINUTE, TELEGRAM_SPACING_MS)
      expectPace("ntfy", stamps.ntfy!, NTFY_PER_MINUTE, NTFY_SPACING_MS)
      expectPace("discord", stamps.discord!, CHAT_RATE_LIMIT_PER_MINUTE, 0)
      expectPace("webhook", stamps.webhook!, RATE_LIMIT_PER_MINUTE, 0)
      // The slowest paces really spread the burst: 100 mails at 30 a minute span 4 minutes, 100 ntfy messages at 12 a minute 9.
      expect(Math.max(...smtp.mails.map((m) => m.at)) - Math.min(...smtp.mails.map((m) => m.at))).toBeGreaterThanOrEqual(3 * 60_000)
      expect(stamps.ntfy!.at(-1)! - stamps.ntfy![0]!).toBeGreaterThanOrEqual(8 * 60_000)
      // Packing: Slack, Telegram and Discord carried the burst in fewer requests than incidents.
      expect(stamps.slack!.length).toBeLessThan(100)
      expect(stamps.telegram!.length).toBeLessThan(100)
      expect(stamps.discord!.length).toBeLessThan(100)
    })), { timeout: 180_000 })
})
