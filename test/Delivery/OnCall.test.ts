import { describe, expect, it, layer } from "@effect/vitest"
import { SqlClient } from "@effect/sql"
import { Effect, TestClock } from "effect"
import { type Alert, testAlertOf } from "../../src/Delivery/Alert.js"
import type { IncidentFacts } from "../../src/Delivery/Channel.js"
import { OPSGENIE_BASE_URLS, opsgenieMessageOf, opsgenieType, opsgenieUrl, opsgenieVerdict } from "../../src/Delivery/OpsgenieChannel.js"
import { enqueueUrl, PAGERDUTY_BASE_URL, pagerDutyEventOf, pagerDutyType, pagerDutyVerdict } from "../../src/Delivery/PagerDutyChannel.js"
import { call, createMonitor, TestServer } from "../support/fixture.js"
import { raise } from "../Incidents/support.js"
import { opsgenieProblems, opsgenieReceiver, pagerDutyProblems, pagerDutyReceiver } from "./onCallReceivers.js"
import type { Received } from "./receiver.js"
import { alertFor, answered, flush, incidentWith, PUBLIC_URL } from "./alertFixtures.js"

// PagerDuty (Events API v2) and Opsgenie (Alert API), docs/alerts.md#pagerduty and #opsgenie: the
// provider's incident follows ours (opened → trigger/create, acknowledged → acknowledge, resolved →
// resolve/close, keyed by the incident's id), the open always before its acknowledge and close.


const incident = incidentWith({ output: "starting\ndisk full" })

const alert = (type: string, data: Record<string, unknown> = {}, facts: IncidentFacts = incident): Alert => alertFor(type, data, facts)


/** A request as a receiver would get it, for the format checkers. */
const asReceived = (url: string, body: unknown, headers: Record<string, string> = { "content-type": "application/json" }): Received => {
  const raw = Buffer.from(JSON.stringify(body))
  return { url: new URL(url).pathname + new URL(url).search, body, raw, headers, at: 0 }
}

describe("PagerDuty events", () => {
  it("opened: a trigger keyed by the incident, severity by ours, the facts and the output's end as details, links", () => {
    const e = pagerDutyEventOf(alert("incident.opened"), PUBLIC_URL)
    expect(e).toMatchObject({
      event_action: "trigger",
      dedup_key: incident.id,
      payload: {
        summary: "FAIL: nightly backup",
        source: "jobmon.example",
        severity: "critical",
        timestamp: "2026-01-31T03:00:01.000Z",
        component: "nightly backup",
        class: "FAIL",
        group: "db",
        custom_details: { Monitor: "nightly backup", Severity: "HIGH", "Exit code": "2", Output: "starting\ndisk full" }
      },
      links: [{ href: `${PUBLIC_URL}/incidents/${incident.id}`, text: "View incident" }, { href: `${PUBLIC_URL}/monitors/${incident.monitorId}`, text: "View monitor" }]
    })
    expect(pagerDutyProblems(asReceived(enqueueUrl(PAGERDUTY_BASE_URL), { routing_key: "k", ...e }))).toEqual([])
    expect(pagerDutyEventOf(alert("incident.opened", {}, { ...incident, severity: "MEDIUM" }), PUBLIC_URL).payload!.severity).toBe("error")
    expect(pagerDutyEventOf(alert("incident.opened", {}, { ...incident, severity: "LOW" }), PUBLIC_URL).payload!.severity).toBe("warning")
  })

  it("acknowledged and resolved: acknowledge and resolve by the same dedup_key; a reminder re-triggers it", () => {
    expect(pagerDutyEventOf(alert("incident.acknowledged", { acknowledgedBy: { name: "Ada" } }), PUBLIC_URL)).toEqual({
      event_action: "acknowledge",
      dedup_key: incident.id
    })
    expect(pagerDutyEventOf(alert("incident.resolved", { incident: { id: incident.id, mttrSeconds: 60 } }), PUBLIC_URL)).toEqual({
      event_action: "resolve",
      dedup_key: incident.id
    })
    const reminder = pagerDutyEventOf(alert("incident.reminder", { reminder: { n: 1, max: 2 } }), PUBLIC_URL)
    expect(reminder).toMatchObject({ event_action: "trigger", dedup_key: incident.id })
  })

  it("a summary keeps within 1,024 characters whatever the name; a test is an info trigger of its own", () => {
    const e = pagerDutyEventOf(alert("incident.opened", {}, { ...incident, monitorName: "n".repeat(5000) }), PUBLIC_URL)
    expect(e.payload!.summary.length).toBe(1024)
    expect(pagerDutyProblems(asReceived(enqueueUrl(PAGERDUTY_BASE_URL), { routing_key: "k", ...e }))).toEqual([])
    const test = pagerDutyEventOf(testAlertOf("pd", 0), PUBLIC_URL, "t1")
    expect(test).toMatchObject({ event_action: "trigger", dedup_key: "jobmon-test-t1", payload: { severity: "info" } })
  })

  it("PagerDuty's answers: 202 delivered, 400 fails the message, 429 and 5xx and no answer retry", () => {
    expect(pagerDutyVerdict(answered(202))._tag).toBe("Delivered")
    expect(pagerDutyVerdict(answered(400, "{\"status\":\"invalid event\"}"))).toEqual({ _tag: "Rejected", detail: "HTTP 400: {\"status\":\"invalid event\"}" })
    expect(pagerDutyVerdict(answered(429, "", 4))).toMatchObject({ _tag: "RetryLater", retryAfterMs: 4000 })
    expect(pagerDutyVerdict(answered(429))).toMatchObject({ _tag: "RetryLater", retryAfterMs: undefined })
    expect(pagerDutyVerdict(answered(502))._tag).toBe("RetryLater")
    expect(pagerDutyVerdict({ outcome: { _tag: "NoAnswer", error: "timeout" }, responseTimeMs: 5000 })._tag).toBe("RetryLater")
  })

  it("the default address, and a configured one", () => {
    const d = (config: any) => pagerDutyType.destinationOf({ id: "c", name: "pd", config })
    expect(enqueueUrl(d({ routingKey: "k" }).baseUrl)).toBe("https://events.pagerduty.com/v2/enqueue")
    expect(enqueueUrl(d({ routingKey: "k", baseUrl: "https://events.eu.pagerduty.com/" }).baseUrl)).toBe("https://events.eu.pagerduty.com/v2/enqueue")
  })
})

