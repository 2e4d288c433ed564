import { describe, expect, it, layer } from "@effect/vitest"
import { SqlClient } from "@effect/sql"
import { Effect, TestClock } from "effect"
import type { Alert } from "../../src/Delivery/Alert.js"
import type { IncidentFacts } from "../../src/Delivery/Channel.js"
import { teamsMessageOf, teamsVerdict } from "../../src/Delivery/TeamsChannel.js"
import { call, createMonitor, TestServer } from "../support/fixture.js"
import { raise } from "../Incidents/support.js"
import { teamsProblems, teamsReceiver } from "./teamsReceiver.js"
import { alertFor, answered, flush, incidentWith, PUBLIC_URL } from "./alertFixtures.js"

// Microsoft Teams through a Workflows webhook (docs/alerts.md#microsoft-teams): an Adaptive Card in
// the message envelope Workflows takes, valid against the card schema, the answers the trigger gives.


const incident = incidentWith({ output: "starting\n**not bold** [x](http://evil)\ndisk full" })


const alert = (type: string, data: Record<string, unknown> = {}, facts: IncidentFacts = incident): Alert => alertFor(type, data, facts)


const cardOf = (message: ReturnType<typeof teamsMessageOf>) => message.attachments[0]!.content as any
const textsOf = (card: any): Array<string> =>
  card.body.flatMap((e: any) => e.type === "TextBlock" ? [e.text] : e.type === "RichTextBlock" ? e.inlines.map((r: any) => r.text) : [])

describe("Teams message", () => {
  it("an opened incident: the envelope Workflows takes, a 1.4 card with the title, the facts, the output, links to the incident", () => {
    const message = teamsMessageOf(alert("incident.opened"))
    expect(teamsProblems(message)).toEqual([])
    expect(message.type).toBe("message")
    expect(message.attachments).toHaveLength(1)
    expect(message.attachments[0]!.contentType).toBe("application/vnd.microsoft.card.adaptive")
    const card = cardOf(message)
    expect(card).toMatchObject({ type: "AdaptiveCard", version: "1.4", fallbackText: "FAIL: nightly backup" })
    expect(card.body[0]).toMatchObject({ type: "RichTextBlock", inlines: [{ type: "TextRun", text: "🔴 FAIL: nightly backup", color: "Attention" }] })
    expect(card.body.find((e: any) => e.type === "FactSet").facts).toEqual([
      { title: "Monitor", value: "nightly backup" },
      { title: "Status", value: "OPEN" },
      { title: "Severity", value: "HIGH" },
      { title: "Exit code", value: "2" },
      { title: "Duration", value: "5.2 s" },
      { title: "Expected", value: "4.1 s" }
    ])
    // the output as a monospace TextRun: never read as markdown
    const label = card.body.findIndex((e: any) => e.type === "TextBlock" && e.text === "Output (the end)")
    expect(card.body[label + 1].inlines[0]).toEqual({ type: "TextRun", text: incident.details["output"], fontType: "Monospace" })
    expect(card.actions).toEqual([
      { type: "Action.OpenUrl", title: "View incident", url: `${PUBLIC_URL}/incidents/${incident.id}` },
      { type: "Action.OpenUrl", title: "View monitor", url: `${PUBLIC_URL}/monitors/${incident.monitorId}` }
    ])
    expect(textsOf(card)).toContain("jobmon · 2026-01-31T03:00:01.000Z")
  })

  it("whatever the name and output, a card stays under Teams' 28 KB and the output keeps its end", () => {
    const huge: IncidentFacts = {
      ...incident,
      monitorName: "n".repeat(500),
      details: { ...incident.details, output: "\u0001💥\"".repeat(40_000) + "THE END" }
    }
    const message = teamsMessageOf(alert("incident.opened", {}, huge))
    expect(teamsProblems(message)).toEqual([])
    expect(Buffer.byteLength(JSON.stringify(message))).toBeLessThanOrEqual(28 * 1024)
    expect(textsOf(cardOf(message)).some((t) => t.endsWith("THE END"))).toBe(true)
  })

  it("acknowledged, resolved (how long it lasted), reminders and a test say so", () => {
    const ack = teamsMessageOf(alert("incident.acknowledged", { acknowledgedBy: { name: "Ada" }, note: "on it" }))
    expect(ack.summary).toBe("ACKNOWLEDGED: nightly backup (FAIL, by Ada)")
    expect(textsOf(cardOf(ack))).toContain("on it")
    const resolved = teamsMessageOf(alert("incident.resolved", { incident: { id: incident.id, mttrSeconds: 3900 }, resolvedBy: { name: "system" } }))
    expect(resolved.summary).toBe("RESOLVED: nightly backup (FAIL, lasted 1h 5m)")
    expect(cardOf(resolved).body[0].inlines[0].color).toBe("Good")
    expect(cardOf(resolved).body.find((e: any) => e.type === "FactSet").facts).toContainEqual({ title: "Lasted", value: "1h 5m" })
    const reminder = teamsMessageOf(alert("incident.reminder", { reminder: { n: 2, max: 3 } }))
    expect(reminder.summary).toBe("REMINDER 2/3: FAIL: nightly backup (still open)")
    for (const m of [ack, resolved, reminder]) expect(teamsProblems(m)).toEqual([])
  })

  it("the trigger's answers", () => {
    expect(teamsVerdict(answered(202))._tag).toBe("Delivered")
    expect(teamsVerdict(answered(400, "InvalidRequestContent"))).toEqual({ _tag: "Rejected", detail: "HTTP 400: InvalidRequestContent" })
    for (const status of [401, 403, 404, 410]) {
      const verdict = teamsVerdict(answered(status, "WorkflowNotFound"))
      expect(verdict._tag, `${status}`).toBe("Invalid")
      expect((verdict as any).reason).toContain(`Teams answered ${status}`)
    }
    expect(teamsVerdict(answered(429, "throttled", 7))).toMatchObject({ _tag: "RetryLater", retryAfterMs: 7000 })
    expect(teamsVerdict(answered(502))).toMatchObject({ _tag: "RetryLater", retryAfterMs: undefined })
    expect(teamsVerdict({ outcome: { _tag: "NoAnswer", error: "timeout" }, responseTimeMs: 5000 })._tag).toBe("RetryLater")
  })
})

