import { describe, expect, it, layer } from "@effect/vitest"
import { Clock, Effect, TestClock } from "effect"
import { alertRulesMatch, type AlertRules } from "../../src/Delivery/AlertRules.js"
import type { IncidentFacts } from "../../src/Delivery/Channel.js"
import { Webhooks } from "../../src/Delivery/Webhooks.js"
import { call, createMonitor, TestServer } from "../support/fixture.js"
import { raise } from "../Incidents/support.js"
import { slackReceiver } from "./slackReceiver.js"

// Routing rules of alert channels (docs/alerts.md#routing-rules): monitors, tags, incident types,
// severities and events, applied by the fan-out.

const none: AlertRules = { monitorIds: [], tags: [], types: [], severity: [], events: [] }
const facts: IncidentFacts = {
  id: "i1",
  type: "FAIL",
  severity: "HIGH",
  status: "OPEN",
  monitorId: "M1",
  monitorName: "backup",
  monitorTags: ["db", "nightly"],
  openedAt: "2026-01-01T00:00:00.000Z",
  details: {}
}

describe("alertRulesMatch", () => {
  const opened = { event: "incident.opened", incident: facts }
  it("empty rules take every incident event and reminders, nothing else", () => {
    for (const event of ["incident.opened", "incident.acknowledged", "incident.resolved", "incident.reminder"]) {
      expect(alertRulesMatch(none, { event, incident: facts }), event).toBe(true)
    }
    expect(alertRulesMatch(none, { event: "incident.note_added", incident: facts })).toBe(false)
    expect(alertRulesMatch(none, { event: "monitor.created", incident: undefined })).toBe(false)
  })
  it("lists AND together, values of one list OR", () => {
    expect(alertRulesMatch({ ...none, tags: ["web", "db"] }, opened)).toBe(true)
    expect(alertRulesMatch({ ...none, tags: ["web"] }, opened)).toBe(false)
    expect(alertRulesMatch({ ...none, monitorIds: ["m1"] }, opened)).toBe(true)
    expect(alertRulesMatch({ ...none, tags: ["db"], types: ["MISSED"] }, opened)).toBe(false)
    expect(alertRulesMatch({ ...none, severity: ["LOW", "HIGH"], types: ["FAIL"] }, opened)).toBe(true)
  })
  it("events: reminders go where incident.opened goes", () => {
    const resolvedOnly = { ...none, events: ["incident.resolved"] }
    expect(alertRulesMatch(resolvedOnly, opened)).toBe(false)
    expect(alertRulesMatch(resolvedOnly, { event: "incident.reminder", incident: facts })).toBe(false)
    expect(alertRulesMatch(resolvedOnly, { event: "incident.resolved", incident: facts })).toBe(true)
    expect(alertRulesMatch({ ...none, events: ["incident.opened"] }, { event: "incident.reminder", incident: facts })).toBe(true)
  })
})

const flush = Effect.flatMap(Webhooks, (w) => w.flush)

/** Flushes while Slack's pace (one request a second) has more to send. */
const drain = Effect.gen(function*() {
  for (let i = 0; i < 5; i++) {
    yield* flush
    yield* TestClock.adjust("1 second")
  }
  yield* flush
})

layer(TestServer({ allowPrivateTargets: true, publicUrl: "https://jobmon.example" }), { timeout: 120_000 })("routing", (it) => {
  it.effect("each channel gets what its rules select: monitors, tags, types, severities, events", () =>
    Effect.scoped(Effect.gen(function*() {
      const m1 = yield* createMonitor({ name: "db backup", tags: ["db", "nightly"] })
      const m2 = yield* createMonitor({ name: "web check", tags: ["web"] })
      const m3 = yield* createMonitor({ name: "untagged" })
      const rules: Record<string, Record<string, unknown>> = {
        byMonitor: { monitorIds: [m2.id] },
        byTag: { tags: ["db"] },
        byType: { types: ["MISSED"] },
        bySeverity: { severity: ["LOW"] },
        resolvedOnly: { events: ["incident.resolved"] },
        ackOnly: { events: ["incident.acknowledged"] },
        tagAndType: { tags: ["db", "web"], types: ["FAIL"] },
        everything: {}
      }
      const receivers: Record<string, { received: Array<{ body: any }>; refused: Array<unknown> }> = {}
      for (const [name, r] of Object.entries(rules)) {
        const slack = yield* slackReceiver([200])
        receivers[name] = slack
        const made = yield* call("POST", "/api/alerts/channels", { body: { type: "slack", name, config: { url: slack.url }, rules: r } })
        expect(made.status, made.text).toBe(201)
      }
      const at = yield* Clock.currentTimeMillis
      const i1 = (yield* raise(m1.id, { type: "FAIL", severity: "HIGH", at })).incident
      const i2 = (yield* raise(m2.id, { type: "MISSED", severity: "MEDIUM", at, details: {} })).incident
      yield* raise(m3.id, { type: "ANOMALY", severity: "LOW", at, details: {} })
      yield* drain
      expect((yield* call("POST", `/api/incidents/${i2.id}/acknowledge`)).status).toBe(200)
      yield* drain
      expect((yield* call("POST", `/api/incidents/${i1.id}/resolve`)).status).toBe(200)
      yield* drain
      const titles = (name: string) =>
        receivers[name]!.received.flatMap((r) =>
          r.body.blocks.filter((b: any) => b.type === "header").map((b: any) => (b.text.text as string).replace(/^:[a-z_]+: /, ""))
        )
      expect(titles("byMonitor")).toEqual(["MISSED: web check", "ACKNOWLEDGED: web check"])
      expect(titles("byTag")).toEqual(["FAIL: db backup", "RESOLVED: db backup"])
      expect(titles("byType")).toEqual(["MISSED: web check", "ACKNOWLEDGED: web check"])
      expect(titles("bySeverity")).toEqual(["ANOMALY: untagged"])
      expect(titles("resolvedOnly")).toEqual(["RESOLVED: db backup"])
      expect(titles("ackOnly")).toEqual(["ACKNOWLEDGED: web check"])
      expect(titles("tagAndType")).toEqual(["FAIL: db backup", "RESOLVED: db backup"])
      expect(titles("everything")).toEqual([
        "FAIL: db backup",
        "MISSED: web check",
        "ANOMALY: untagged",
        "ACKNOWLEDGED: web check",
        "RESOLVED: db backup"
      ])
      // a resolved alert says how long it lasted
      const resolved = receivers["resolvedOnly"]!.received[0]!.body
      expect(resolved.text).toMatch(/^RESOLVED: db backup \(FAIL, lasted \d/)
      for (const r of Object.values(receivers)) expect(r.refused).toEqual([])
    })))
})