describe("Opsgenie alerts", () => {
  it("opened: create with the incident as alias, priority by severity, within Opsgenie's limits", () => {
    const m = opsgenieMessageOf(alert("incident.opened"))
    expect(m.action).toBe("create")
    expect(m.body).toMatchObject({
      message: "FAIL: nightly backup",
      alias: incident.id,
      priority: "P1",
      tags: ["jobmon", "FAIL", "HIGH", "db"],
      entity: "nightly backup",
      source: "jobmon",
      details: { Monitor: "nightly backup", "Exit code": "2", Incident: `${PUBLIC_URL}/incidents/${incident.id}` }
    })
    expect((m.body as any).description).toContain("Output:\nstarting\ndisk full")
    expect(opsgenieProblems(asReceived(opsgenieUrl("https://api.opsgenie.com", m), m.body))).toEqual([])
    expect((opsgenieMessageOf(alert("incident.opened", {}, { ...incident, severity: "MEDIUM" })).body as any).priority).toBe("P3")
    expect((opsgenieMessageOf(testAlertOf("og", 0), "t1").body as any).priority).toBe("P5")
  })

  it("a long name, many tags and a huge output still fit", () => {
    const huge = { ...incident, monitorName: "x".repeat(600), monitorTags: Array.from({ length: 40 }, (_, i) => `tag-${i}-${"t".repeat(60)}`), details: { output: "o".repeat(100_000) + "END" } }
    const m = opsgenieMessageOf(alert("incident.opened", {}, huge))
    expect(opsgenieProblems(asReceived(opsgenieUrl("https://api.opsgenie.com", m), m.body))).toEqual([])
    expect((m.body as any).message.length).toBe(130)
    expect((m.body as any).description.endsWith("END")).toBe(true)
  })

  it("acknowledged and resolved: acknowledge and close by alias, who and the note in the note", () => {
    const ack = opsgenieMessageOf(alert("incident.acknowledged", { acknowledgedBy: { name: "Ada" }, note: "on it" }))
    expect(ack).toMatchObject({ action: "acknowledge", alias: incident.id, body: { user: "Ada", source: "jobmon" } })
    expect((ack.body as { note: string }).note).toContain("on it")
    expect(opsgenieUrl("https://api.eu.opsgenie.com", ack)).toBe(`https://api.eu.opsgenie.com/v2/alerts/${incident.id}/acknowledge?identifierType=alias`)
    const close = opsgenieMessageOf(alert("incident.resolved", { incident: { id: incident.id, mttrSeconds: 3900 } }))
    expect(close.action).toBe("close")
    expect((close.body as { note: string }).note).toContain("lasted 1h 5m")
    expect(opsgenieProblems(asReceived(opsgenieUrl("https://api.opsgenie.com", close), close.body))).toEqual([])
  })

  it("region and base url", () => {
    const d = (config: any) => opsgenieType.destinationOf({ id: "c", name: "og", config })
    expect(d({ apiKey: "k" }).baseUrl).toBe(OPSGENIE_BASE_URLS.us)
    expect(d({ apiKey: "k", region: "eu" }).baseUrl).toBe("https://api.eu.opsgenie.com")
    expect(d({ apiKey: "k", region: "eu", baseUrl: "http://127.0.0.1:9" }).baseUrl).toBe("http://127.0.0.1:9")
  })

  it("Opsgenie's answers: 202 delivered, 401/403 invalid, 422 fails the message, 429 and 5xx retry", () => {
    expect(opsgenieVerdict(answered(202))._tag).toBe("Delivered")
    for (const s of [401, 403]) {
      const v = opsgenieVerdict(answered(s, "{\"message\":\"Could not authenticate\"}"))
      expect(v._tag).toBe("Invalid")
      expect((v as any).reason).toContain(`${s}`)
    }
    expect(opsgenieVerdict(answered(422))._tag).toBe("Rejected")
    expect(opsgenieVerdict(answered(404))._tag).toBe("Rejected")
    expect(opsgenieVerdict(answered(429, "", 2))).toMatchObject({ _tag: "RetryLater", retryAfterMs: 2000 })
    expect(opsgenieVerdict(answered(503))._tag).toBe("RetryLater")
  })
})

