import { afterAll, expect, layer } from "@effect/vitest"
import { Clock, Effect, Option, Redacted, TestClock } from "effect"
import { Events } from "../../src/Events/Events.js"
import { call, createMonitor, TestServer } from "../support/fixture.js"
import { defaultOrg } from "../Incidents/support.js"
import { createWindow, settle } from "../Maintenance/support.js"
import { ntfyReceiver } from "./ntfyReceiver.js"
import { opsgenieReceiver, pagerDutyReceiver } from "./onCallReceivers.js"
import { flush, PUBLIC_URL } from "./alertFixtures.js"
import { slackReceiver } from "./slackReceiver.js"
import { startSmtp } from "./smtpReceiver.js"
import { teamsReceiver } from "./teamsReceiver.js"
import { telegramReceiver } from "./telegramReceiver.js"

// Maintenance notices (maintenance.upcoming, .started, .ended; docs/alerts.md#maintenance-notices) reach the
// alert channels whose rules take the window's monitors (monitorIds, tags) and the notice (events),
// each in its provider's documented format, checked by the local receivers.

const smtp = await startSmtp()
afterAll(smtp.close)

const TOKEN = "123456789:AAEsecretBotTokenValue_0123456789"
const WINDOW_ID = "00000000-0000-4000-8000-0000000000aa"

const channel = (body: Record<string, unknown>) =>
  Effect.gen(function*() {
    const r = yield* call("POST", "/api/alerts/channels", { body })
    expect(r.status, r.text).toBe(201)
    return r.body as { id: string }
  })

