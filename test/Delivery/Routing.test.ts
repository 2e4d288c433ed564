import { describe, expect, it, layer } from "@effect/vitest"
import { Clock, Effect, FastCheck, TestClock } from "effect"
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

describe("alertRulesMatch: maintenance notices", () => {
  const monitors = [{ id: "M1", name: "backup", tags: ["db", "nightly"] }, { id: "M2", name: "deploy", tags: ["web"] }]
  it("routed by the window's monitors and events; types and severity do not apply", () => {
    const started = { event: "maintenance.started", incident: undefined, monitors }
    expect(alertRulesMatch(none, started)).toBe(true)
    expect(alertRulesMatch({ ...none, tags: ["web"] }, started)).toBe(true)
    expect(alertRulesMatch({ ...none, tags: ["ops"] }, started)).toBe(false)
    expect(alertRulesMatch({ ...none, monitorIds: ["m2"] }, started)).toBe(true)
    // monitorIds and tags hold for the same monitor
    expect(alertRulesMatch({ ...none, monitorIds: ["M2"], tags: ["db"] }, started)).toBe(false)
    expect(alertRulesMatch({ ...none, types: ["LATE"], severity: ["LOW"] }, started)).toBe(true)
    expect(alertRulesMatch({ ...none, events: ["incident.opened"] }, started)).toBe(false)
    expect(alertRulesMatch({ ...none, events: ["maintenance.ended"] }, started)).toBe(false)
    expect(alertRulesMatch({ ...none, events: ["maintenance.started"] }, started)).toBe(true)
    expect(alertRulesMatch(none, { ...started, monitors: [] })).toBe(false)
  })

  const ids = ["M1", "M2", "M3", "M4"]
  const tags = ["db", "web", "ops", "nightly"]
  const kinds = ["maintenance.upcoming", "maintenance.started", "maintenance.ended"]
  const sub = (values: ReadonlyArray<string>) => FastCheck.subarray([...values])
  it.prop(
    "a notice passes exactly when some window monitor is in monitorIds and carries a tag, and events allow it",
    [
      FastCheck.array(FastCheck.record({ id: FastCheck.constantFrom(...ids), tags: sub(tags) }), { maxLength: 4 }),
      sub(ids),
      sub(tags),
      sub(kinds),
      FastCheck.constantFrom(...kinds)
    ],
    ([window, monitorIds, ruleTags, events, kind]) => {
      const rules = { ...none, monitorIds, tags: ruleTags, events }
      const expected = (events.length === 0 || events.includes(kind)) &&
        window.some((m) => (monitorIds.length === 0 || monitorIds.includes(m.id)) && (ruleTags.length === 0 || m.tags.some((t) => ruleTags.includes(t))))
      expect(alertRulesMatch(rules, { event: kind, incident: undefined, monitors: window.map((m) => ({ ...m, name: m.id })) })).toBe(expected)
    }
  )
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
