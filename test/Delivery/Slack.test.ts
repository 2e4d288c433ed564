import { describe, expect, it, layer } from "@effect/vitest"
import { SqlClient } from "@effect/sql"
import { Effect, TestClock } from "effect"
import type { Alert } from "../../src/Delivery/Alert.js"
import { type IncidentFacts, type StoredMessage } from "../../src/Delivery/Channel.js"
import {
  mergeSlackMessages,
  packSlackMessages,
  SLACK_LIMITS,
  type SlackMessage,
  slackMessageOf,
  slackVerdict
} from "../../src/Delivery/SlackChannel.js"
import { call, createMonitor, TestServer } from "../support/fixture.js"
import { raise } from "../Incidents/support.js"
import { slackProblems, slackReceiver } from "./slackReceiver.js"
import { alertFor, answered, flush, incidentWith, PUBLIC_URL } from "./alertFixtures.js"

// Slack through an incoming webhook (docs/alerts.md#slack): Block Kit within Slack's limits, the
// answers Slack gives, its pace of about one message a second per webhook.


const incident = incidentWith({ output: "starting\n<dump> & done\ndisk full" })


const alert = (type: string, data: Record<string, unknown> = {}, facts: IncidentFacts = incident): Alert => alertFor(type, data, facts)


describe("Slack message", () => {
  it("an opened incident: header, the facts as fields, the output's end in a code block, buttons, the time", () => {
    const message = slackMessageOf(alert("incident.opened"), "<!here>")
    expect(slackProblems(message)).toEqual([])
    expect(message.text).toBe("FAIL: nightly backup")
    const [mention, header, fields, output, actions, context] = message.blocks as ReadonlyArray<any>
    expect(mention.text.text).toBe("<!here>")
    expect(header).toEqual({ type: "header", text: { type: "plain_text", text: ":red_circle: FAIL: nightly backup", emoji: true } })
    expect(fields.fields.map((f: any) => f.text)).toEqual([
      "*Monitor*\nnightly backup",
      "*Status*\nOPEN",
      "*Severity*\nHIGH",
      "*Exit code*\n2",
      "*Duration*\n5.2 s",
      "*Expected*\n4.1 s"
    ])
    // mrkdwn's control characters escaped, in the code block too
    expect(output.text.text).toBe("*Output*\n```\nstarting\n&lt;dump&gt; &amp; done\ndisk full\n```")
    expect(actions.elements.map((e: any) => [e.text.text, e.url])).toEqual([
      ["View incident", `${PUBLIC_URL}/incidents/${incident.id}`],
      ["View monitor", `${PUBLIC_URL}/monitors/${incident.monitorId}`]
    ])
    expect(context.elements[0].text).toBe("jobmon · 2026-01-31T03:00:01.000Z")
  })

  it("whatever the name and output, a message keeps within Slack's limits and the output keeps its end", () => {
    const huge: IncidentFacts = {
      ...incident,
      monitorName: "n".repeat(200),
      details: { ...incident.details, output: "<&>".repeat(40_000) + "THE END" }
    }
    const message = slackMessageOf(alert("incident.opened", {}, huge), undefined)
    expect(slackProblems(message)).toEqual([])
    const code = (message.blocks.find((b: any) => b.text?.text?.startsWith("*Output*")) as any).text.text as string
    expect(code.length).toBeLessThanOrEqual(SLACK_LIMITS.sectionText)
    expect(code.endsWith("THE END\n```")).toBe(true)
  })

  it("acknowledged, resolved (how long it lasted) and reminders say so", () => {
    const ack = slackMessageOf(alert("incident.acknowledged", { acknowledgedBy: { name: "Ada" }, note: "on it" }), undefined)
    expect(ack.text).toBe("ACKNOWLEDGED: nightly backup (FAIL, by Ada)")
    expect(JSON.stringify(ack.blocks)).toContain("*Note*\\non it")
    const resolved = slackMessageOf(alert("incident.resolved", { incident: { id: incident.id, mttrSeconds: 3900 }, resolvedBy: { name: "system" } }), undefined)
    expect(resolved.text).toBe("RESOLVED: nightly backup (FAIL, lasted 1h 5m)")
    expect(JSON.stringify(resolved.blocks)).toContain("*Lasted*\\n1h 5m")
    const reminder = slackMessageOf(alert("incident.reminder", { reminder: { n: 2, max: 3 } }), undefined)
    expect(reminder.text).toBe("REMINDER 2/3: FAIL: nightly backup (still open)")
    for (const m of [ack, resolved, reminder]) expect(slackProblems(m)).toEqual([])
  })

  it("a burst packs into messages of at most 50 blocks, each alert once, in order, the mention once", () => {
    const bodies = Array.from({ length: 30 }, (_, i) =>
      JSON.stringify(slackMessageOf(alert("incident.opened", {}, { ...incident, monitorName: `job ${i}` }), "<!channel>")))
    const messages: Array<StoredMessage> = bodies.map((body, i) => ({ deliveryId: `d${i}`, eventType: "incident.opened", body }))
    const groups = packSlackMessages(messages)
    expect(groups.flat()).toEqual(messages)
    expect(groups.length).toBeGreaterThan(1)
    for (const group of groups) {
      const merged = mergeSlackMessages(group.map((m) => JSON.parse(m.body) as SlackMessage))
      expect(slackProblems(merged)).toEqual([])
      expect(merged.blocks.filter((b: any) => b.block_id === "mention")).toHaveLength(1)
      expect(merged.blocks.filter((b) => b.type === "header")).toHaveLength(group.length)
    }
  })

  it("Slack's answers", () => {
    expect(slackVerdict(answered(200, "ok"))._tag).toBe("Delivered")
    expect(slackVerdict(answered(400, "invalid_payload"))).toEqual({ _tag: "Rejected", detail: "HTTP 400: invalid_payload" })
    expect(slackVerdict(answered(403, "action_prohibited"))._tag).toBe("Rejected")
    for (const [status, code] of [[403, "invalid_token"], [404, "no_service"], [404, "channel_not_found"], [410, "channel_is_archived"], [401, ""]] as const) {
      const verdict = slackVerdict(answered(status, code))
      expect(verdict._tag, `${status} ${code}`).toBe("Invalid")
      expect((verdict as any).reason).toContain(`${status}`)
    }
    expect(slackVerdict(answered(429, "rate_limited", 7))).toMatchObject({ _tag: "RetryLater", retryAfterMs: 7000 })
    expect(slackVerdict(answered(500, "rollup_error"))).toMatchObject({ _tag: "RetryLater", retryAfterMs: undefined })
    expect(slackVerdict({ outcome: { _tag: "NoAnswer", error: "timeout" }, responseTimeMs: 5000 })._tag).toBe("RetryLater")
    expect(slackVerdict({ outcome: { _tag: "Refused", error: "refused: not public" }, responseTimeMs: 0 })._tag).toBe("Rejected")
  })
})