layer(
  TestServer({ allowPrivateTargets: true, publicUrl: PUBLIC_URL, smtpUrl: Option.some(Redacted.make(smtp.url)), smtpFrom: "jobmon <alerts@jobmon.example>" }),
  { timeout: 120_000 }
)("maintenance notices to alert channels", (it) => {
  it.effect("started and ended reach every channel whose rules take the window's monitors, in each provider's format", () =>
    Effect.scoped(Effect.gen(function*() {
      const db = yield* createMonitor({ name: "db backup", tags: ["db"] })
      const web = yield* createMonitor({ name: "web deploy", tags: ["web"] })
      const slack = yield* slackReceiver([200])
      const teams = yield* teamsReceiver([202])
      const pd = yield* pagerDutyReceiver()
      const pdOther = yield* pagerDutyReceiver()
      const og = yield* opsgenieReceiver("g3n1e")
      const ogIncidentsOnly = yield* opsgenieReceiver("g3n1e")
      const tg = yield* telegramReceiver(TOKEN)
      const ntfy = yield* ntfyReceiver([200])
      // every one: default rules, or rules that take the db monitor
      yield* channel({ type: "slack", config: { url: slack.url } })
      yield* channel({ type: "teams", config: { url: teams.url }, rules: { tags: ["db"] } })
      yield* channel({ type: "pagerduty", config: { routingKey: "k", baseUrl: pd.base }, rules: { monitorIds: [db.id], severity: ["LOW"], types: ["LATE"] } })
      yield* channel({ type: "opsgenie", config: { apiKey: "g3n1e", baseUrl: og.base } })
      yield* channel({ type: "telegram", config: { botToken: TOKEN, chatId: -100123, baseUrl: tg.base }, rules: { tags: ["web", "db"] } })
      yield* channel({ type: "ntfy", config: { server: ntfy.url.replace(/\/hook$/, ""), topic: "maint" }, rules: { events: ["maintenance.started"] } })
      yield* channel({ type: "email", config: { to: ["oncall@example.com"] } })
      // none: another monitor, another tag, incident events only
      yield* channel({ type: "pagerduty", config: { routingKey: "k", baseUrl: pdOther.base }, rules: { monitorIds: [web.id] } })
      yield* channel({ type: "teams", config: { url: `${teams.url}?other=1` }, rules: { tags: ["web"] } })
      yield* channel({ type: "opsgenie", config: { apiKey: "g3n1e", baseUrl: ogIncidentsOnly.base }, rules: { events: ["incident.opened"] } })

      const { orgId } = yield* defaultOrg
      const events = yield* Events
      const now = yield* TestClock.currentTimeMillis
      const startsAt = new Date(now).toISOString()
      const endsAt = new Date(now + 3_600_000).toISOString()
      const window = { id: WINDOW_ID, name: "db upgrade", monitorIds: [db.id], reason: "PostgreSQL 17", timezone: "UTC" }
      const notice = (type: "maintenance.started" | "maintenance.ended", at: number) =>
        events.record({
          orgId,
          type,
          data: {
            window,
            startsAt,
            endsAt,
            endedAt: type === "maintenance.ended" ? new Date(at).toISOString() : null,
            endReason: type === "maintenance.ended" ? "completed" : null,
            beforeStartSeconds: null,
            channels: []
          },
          monitorIds: [db.id],
          at
        })
      yield* notice("maintenance.started", now)
      yield* flush
      yield* TestClock.adjust("1 hour")
      yield* notice("maintenance.ended", now + 3_600_000)
      yield* flush
      for (let i = 0; i < 5; i++) {
        yield* TestClock.adjust("2 seconds")
        yield* flush
      }

      // Slack: Block Kit, one message per notice
      expect(slack.refused).toEqual([])
      expect(slack.received.map((r) => r.body.text)).toEqual(["Maintenance started: db upgrade", "Maintenance ended: db upgrade"])
      const blocks = slack.received[0]!.body.blocks
      expect(blocks[0].text.text).toBe(":hammer_and_wrench: Maintenance started: db upgrade")
      expect(JSON.stringify(blocks)).toContain("*Monitors*\\ndb backup")
      expect(JSON.stringify(blocks)).toContain("PostgreSQL 17")
      expect(blocks.find((b: any) => b.type === "actions").elements[0]).toMatchObject({ text: { text: "View maintenance" }, url: `${PUBLIC_URL}/maintenance` })

      // Teams: an Adaptive Card, only the db-tagged channel
      expect(teams.refused).toEqual([])
      expect(teams.received.map((r) => r.url)).toEqual(["/hook", "/hook"])
      expect(teams.received.map((r) => r.body.summary)).toEqual(["Maintenance started: db upgrade", "Maintenance ended: db upgrade"])
      const card = teams.received[0]!.body.attachments[0].content
      expect(card.body[0].inlines[0].text).toBe("🛠️ Maintenance started: db upgrade")
      expect(card.body.find((b: any) => b.type === "FactSet").facts).toContainEqual({ title: "Monitors", value: "db backup" })

      // PagerDuty: change events (they notify nobody), to the channel of the db monitor only, whatever its incident rules
      expect(pd.refused).toEqual([])
      expect(pd.received.map((r) => r.url)).toEqual(["/v2/change/enqueue", "/v2/change/enqueue"])
      expect(pd.received[0]!.body).toMatchObject({
        routing_key: "k",
        payload: { summary: "Maintenance started: db upgrade", source: "jobmon.example", timestamp: startsAt, custom_details: { Window: "db upgrade", Monitors: "db backup", Reason: "PostgreSQL 17" } },
        links: [{ href: `${PUBLIC_URL}/maintenance`, text: "View maintenance" }]
      })
      expect(pd.received[0]!.body.event_action).toBeUndefined()
      expect(pdOther.received).toHaveLength(0)

      // Opsgenie: a P5 alert for the period, closed when it ends
      expect(og.refused).toEqual([])
      const alias = `jobmon-maintenance-${WINDOW_ID}-${startsAt}`
      expect(og.received.map((r) => r.url)).toEqual(["/v2/alerts", `/v2/alerts/${encodeURIComponent(alias)}/close?identifierType=alias`])
      expect(og.received[0]!.body).toMatchObject({ message: "Maintenance started: db upgrade", alias, priority: "P5", tags: ["jobmon", "maintenance"] })
      expect(og.received[1]!.body.note).toContain("Maintenance ended: db upgrade")
      expect(ogIncidentsOnly.received).toHaveLength(0)

      // Telegram: HTML text
      expect(tg.refused).toEqual([])
      expect(tg.received.map((r) => r.body.text.split("\n")[0])).toEqual([
        "\u{1F6E0}\uFE0F <b>Maintenance started: db upgrade</b>",
        "\u{1F6E0}\uFE0F <b>Maintenance ended: db upgrade</b>"
      ])
      expect(tg.received[0]!.body.text).toContain("<b>Monitors:</b> db backup")

      // ntfy: only maintenance.started, as its events say
      expect(ntfy.refused).toEqual([])
      expect(ntfy.received.map((r) => r.body)).toEqual([expect.objectContaining({
        topic: "maint",
        title: "Maintenance started: db upgrade",
        priority: 3,
        tags: ["hammer_and_wrench", "maintenance"],
        click: `${PUBLIC_URL}/maintenance`
      })])

      // Email: a mail per notice through the SMTP server
      const subjects = smtp.mails.map((m) => m.mail.subject)
      expect(subjects).toEqual(["[jobmon] Maintenance started: db upgrade", "[jobmon] Maintenance ended: db upgrade"])
      expect(smtp.mails[1]!.mail.text).toContain("Ended:")
      expect(smtp.mails[1]!.mail.text).toContain("(as planned)")
    })))

  it.effect("a window made through the API: its upcoming, started and ended notices reach the channel of its monitors' tag, in order", () =>
    Effect.scoped(Effect.gen(function*() {
      const monitor = yield* createMonitor({ name: "orders db", tags: ["orders"] })
      yield* createMonitor({ name: "cdn purge", tags: ["cdn"] })
      const slack = yield* slackReceiver([200])
      const quiet = yield* slackReceiver([200])
      yield* channel({ type: "slack", config: { url: slack.url }, rules: { tags: ["orders"] } })
      yield* channel({ type: "slack", config: { url: quiet.url }, rules: { tags: ["cdn"] } })
      const t0 = yield* Clock.currentTimeMillis
      const MIN = 60_000
      yield* createWindow({
        name: "orders failover",
        monitorIds: [monitor.id],
        start: new Date(t0 + 10 * MIN).toISOString(),
        end: new Date(t0 + 40 * MIN).toISOString(),
        reason: "switch to the replica",
        notifications: { beforeStart: 300, onStart: true, onEnd: true, channels: [] }
      })
      // Let the scheduler record each notice, then the delivery worker send it (one a second at most).
      const step = (minutes: number) =>
        Effect.gen(function*() {
          yield* TestClock.adjust(`${minutes} minutes`)
          yield* settle
          for (let i = 0; i < 3; i++) {
            yield* flush
            yield* TestClock.adjust("1 second")
          }
        })
      yield* step(5)
      expect(slack.received.map((r) => r.body.text)).toEqual(["Maintenance upcoming: orders failover"])
      yield* step(5)
      yield* step(30)
      expect(slack.refused).toEqual([])
      expect(slack.received.map((r) => r.body.text)).toEqual([
        "Maintenance upcoming: orders failover",
        "Maintenance started: orders failover",
        "Maintenance ended: orders failover"
      ])
      const ended = JSON.stringify(slack.received[2]!.body.blocks)
      expect(ended).toContain("*Monitors*\\norders db")
      expect(ended).toContain("(as planned)")
      expect(ended).toContain("switch to the replica")
      expect(quiet.received).toHaveLength(0)
    })))
})