const teamsChannel = (url: string) =>
  Effect.gen(function*() {
    const r = yield* call("POST", "/api/alerts/channels", { body: { type: "teams", config: { url } } })
    expect(r.status, r.text).toBe(201)
    return r.body as { id: string; name: string; config: { url: string } }
  })

const attemptsOf = (channelId: string) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    return yield* sql<{ at: Date; status_code: number | null }>`
      select a.at, a.status_code from webhook_delivery_attempts a
      join webhook_deliveries d on d.id = a.delivery_id where d.channel_id = ${channelId} order by a.at, a.id`
  }).pipe(Effect.orDie)

layer(TestServer({ allowPrivateTargets: true, publicUrl: PUBLIC_URL }), { timeout: 120_000 })("Teams channels", (it) => {
  it.effect("the url is masked; an incident opened, acknowledged and resolved: three cards Teams takes", () =>
    Effect.scoped(Effect.gen(function*() {
      const teams = yield* teamsReceiver([202])
      const secretUrl = `${teams.url}?api-version=2016-06-01&sp=%2Ftriggers%2Fmanual%2Frun&sv=1.0&sig=s3cr3tSig`
      const channel = yield* teamsChannel(secretUrl)
      expect(channel.name).toBe("teams")
      expect(JSON.stringify(channel)).not.toContain("s3cr3tSig")
      expect(JSON.stringify((yield* call("GET", `/api/alerts/channels/${channel.id}`)).body)).not.toContain("s3cr3tSig")
      const monitor = yield* createMonitor({ name: "db backup" })
      const { incident: opened } = yield* raise(monitor.id, { details: { exitCode: 2, output: "x".repeat(9000) + "disk full" } })
      yield* flush
      expect(teams.received).toHaveLength(1)
      expect(teams.received[0]!.url).toContain("sig=s3cr3tSig")
      expect(teams.received[0]!.headers["content-type"]).toContain("application/json")
      const card = teams.received[0]!.body.attachments[0].content
      expect(card.fallbackText).toBe("FAIL: db backup")
      expect(card.actions[0].url).toBe(`${PUBLIC_URL}/incidents/${opened.id}`)
      yield* TestClock.adjust("1 second")
      expect((yield* call("POST", `/api/incidents/${opened.id}/acknowledge`, { body: { note: "looking" } })).status).toBe(200)
      yield* flush
      yield* TestClock.adjust("1 second")
      expect((yield* call("POST", `/api/incidents/${opened.id}/resolve`)).status).toBe(200)
      yield* flush
      expect(teams.received.map((r) => r.body.attachments[0].content.fallbackText)).toEqual([
        "FAIL: db backup",
        expect.stringMatching(/^ACKNOWLEDGED: db backup \(FAIL, by /),
        expect.stringMatching(/^RESOLVED: db backup \(FAIL, lasted /)
      ])
      expect(teams.refused).toEqual([])
    })))

  it.effect("429 with Retry-After waits that long; 5xx retries; a slow answer within 5 s is delivered", () =>
    Effect.scoped(Effect.gen(function*() {
      const teams = yield* teamsReceiver([{ status: 429, headers: { "retry-after": "3" }, body: "throttled" }, { status: 502 }, {
        status: 202,
        delayMs: 1500
      }])
      const monitor = yield* createMonitor()
      const channel = yield* teamsChannel(teams.url)
      yield* raise(monitor.id)
      yield* flush
      yield* TestClock.adjust("2999 millis")
      yield* flush
      expect(teams.received).toHaveLength(1)
      yield* TestClock.adjust("1 millis")
      yield* flush
      expect(teams.received).toHaveLength(2)
      yield* TestClock.adjust("2 seconds")
      yield* flush
      const [d] = (yield* call("GET", `/api/alerts/channels/${channel.id}/deliveries`)).body.deliveries
      expect(d).toMatchObject({ status: "succeeded", attempts: 3, lastStatusCode: 202 })
      expect((yield* attemptsOf(channel.id)).map((a) => a.status_code)).toEqual([429, 502, 202])
    })))

  it.effect("a deleted workflow (404) makes the channel invalid with the reason; a PATCH makes it active again", () =>
    Effect.scoped(Effect.gen(function*() {
      const teams = yield* teamsReceiver([{ status: 404, body: JSON.stringify({ error: { code: "WorkflowNotFound" } }) }])
      const channel = yield* teamsChannel(teams.url)
      const test = yield* call("POST", `/api/alerts/channels/${channel.id}/test`)
      expect(test.status).toBe(200)
      expect(test.body).toMatchObject({ sent: false, channel: { status: "invalid" } })
      expect(test.body.answer).toContain("HTTP 404")
      expect(test.body.channel.statusReason).toMatch(/^Teams answered 404.*Workflows/)
      expect(teams.received[0]!.body.attachments[0].content.fallbackText).toBe("Test message: teams")
      const patched = yield* call("PATCH", `/api/alerts/channels/${channel.id}`, { body: { name: "ops" } })
      expect(patched.body.status).toBe("active")
    })))

  it.effect("a burst of 100 incidents: every one reaches Teams, one request a second at most, every card valid", () =>
    Effect.scoped(Effect.gen(function*() {
      const teams = yield* teamsReceiver([202])
      const monitors = yield* Effect.forEach(Array.from({ length: 100 }, (_, i) => i), (i) => createMonitor({ name: `burst ${i}` }), {
        concurrency: 8
      })
      const channel = yield* teamsChannel(teams.url)
      yield* Effect.forEach(monitors, (m) => raise(m.id), { discard: true })
      yield* flush
      for (let i = 0; i < 200 && teams.received.length < 100; i++) {
        yield* TestClock.adjust("1 second")
        yield* flush
      }
      expect(teams.received.map((r) => r.body.attachments[0].content.fallbackText).sort()).toEqual(monitors.map((m) => `FAIL: ${m.name}`).sort())
      expect(teams.refused).toEqual([])
      const times = (yield* attemptsOf(channel.id)).map((a) => a.at.getTime())
      expect(times).toHaveLength(100)
      for (let i = 1; i < times.length; i++) expect(times[i]! - times[i - 1]!).toBeGreaterThanOrEqual(1000)
    })))
})