const slackChannel = (url: string, extra: Record<string, unknown> = {}) =>
  Effect.gen(function*() {
    const r = yield* call("POST", "/api/alerts/channels", { body: { type: "slack", name: "slack", config: { url }, ...extra } })
    expect(r.status, r.text).toBe(201)
    return r.body as { id: string }
  })

const attemptsOf = (channelId: string) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    return yield* sql<{ delivery_id: string; at: Date; status_code: number | null }>`
      select a.delivery_id, a.at, a.status_code from webhook_delivery_attempts a
      join webhook_deliveries d on d.id = a.delivery_id where d.channel_id = ${channelId} order by a.at, a.id`
  }).pipe(Effect.orDie)

// The whole service runs on the TestClock: waits move only when the test moves the clock.
layer(TestServer({ allowPrivateTargets: true, publicUrl: PUBLIC_URL }), { timeout: 120_000 })("Slack channels", (it) => {
  it.effect("an incident opened, acknowledged and resolved: three messages, each as Slack takes them", () =>
    Effect.scoped(Effect.gen(function*() {
      const slack = yield* slackReceiver([200])
      const monitor = yield* createMonitor({ name: "db backup" })
      yield* slackChannel(slack.url, { config: { url: slack.url, mention: "<!here>" } })
      const { incident: opened } = yield* raise(monitor.id, { details: { exitCode: 2, durationMs: 5230, output: "x".repeat(9000) + "disk full" } })
      yield* flush
      expect(slack.received.map((r) => r.body.text)).toEqual(["FAIL: db backup"])
      const blocks = slack.received[0]!.body.blocks
      expect(blocks[0].text.text).toBe("<!here>")
      expect(JSON.stringify(blocks)).toContain(`${PUBLIC_URL}/incidents/${opened.id}`)
      expect(slack.received[0]!.headers["content-type"]).toContain("application/json")
      yield* TestClock.adjust("1 second")
      expect((yield* call("POST", `/api/incidents/${opened.id}/acknowledge`, { body: { note: "looking" } })).status).toBe(200)
      yield* flush
      yield* TestClock.adjust("1 second")
      expect((yield* call("POST", `/api/incidents/${opened.id}/resolve`)).status).toBe(200)
      yield* flush
      expect(slack.received.map((r) => r.body.text)).toEqual([
        "FAIL: db backup",
        expect.stringMatching(/^ACKNOWLEDGED: db backup \(FAIL, by /),
        expect.stringMatching(/^RESOLVED: db backup \(FAIL, lasted /)
      ])
      expect(slack.refused).toEqual([])
    })))

  it.effect("429 with Retry-After waits that long; 5xx retries after the backoff; nothing is lost", () =>
    Effect.scoped(Effect.gen(function*() {
      const slack = yield* slackReceiver([{ status: 429, headers: { "retry-after": "3" }, body: "rate_limited" }, { status: 503, body: "service_unavailable" }, 200])
      const monitor = yield* createMonitor()
      const channel = yield* slackChannel(slack.url)
      yield* raise(monitor.id)
      yield* flush
      expect(slack.received).toHaveLength(1)
      yield* TestClock.adjust("2999 millis")
      yield* flush
      expect(slack.received).toHaveLength(1)
      yield* TestClock.adjust("1 millis")
      yield* flush
      expect(slack.received).toHaveLength(2)
      // after the 503 (second attempt): 2 s
      yield* TestClock.adjust("1999 millis")
      yield* flush
      expect(slack.received).toHaveLength(2)
      yield* TestClock.adjust("1 millis")
      yield* flush
      expect(slack.received).toHaveLength(3)
      const [d] = (yield* call("GET", `/api/alerts/channels/${channel.id}/deliveries`)).body.deliveries
      expect(d).toMatchObject({ status: "succeeded", attempts: 3, lastStatusCode: 200 })
      expect((yield* attemptsOf(channel.id)).map((a) => a.status_code)).toEqual([429, 503, 200])
    })))

  it.effect("a slow Slack: no answer within 5 s is retried; a slow but timely answer is delivered", () =>
    Effect.scoped(Effect.gen(function*() {
      const slack = yield* slackReceiver(["hang", { status: 200, delayMs: 1500 }])
      const monitor = yield* createMonitor()
      const channel = yield* slackChannel(slack.url)
      yield* raise(monitor.id)
      yield* flush
      const [first] = (yield* call("GET", `/api/alerts/channels/${channel.id}/deliveries`)).body.deliveries
      expect(first).toMatchObject({ status: "pending", attempts: 1, lastError: expect.stringMatching(/^timeout/) })
      yield* TestClock.adjust("1 second")
      yield* flush
      const [second] = (yield* call("GET", `/api/alerts/channels/${channel.id}/deliveries`)).body.deliveries
      expect(second).toMatchObject({ status: "succeeded", attempts: 2 })
      expect(second.lastResponseTimeMs).toBeGreaterThanOrEqual(1400)
    })))

  it.effect("a burst of 100 incidents: every one reaches Slack, packed, one request a second at most, within Slack's limits", () =>
    Effect.scoped(Effect.gen(function*() {
      const slack = yield* slackReceiver([200])
      const monitors = yield* Effect.forEach(Array.from({ length: 100 }, (_, i) => i), (i) => createMonitor({ name: `burst ${i}` }), {
        concurrency: 8
      })
      const channel = yield* slackChannel(slack.url)
      yield* Effect.forEach(monitors, (m) => raise(m.id), { discard: true })
      yield* flush
      for (let i = 0; i < 60 && slack.received.reduce((n, r) => n + r.body.blocks.filter((b: any) => b.type === "header").length, 0) < 100; i++) {
        yield* TestClock.adjust("1 second")
        yield* flush
      }
      const headers = slack.received.flatMap((r) => r.body.blocks.filter((b: any) => b.type === "header").map((b: any) => b.text.text))
      expect([...headers].sort()).toEqual(monitors.map((m) => `:red_circle: FAIL: ${m.name}`).sort())
      expect(slack.refused).toEqual([])
      for (const r of slack.received) expect(r.body.blocks.length).toBeLessThanOrEqual(50)
      const times = [...new Set((yield* attemptsOf(channel.id)).map((a) => a.at.getTime()))]
      expect(times.length).toBe(slack.received.length)
      for (let i = 1; i < times.length; i++) expect(times[i]! - times[i - 1]!).toBeGreaterThanOrEqual(1000)
      const rows = (yield* call("GET", `/api/alerts/channels/${channel.id}/deliveries?limit=500`)).body.deliveries
      expect(rows).toHaveLength(100)
      expect(rows.every((d: any) => d.status === "succeeded")).toBe(true)
    })))
})
