import { expect, layer } from "@effect/vitest"
import { SqlClient } from "@effect/sql"
import { Deferred, Effect, Fiber } from "effect"
import { envelopeOf, Events } from "../../src/Events/Events.js"
import { call, createMonitor, createOrganization, createToken, TestServer, validMonitor } from "../support/fixture.js"
import { defaultOrg, eventsOfMonitor, raise } from "../Incidents/support.js"

/** The resource as events carry it: without pingUrl, a credential the API shows write and admin tokens only. */
const withoutPingUrl = (monitor: Record<string, unknown>) => {
  expect(monitor.pingUrl).toEqual(expect.stringContaining("/ping/"))
  const { pingUrl: _, ...rest } = monitor
  return rest
}

layer(TestServer(), { excludeTestServices: true, timeout: 120_000 })("events", (it) => {
  it.effect("monitor.created carries the Monitor resource, in the same commit as the monitor", () =>
    Effect.gen(function*() {
      const { orgId } = yield* defaultOrg
      const monitor = yield* createMonitor({ name: "etl", tags: ["events"] })
      const events = yield* eventsOfMonitor(monitor.id)
      expect(events.map((e) => e.type)).toEqual(["monitor.created"])
      expect(events[0]!.data).toEqual({ monitor: withoutPingUrl(monitor) })
      expect(JSON.stringify(events[0]!.data)).not.toContain(monitor.pingUrl.split("/ping/")[1])
      expect(events[0]!.org_id).toBe(orgId)
      expect(events[0]!.severity).toBeNull()
      expect(events[0]!.monitor_ids).toEqual([monitor.id])
      expect(events[0]!.created_at.toISOString()).toBe(monitor.createdAt)
    }))

  it.effect("monitor.updated names the changed fields; a PATCH that changes nothing writes none; pause and resume do", () =>
    Effect.gen(function*() {
      const monitor = yield* createMonitor()
      const patched = yield* call("PATCH", `/api/monitors/${monitor.id}`, {
        body: { name: "renamed", graceSeconds: 120, schedule: { type: "interval", expression: "1h" }, tags: [] }
      })
      expect(patched.status).toBe(200)
      let events = yield* eventsOfMonitor(monitor.id, "monitor.updated")
      expect(events.length).toBe(1)
      expect(events[0]!.data).toEqual({ monitor: withoutPingUrl(patched.body), changes: ["name", "schedule", "graceSeconds"] })

      expect((yield* call("PATCH", `/api/monitors/${monitor.id}`, { body: { name: "renamed" } })).status).toBe(200)
      expect((yield* eventsOfMonitor(monitor.id, "monitor.updated")).length).toBe(1)

      const sla = yield* call("PATCH", `/api/monitors/${monitor.id}`, { body: { sla: { durationTarget: "p99", maxDurationMs: 5000 } } })
      events = yield* eventsOfMonitor(monitor.id, "monitor.updated")
      expect(events.length).toBe(2)
      expect(events[1]!.data).toEqual({ monitor: withoutPingUrl(sla.body), changes: ["sla"] })

      const paused = yield* call("POST", `/api/monitors/${monitor.id}/pause`)
      yield* call("POST", `/api/monitors/${monitor.id}/pause`)
      const resumed = yield* call("POST", `/api/monitors/${monitor.id}/resume`)
      events = yield* eventsOfMonitor(monitor.id, "monitor.updated")
      expect(events.map((e) => e.data.changes)).toEqual([["name", "schedule", "graceSeconds"], ["sla"], ["paused"], ["paused"]])
      expect(events[2]!.data.monitor).toEqual(withoutPingUrl(paused.body))
      expect(events[3]!.data.monitor).toEqual(withoutPingUrl(resumed.body))
      // An invalid PATCH changes nothing and records nothing.
      expect((yield* call("PATCH", `/api/monitors/${monitor.id}`, { body: { graceSeconds: -1 } })).status).toBe(400)
      expect((yield* eventsOfMonitor(monitor.id, "monitor.updated")).length).toBe(4)
    }))

  it.effect("monitor.deleted carries the monitor as it was and when it was deleted", () =>
    Effect.gen(function*() {
      const monitor = yield* createMonitor({ name: "to delete" })
      const before = Date.now()
      expect((yield* call("DELETE", `/api/monitors/${monitor.id}`)).status).toBe(204)
      const events = yield* eventsOfMonitor(monitor.id, "monitor.deleted")
      expect(events.length).toBe(1)
      expect(events[0]!.data.monitor).toEqual(withoutPingUrl(monitor))
      expect(Date.parse(events[0]!.data.deletedAt)).toBeGreaterThanOrEqual(before - 1000)
      expect(events[0]!.created_at.toISOString()).toBe(events[0]!.data.deletedAt)
      expect((yield* call("DELETE", `/api/monitors/${monitor.id}`)).status).toBe(404)
      expect((yield* eventsOfMonitor(monitor.id, "monitor.deleted")).length).toBe(1)
    }))

  it.effect("GET /api/events: newest first by default, oldest first after a seq, with type and monitor filters", () =>
    Effect.gen(function*() {
      const monitor = yield* createMonitor({ name: "listed" })
      yield* call("PATCH", `/api/monitors/${monitor.id}`, { body: { name: "listed again" } })
      const { incident } = yield* raise(monitor.id)
      yield* call("POST", `/api/incidents/${incident.id}/acknowledge`, { body: { note: "seen" } })
      yield* call("POST", `/api/incidents/${incident.id}/notes`, { body: { note: "more" } })
      yield* call("POST", `/api/incidents/${incident.id}/resolve`)

      const recent = yield* call("GET", `/api/events?monitorId=${monitor.id}`)
      expect(recent.status).toBe(200)
      const kinds = recent.body.events.map((e: any) => e.event)
      expect(kinds).toEqual([
        "incident.resolved",
        "incident.note_added",
        "incident.acknowledged",
        "incident.opened",
        "monitor.updated",
        "monitor.created"
      ])
      const seqs = recent.body.events.map((e: any) => e.seq)
      expect([...seqs].sort((a, b) => b - a)).toEqual(seqs)
      for (const e of recent.body.events) {
        expect(Object.keys(e).sort()).toEqual(["createdAt", "data", "event", "id", "seq"])
        expect(Number.isInteger(e.seq)).toBe(true)
        expect(new Date(e.createdAt).toISOString()).toBe(e.createdAt)
      }

      const oldest = seqs.at(-1)
      const after = yield* call("GET", `/api/events?after=${oldest}&monitorId=${monitor.id}`)
      expect(after.body.events.map((e: any) => e.event)).toEqual([...kinds].reverse().slice(1))
      const limited = yield* call("GET", `/api/events?after=${oldest}&monitorId=${monitor.id}&limit=2`)
      expect(limited.body.events.map((e: any) => e.event)).toEqual(["monitor.updated", "incident.opened"])
      const before = yield* call("GET", `/api/events?before=${seqs[1]}&monitorId=${monitor.id}&limit=2`)
      expect(before.body.events.map((e: any) => e.event)).toEqual(["incident.acknowledged", "incident.opened"])
      const opened = yield* call("GET", `/api/events?type=incident.opened&limit=500`)
      expect(opened.body.events.every((e: any) => e.event === "incident.opened")).toBe(true)
      expect(opened.body.events.map((e: any) => e.data.incident.id)).toContain(incident.id)

      for (const [query, path] of [
        ["type=incident.closed", "type"],
        ["after=-1", "after"],
        ["after=abc", "after"],
        ["before=1.5", "before"],
        ["limit=0", "limit"],
        ["limit=501", "limit"],
        ["monitorId=nope", "monitorId"]
      ] as const) {
        const response = yield* call("GET", `/api/events?${query}`)
        expect(response.status, query).toBe(400)
        expect(response.body.path, query).toBe(path)
      }
    }))

  it.effect("events are scoped to the organization; read tokens may list them, ping tokens may not", () =>
    Effect.gen(function*() {
      const monitor = yield* createMonitor()
      const other = yield* createOrganization("events-other", "read")
      const theirs = yield* call("GET", "/api/events?limit=500", { token: other.token })
      expect(theirs.status).toBe(200)
      expect(theirs.body.events).toEqual([])
      const byMonitor = yield* call("GET", `/api/events?monitorId=${monitor.id}`, { token: other.token })
      expect(byMonitor.body.events).toEqual([])
      const read = yield* createToken("read")
      const ours = yield* call("GET", `/api/events?monitorId=${monitor.id}`, { token: read.token })
      expect(ours.body.events.map((e: any) => e.event)).toEqual(["monitor.created"])
      const ping = yield* createToken("ping")
      expect((yield* call("GET", "/api/events", { token: ping.token })).status).toBe(403)
      expect((yield* call("POST", "/api/events")).status).toBe(405)
    }))

  it.effect("record joins the caller's transaction: rolled back with it, committed with it", () =>
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const events = yield* Events
      const { orgId } = yield* defaultOrg
      const monitor = yield* createMonitor()
      const input = { orgId, type: "monitor.updated" as const, data: { probe: 1 }, monitorIds: [monitor.id], at: Date.now() }
      const failed = yield* sql.withTransaction(
        Effect.zipRight(events.record(input), Effect.fail("rollback" as const))
      ).pipe(Effect.flip)
      expect(failed).toBe("rollback")
      expect((yield* eventsOfMonitor(monitor.id, "monitor.updated")).length).toBe(0)

      const stored = yield* sql.withTransaction(events.record({ ...input, severity: "LOW" }))
      const rows = yield* eventsOfMonitor(monitor.id, "monitor.updated")
      expect(rows.length).toBe(1)
      expect(rows[0]!).toMatchObject({ id: stored.id, seq: stored.seq, severity: "LOW", data: { probe: 1 } })
      expect(envelopeOf(stored)).toEqual({
        event: "monitor.updated",
        id: stored.id,
        createdAt: new Date(input.at).toISOString(),
        data: { probe: 1 }
      })

      const many = yield* events.recordMany([1, 2, 3].map((n) => ({ ...input, data: { n } })))
      expect(many.map((e) => e.data)).toEqual([{ n: 1 }, { n: 2 }, { n: 3 }])
      expect(many[1]!.seq).toBeGreaterThan(many[0]!.seq)
      expect(many[2]!.seq).toBeGreaterThan(many[1]!.seq)
      expect(yield* events.recordMany([])).toEqual([])
    }))

  it.effect("seq follows commit order: a reader after seq N never skips an event that commits late", () =>
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const events = yield* Events
      const { orgId } = yield* defaultOrg
      const monitor = yield* createMonitor()
      const input = (n: number) => ({ orgId, type: "monitor.updated" as const, data: { n }, monitorIds: [monitor.id], at: Date.now() })
      const recorded = yield* Deferred.make<void>()
      const release = yield* Deferred.make<void>()
      // A: records, then holds its transaction open.
      const slow = yield* Effect.fork(
        sql.withTransaction(
          Effect.gen(function*() {
            const event = yield* events.record(input(1))
            yield* Deferred.succeed(recorded, undefined)
            yield* Deferred.await(release)
            return event
          })
        )
      )
      yield* Deferred.await(recorded)
      // B: records on its own while A is open; it has to wait for A's commit.
      const fast = yield* Effect.fork(events.record(input(2)))
      yield* Effect.sleep("200 millis")
      const during = yield* eventsOfMonitor(monitor.id, "monitor.updated")
      expect(during).toEqual([])
      expect(fast.unsafePoll()).toBeNull()
      yield* Deferred.succeed(release, undefined)
      const a = yield* Fiber.join(slow)
      const b = yield* Fiber.join(fast)
      expect(b.seq).toBeGreaterThan(a.seq)
      const after = yield* call("GET", `/api/events?after=${a.seq - 1}&monitorId=${monitor.id}&type=monitor.updated`)
      expect(after.body.events.map((e: any) => e.data.n)).toEqual([1, 2])
    }))

  it.effect("a burst of monitor changes: every event is stored once, seqs strictly increasing", () =>
    Effect.gen(function*() {
      const created = yield* Effect.all(
        Array.from({ length: 12 }, (_, i) => call("POST", "/api/monitors", { body: validMonitor({ name: `burst ${i}`, tags: ["burst"] }) })),
        { concurrency: "unbounded" }
      )
      expect(created.every((r) => r.status === 201)).toBe(true)
      const ids = new Set(created.map((r) => r.body.id))
      const listed = yield* call("GET", "/api/events?type=monitor.created&limit=500")
      const ours = listed.body.events.filter((e: any) => ids.has(e.data.monitor.id))
      expect(ours.length).toBe(12)
      const seqs = ours.map((e: any) => e.seq)
      expect(new Set(seqs).size).toBe(12)
    }))
})