const create = (body: Record<string, unknown>) =>
  Effect.gen(function*() {
    const r = yield* call("POST", "/api/alerts/channels", { body })
    expect(r.status, r.text).toBe(201)
    return r.body as { id: string; config: Record<string, unknown> }
  })

const attemptsOf = (channelId: string) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    return yield* sql<{ at: Date; status_code: number | null; request_headers: Record<string, string>; body: string }>`
      select a.at, a.status_code, a.request_headers, d.body from webhook_delivery_attempts a
      join webhook_deliveries d on d.id = a.delivery_id where d.channel_id = ${channelId} order by a.at, a.id`
  }).pipe(Effect.orDie)

const lifecycle = (incidentId: string) =>
  Effect.gen(function*() {
    expect((yield* call("POST", `/api/incidents/${incidentId}/acknowledge`, { body: { note: "looking" } })).status).toBe(200)
    yield* flush
    expect((yield* call("POST", `/api/incidents/${incidentId}/resolve`)).status).toBe(200)
    yield* flush
  })

layer(TestServer({ allowPrivateTargets: true, publicUrl: PUBLIC_URL }), { timeout: 120_000 })("PagerDuty and Opsgenie channels", (it) => {
  it.effect("PagerDuty: opened, acknowledged, resolved become trigger, acknowledge, resolve by the incident's id; the key is never shown nor stored in a message", () =>
    Effect.scoped(Effect.gen(function*() {
      const pd = yield* pagerDutyReceiver()
      const monitor = yield* createMonitor({ name: "db backup" })
      const channel = yield* create({ type: "pagerduty", name: "pd", config: { routingKey: "R0UT1NGKEY", baseUrl: pd.base } })
      expect(channel.config).toEqual({ baseUrl: pd.base })
      const { incident: opened } = yield* raise(monitor.id)
      yield* flush
      yield* lifecycle(opened.id)
      expect(pd.refused).toEqual([])
      expect(pd.received.map((r) => [r.body.event_action, r.body.dedup_key, r.body.routing_key])).toEqual([
        ["trigger", opened.id, "R0UT1NGKEY"],
        ["acknowledge", opened.id, "R0UT1NGKEY"],
        ["resolve", opened.id, "R0UT1NGKEY"]
      ])
      expect(pd.received[0]!.body.payload).toMatchObject({ summary: "FAIL: db backup", severity: "critical", component: "db backup" })
      const listed = (yield* call("GET", `/api/alerts/channels/${channel.id}`)).text
      expect(listed).not.toContain("R0UT1NGKEY")
      for (const a of yield* attemptsOf(channel.id)) expect(JSON.stringify(a)).not.toContain("R0UT1NGKEY")
    })))

  it.effect("PagerDuty: while the trigger is retried (503, then 429 with Retry-After) the acknowledge and resolve wait behind it", () =>
    Effect.scoped(Effect.gen(function*() {
      const pd = yield* pagerDutyReceiver([{ status: 503 }, { status: 429, headers: { "retry-after": "5" } }, 202])
      const monitor = yield* createMonitor()
      const channel = yield* create({ type: "pagerduty", config: { routingKey: "k", baseUrl: pd.base } })
      const { incident: opened } = yield* raise(monitor.id)
      yield* flush
      yield* lifecycle(opened.id)
      expect(pd.received.map((r) => r.body.event_action)).toEqual(["trigger"])
      yield* TestClock.adjust("1 second")
      yield* flush
      expect(pd.received.map((r) => r.body.event_action)).toEqual(["trigger", "trigger"])
      yield* TestClock.adjust("4999 millis")
      yield* flush
      expect(pd.received).toHaveLength(2)
      yield* TestClock.adjust("1 millis")
      yield* flush
      expect(pd.received.map((r) => r.body.event_action)).toEqual(["trigger", "trigger", "trigger", "acknowledge", "resolve"])
      const deliveries = (yield* call("GET", `/api/alerts/channels/${channel.id}/deliveries`)).body.deliveries
      expect(deliveries.every((d: any) => d.status === "succeeded")).toBe(true)
    })))

  it.effect("Opsgenie: create, acknowledge, close by alias with the GenieKey; the key is never shown nor recorded", () =>
    Effect.scoped(Effect.gen(function*() {
      const og = yield* opsgenieReceiver("g3n1e-key")
      const monitor = yield* createMonitor({ name: "db backup" })
      const channel = yield* create({ type: "opsgenie", name: "og", config: { apiKey: "g3n1e-key", region: "eu", baseUrl: og.base } })
      expect(channel.config).toEqual({ region: "eu", baseUrl: og.base })
      const { incident: opened } = yield* raise(monitor.id, { severity: "MEDIUM" })
      yield* flush
      yield* lifecycle(opened.id)
      expect(og.refused).toEqual([])
      expect(og.received.map((r) => r.url)).toEqual([
        "/v2/alerts",
        `/v2/alerts/${opened.id}/acknowledge?identifierType=alias`,
        `/v2/alerts/${opened.id}/close?identifierType=alias`
      ])
      expect(og.received[0]!.body).toMatchObject({ message: "FAIL: db backup", alias: opened.id, priority: "P3" })
      expect((yield* call("GET", `/api/alerts/channels/${channel.id}`)).text).not.toContain("g3n1e-key")
      const attempts = yield* attemptsOf(channel.id)
      expect(attempts).toHaveLength(3)
      for (const a of attempts) expect(JSON.stringify(a)).not.toContain("g3n1e-key")
    })))

  it.effect("Opsgenie: a revoked key (401) makes the channel invalid with the reason, and it stops receiving", () =>
    Effect.scoped(Effect.gen(function*() {
      const og = yield* opsgenieReceiver("the-right-key")
      const monitor = yield* createMonitor()
      const channel = yield* create({ type: "opsgenie", config: { apiKey: "a-revoked-key", baseUrl: og.base } })
      const { incident: opened } = yield* raise(monitor.id)
      yield* flush
      const got = (yield* call("GET", `/api/alerts/channels/${channel.id}`)).body
      expect(got.status).toBe("invalid")
      expect(got.statusReason).toContain("Opsgenie answered 401")
      yield* lifecycle(opened.id)
      expect(og.received).toHaveLength(1)
    })))

  it.effect("a burst of 100 incidents reaches PagerDuty and Opsgenie: every one once, within 120 a minute, nothing dropped", () =>
    Effect.scoped(Effect.gen(function*() {
      const pd = yield* pagerDutyReceiver()
      const og = yield* opsgenieReceiver("k")
      const monitors = yield* Effect.forEach(Array.from({ length: 100 }, (_, i) => i), (i) => createMonitor({ name: `burst ${i}` }), { concurrency: 8 })
      const pdChannel = yield* create({ type: "pagerduty", config: { routingKey: "k", baseUrl: pd.base } })
      const ogChannel = yield* create({ type: "opsgenie", config: { apiKey: "k", baseUrl: og.base } })
      yield* Effect.forEach(monitors, (m) => raise(m.id), { discard: true })
      yield* flush
      for (let i = 0; i < 5 && (pd.received.length < 100 || og.received.length < 100); i++) {
        yield* TestClock.adjust("1 minute")
        yield* flush
      }
      const names = monitors.map((m) => `FAIL: ${m.name}`).sort()
      expect(pd.received.map((r) => r.body.payload.summary).sort()).toEqual(names)
      expect(og.received.map((r) => r.body.message).sort()).toEqual(names)
      expect(pd.refused).toEqual([])
      expect(og.refused).toEqual([])
      for (const id of [pdChannel.id, ogChannel.id]) {
        const perMinute = new Map<number, number>()
        for (const a of yield* attemptsOf(id)) perMinute.set(Math.floor(a.at.getTime() / 60_000), (perMinute.get(Math.floor(a.at.getTime() / 60_000)) ?? 0) + 1)
        expect(Math.max(...perMinute.values())).toBeLessThanOrEqual(120)
      }
    })))
})
