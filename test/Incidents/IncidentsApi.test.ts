import { expect, layer } from "@effect/vitest"
import { SqlClient } from "@effect/sql"
import { Effect, Layer, Option } from "effect"
import type { Principal } from "../../src/Auth/Principal.js"
import { Engine } from "../../src/Engine/Engine.js"
import { Incidents } from "../../src/Incidents/Incidents.js"
import { type IncidentChange, IncidentListener } from "../../src/Incidents/Listener.js"
import { call, createMonitor, createOrganization, createToken, TestServer } from "../support/fixture.js"
import { defaultOrg, eventsAbout, raise } from "./support.js"

const HOUR = 3_600_000

/** The monitor as incident.* events name it (docs/events.md). */
const summaryOf = (monitor: { id: string; [key: string]: any }) => ({
  id: monitor.id,
  name: monitor.name,
  schedule: { type: monitor.schedule.type, expression: monitor.schedule.expression }
})

layer(TestServer(), { excludeTestServices: true, timeout: 120_000 })("incidents API", (it) => {
  it.effect("a raised incident has the spec's fields, reads back through the API, and writes incident.opened", () =>
    Effect.gen(function*() {
      const monitor = yield* createMonitor({ name: "db backup", schedule: { type: "cron", expression: "30 2 * * *", timezone: "Europe/Berlin" } })
      const at = Date.now() - 60_000
      const runId = "5e0d2a8c-9d3c-4a7b-9c43-1f6f5b7a8e11"
      const { incident, created } = yield* raise(monitor.id, { at, runId, details: { exitCode: 2, output: "disk full" } })
      expect(created).toBe(true)
      const got = yield* call("GET", `/api/incidents/${incident.id}`)
      expect(got.status).toBe(200)
      expect(got.body).toEqual({
        id: incident.id,
        type: "FAIL",
        severity: "HIGH",
        status: "OPEN",
        monitorId: monitor.id,
        createdAt: new Date(at).toISOString(),
        acknowledgedAt: null,
        acknowledgedBy: null,
        resolvedAt: null,
        resolvedBy: null,
        mttrSeconds: null,
        // FAIL details always carry the spec's four keys.
        details: { exitCode: 2, durationMs: null, output: "disk full", expectedDurationMs: null },
        occurrences: 1,
        lastOccurredAt: new Date(at).toISOString(),
        runId,
        notes: []
      })
      expect(got.body).toEqual(incident)

      const { orgId } = yield* defaultOrg
      const opened = yield* eventsAbout(incident.id)
      expect(opened.map((e) => e.type)).toEqual(["incident.opened"])
      const event = opened[0]!
      expect(event.data).toEqual({
        incident: {
          id: incident.id,
          type: "FAIL",
          severity: "HIGH",
          status: "OPEN",
          monitorId: monitor.id,
          monitor: { id: monitor.id, name: "db backup", schedule: { type: "cron", expression: "30 2 * * *" } },
          orgId,
          createdAt: new Date(at).toISOString(),
          details: { exitCode: 2, durationMs: null, output: "disk full", expectedDurationMs: null }
        }
      })
      expect(event.monitor_ids).toEqual([monitor.id])
      expect(event.severity).toBe("HIGH")
      expect(event.org_id).toBe(orgId)
      expect(event.created_at.getTime()).toBe(at)
    }))

  it.effect("non-FAIL incidents keep their own details", () =>
    Effect.gen(function*() {
      const monitor = yield* createMonitor()
      const details = { rule: "duration", durationMs: 90_000, p99Ms: 12_000 }
      const { incident } = yield* raise(monitor.id, { type: "ANOMALY", severity: "LOW", details })
      expect(incident.details).toEqual(details)
      const [event] = yield* eventsAbout(incident.id, "incident.opened")
      expect(event!.data.incident.details).toEqual(details)
      expect(event!.data.incident.type).toBe("ANOMALY")
      expect(event!.severity).toBe("LOW")
    }))

  it.effect("dedup: a second occurrence counts on the active incident, with no second event; after resolve a new one opens", () =>
    Effect.gen(function*() {
      const monitor = yield* createMonitor()
      const t0 = Date.now() - 10 * 60_000
      const first = yield* raise(monitor.id, { type: "MISSED", at: t0, details: { expectedAt: "x" } })
      const second = yield* raise(monitor.id, { type: "MISSED", at: t0 + 60_000, details: { expectedAt: "y" } })
      expect(second.created).toBe(false)
      expect(second.incident.id).toBe(first.incident.id)
      expect(second.incident).toMatchObject({
        occurrences: 2,
        createdAt: new Date(t0).toISOString(),
        lastOccurredAt: new Date(t0 + 60_000).toISOString(),
        details: { expectedAt: "x" }
      })
      // Another type is another incident.
      const late = yield* raise(monitor.id, { type: "LATE", severity: "MEDIUM", at: t0 + 60_000 })
      expect(late.created).toBe(true)
      expect(late.incident.id).not.toBe(first.incident.id)
      // An acknowledged incident is still active: it counts too.
      expect((yield* call("POST", `/api/incidents/${first.incident.id}/acknowledge`)).status).toBe(200)
      const third = yield* raise(monitor.id, { type: "MISSED", at: t0 + 120_000 })
      expect(third.incident).toMatchObject({ id: first.incident.id, status: "ACKNOWLEDGED", occurrences: 3 })
      expect((yield* eventsAbout(first.incident.id, "incident.opened")).length).toBe(1)

      expect((yield* call("POST", `/api/incidents/${first.incident.id}/resolve`)).status).toBe(200)
      const fresh = yield* raise(monitor.id, { type: "MISSED", at: t0 + 180_000 })
      expect(fresh.created).toBe(true)
      expect(fresh.incident.id).not.toBe(first.incident.id)
      expect(fresh.incident).toMatchObject({ status: "OPEN", occurrences: 1 })
      const old = yield* call("GET", `/api/incidents/${first.incident.id}`)
      expect(old.body).toMatchObject({ status: "RESOLVED", occurrences: 3 })
      expect((yield* eventsAbout(fresh.incident.id, "incident.opened")).length).toBe(1)
    }))

  it.effect("a repeat raises the severity, never lowers it", () =>
    Effect.gen(function*() {
      const monitor = yield* createMonitor()
      const a = yield* raise(monitor.id, { type: "ANOMALY", severity: "LOW", details: {} })
      const b = yield* raise(monitor.id, { type: "ANOMALY", severity: "MEDIUM", details: {} })
      const c = yield* raise(monitor.id, { type: "ANOMALY", severity: "LOW", details: {} })
      expect([a.incident.severity, b.incident.severity, c.incident.severity]).toEqual(["LOW", "MEDIUM", "MEDIUM"])
    }))

  it.effect("acknowledge: OPEN only, records who and the note, writes incident.acknowledged; 409 otherwise", () =>
    Effect.gen(function*() {
      const admin = yield* defaultOrg
      const monitor = yield* createMonitor()
      const { incident } = yield* raise(monitor.id)
      const before = Date.now()
      const acked = yield* call("POST", `/api/incidents/${incident.id}/acknowledge`, { body: { note: "  looking into it " } })
      expect(acked.status).toBe(200)
      expect(acked.body).toMatchObject({
        id: incident.id,
        status: "ACKNOWLEDGED",
        acknowledgedBy: { userId: admin.userId, name: "Admin", email: "admin@localhost" },
        resolvedAt: null,
        resolvedBy: null,
        mttrSeconds: null
      })
      const ackAt = Date.parse(acked.body.acknowledgedAt)
      expect(ackAt).toBeGreaterThanOrEqual(before - 1000)
      expect(ackAt).toBeLessThanOrEqual(Date.now() + 1000)
      expect(acked.body.notes).toEqual([{ at: acked.body.acknowledgedAt, text: "looking into it", by: "Admin" }])

      const events = yield* eventsAbout(incident.id, "incident.acknowledged")
      expect(events.length).toBe(1)
      expect(events[0]!.data).toEqual({
        // the spec's fields, and the monitor (ours, additive)
        incident: { id: incident.id, status: "ACKNOWLEDGED", monitorId: monitor.id, monitor: summaryOf(monitor) },
        acknowledgedBy: { userId: admin.userId, name: "Admin", email: "admin@localhost" },
        note: "looking into it"
      })
      expect(events[0]!.created_at.toISOString()).toBe(acked.body.acknowledgedAt)

      const again = yield* call("POST", `/api/incidents/${incident.id}/acknowledge`)
      expect(again.status).toBe(409)
      expect(again.body._tag).toBe("Conflict")
      expect(again.body.message).toContain("ACKNOWLEDGED")
      expect((yield* eventsAbout(incident.id, "incident.acknowledged")).length).toBe(1)

      // From ACKNOWLEDGED, resolve is allowed; acknowledging a resolved one is not.
      const resolved = yield* call("POST", `/api/incidents/${incident.id}/resolve`, { body: { note: "fixed the disk" } })
      expect(resolved.status).toBe(200)
      expect(resolved.body.status).toBe("RESOLVED")
      expect(resolved.body.acknowledgedBy).toEqual({ userId: admin.userId, name: "Admin", email: "admin@localhost" })
      const ackResolved = yield* call("POST", `/api/incidents/${incident.id}/acknowledge`, { body: {} })
      expect(ackResolved.status).toBe(409)
      expect(ackResolved.body.message).toContain("RESOLVED")
    }))

  it.effect("resolve: from OPEN without a body, mttrSeconds = resolvedAt − createdAt, incident.resolved; twice is 409", () =>
    Effect.gen(function*() {
      const admin = yield* defaultOrg
      const monitor = yield* createMonitor()
      const createdAt = Date.now() - 2 * HOUR - 30_500
      const { incident } = yield* raise(monitor.id, { at: createdAt })
      const resolved = yield* call("POST", `/api/incidents/${incident.id}/resolve`)
      expect(resolved.status).toBe(200)
      const body = resolved.body
      expect(body).toMatchObject({
        status: "RESOLVED",
        acknowledgedAt: null,
        acknowledgedBy: null,
        resolvedBy: { userId: admin.userId, name: "Admin" },
        notes: []
      })
      const expected = Math.floor((Date.parse(body.resolvedAt) - createdAt) / 1000)
      expect(body.mttrSeconds).toBe(expected)
      expect(body.mttrSeconds).toBeGreaterThanOrEqual(2 * 3600 + 30)
      expect(body.mttrSeconds).toBeLessThan(2 * 3600 + 90)

      const events = yield* eventsAbout(incident.id, "incident.resolved")
      expect(events.length).toBe(1)
      expect(events[0]!.data).toEqual({
        incident: { id: incident.id, status: "RESOLVED", mttrSeconds: expected, monitorId: monitor.id, monitor: summaryOf(monitor) },
        resolvedBy: { userId: admin.userId, name: "Admin" },
        note: null
      })

      const twice = yield* call("POST", `/api/incidents/${incident.id}/resolve`, { body: { note: "again" } })
      expect(twice.status).toBe(409)
      expect(twice.body._tag).toBe("Conflict")
      expect(twice.body.message).toContain("RESOLVED")
      // The refused note was not recorded either.
      expect((yield* call("GET", `/api/incidents/${incident.id}`)).body.notes).toEqual([])
      expect((yield* eventsAbout(incident.id, "incident.resolved")).length).toBe(1)
    }))

  it.effect("acknowledge/resolve validate the note: empty, too long or not a string is 400", () =>
    Effect.gen(function*() {
      const monitor = yield* createMonitor()
      const { incident } = yield* raise(monitor.id)
      for (const body of [{ note: "" }, { note: "   " }, { note: "x".repeat(10_001) }, { note: 42 }]) {
        for (const action of ["acknowledge", "resolve"]) {
          const response = yield* call("POST", `/api/incidents/${incident.id}/${action}`, { body })
          expect(response.status, `${action} ${JSON.stringify(body).slice(0, 30)}`).toBe(400)
          expect(response.body._tag).toBe("ValidationError")
          expect(response.body.path).toBe("note")
        }
      }
      const notJson = yield* call("POST", `/api/incidents/${incident.id}/acknowledge`, { rawBody: "{nope" })
      expect(notJson.status).toBe(400)
      // Unknown fields are ignored; a null note is no note.
      const ok = yield* call("POST", `/api/incidents/${incident.id}/acknowledge`, { body: { note: null, colour: "red" } })
      expect(ok.status).toBe(200)
      expect(ok.body.notes).toEqual([])
    }))

  it.effect("notes: 201 with the whole incident, oldest first, by user name; incident.note_added; on any status", () =>
    Effect.gen(function*() {
      const admin = yield* defaultOrg
      const monitor = yield* createMonitor()
      const { incident } = yield* raise(monitor.id)
      const first = yield* call("POST", `/api/incidents/${incident.id}/notes`, { body: { note: "first" } })
      expect(first.status).toBe(201)
      expect(first.body.id).toBe(incident.id)
      expect(first.body.notes).toEqual([{ at: expect.any(String), text: "first", by: "Admin" }])
      yield* call("POST", `/api/incidents/${incident.id}/acknowledge`, { body: { note: "second" } })
      const third = yield* call("POST", `/api/incidents/${incident.id}/notes`, { body: { note: "third" } })
      yield* call("POST", `/api/incidents/${incident.id}/resolve`, { body: { note: "fourth" } })
      const fifth = yield* call("POST", `/api/incidents/${incident.id}/notes`, { body: { note: "x".repeat(10_000) } })
      expect(fifth.status).toBe(201)
      expect(fifth.body.status).toBe("RESOLVED")
      const notes = fifth.body.notes as Array<{ at: string; text: string; by: string }>
      expect(notes.map((n) => n.text.slice(0, 6))).toEqual(["first", "second", "third", "fourth", "xxxxxx"])
      expect(notes.every((n) => n.by === "Admin")).toBe(true)
      const times = notes.map((n) => Date.parse(n.at))
      expect([...times].sort((a, b) => a - b)).toEqual(times)
      expect((yield* call("GET", `/api/incidents/${incident.id}`)).body.notes).toEqual(notes)

      const added = yield* eventsAbout(incident.id, "incident.note_added")
      expect(added.length).toBe(3)
      expect(added[1]!.data).toEqual({
        incident: { id: incident.id, status: "ACKNOWLEDGED", monitorId: monitor.id, monitor: summaryOf(monitor) },
        note: third.body.notes[2],
        addedBy: { userId: admin.userId, name: "Admin", email: "admin@localhost" }
      })

      for (const body of [{}, { note: "" }, { note: " \n " }, { note: "x".repeat(10_001) }, { note: ["a"] }]) {
        const bad = yield* call("POST", `/api/incidents/${incident.id}/notes`, { body })
        expect(bad.status, JSON.stringify(body).slice(0, 40)).toBe(400)
        expect(bad.body.path).toBe("note")
      }
      const unknown = yield* call("POST", `/api/incidents/${crypto.randomUUID()}/notes`, { body: { note: "hi" } })
      expect(unknown.status).toBe(404)
    }))

  it.effect("list: newest first with filters by status, type and monitorId", () =>
    Effect.gen(function*() {
      const m1 = yield* createMonitor()
      const m2 = yield* createMonitor()
      const base = Date.now() - HOUR
      const fail1 = (yield* raise(m1.id, { type: "FAIL", at: base + 1000 })).incident
      const missed1 = (yield* raise(m1.id, { type: "MISSED", at: base + 2000 })).incident
      const late2 = (yield* raise(m2.id, { type: "LATE", severity: "MEDIUM", at: base + 3000 })).incident
      const fail2 = (yield* raise(m2.id, { type: "FAIL", at: base + 4000 })).incident
      yield* call("POST", `/api/incidents/${missed1.id}/acknowledge`)
      yield* call("POST", `/api/incidents/${fail2.id}/resolve`)

      const ids = (response: { body: any }) => response.body.incidents.map((i: any) => i.id)
      const ofM1 = yield* call("GET", `/api/incidents?monitorId=${m1.id}`)
      expect(ofM1.status).toBe(200)
      expect(ids(ofM1)).toEqual([missed1.id, fail1.id])
      expect(ofM1.body.nextCursor).toBeNull()
      const ofM2 = yield* call("GET", `/api/incidents?monitorId=${m2.id}`)
      expect(ids(ofM2)).toEqual([fail2.id, late2.id])

      const all = yield* call("GET", "/api/incidents?limit=500")
      const createdAts = all.body.incidents.map((i: any) => Date.parse(i.createdAt))
      expect([...createdAts].sort((a, b) => b - a)).toEqual(createdAts)
      for (const i of [fail1, missed1, late2, fail2]) expect(ids(all)).toContain(i.id)

      const open = yield* call("GET", "/api/incidents?status=OPEN&limit=500")
      expect(open.body.incidents.every((i: any) => i.status === "OPEN")).toBe(true)
      expect(ids(open)).toEqual(expect.arrayContaining([fail1.id, late2.id]))
      expect(ids(open)).not.toContain(missed1.id)
      const acked = yield* call("GET", `/api/incidents?status=ACKNOWLEDGED&monitorId=${m1.id}`)
      expect(ids(acked)).toEqual([missed1.id])
      const resolved = yield* call("GET", `/api/incidents?status=RESOLVED&monitorId=${m2.id}`)
      expect(ids(resolved)).toEqual([fail2.id])
      const fails = yield* call("GET", "/api/incidents?type=FAIL&limit=500")
      expect(fails.body.incidents.every((i: any) => i.type === "FAIL")).toBe(true)
      expect(ids(fails)).toEqual(expect.arrayContaining([fail1.id, fail2.id]))
      const failsOfM2Open = yield* call("GET", `/api/incidents?type=FAIL&status=OPEN&monitorId=${m2.id}`)
      expect(ids(failsOfM2Open)).toEqual([])
      const unknownMonitor = yield* call("GET", `/api/incidents?monitorId=${crypto.randomUUID()}`)
      expect(unknownMonitor.status).toBe(200)
      expect(unknownMonitor.body).toEqual({ incidents: [], nextCursor: null })
    }))

  it.effect("list rejects bad filters and paging parameters with a 400 naming the parameter", () =>
    Effect.gen(function*() {
      const cases: ReadonlyArray<[string, string]> = [
        ["status=CLOSED", "status"],
        ["status=open", "status"],
        ["type=BROKEN", "type"],
        ["monitorId=not-a-uuid", "monitorId"],
        ["limit=0", "limit"],
        ["limit=501", "limit"],
        ["limit=abc", "limit"],
        ["limit=1.5", "limit"],
        ["cursor=garbage", "cursor"]
      ]
      for (const [query, path] of cases) {
        const response = yield* call("GET", `/api/incidents?${query}`)
        expect(response.status, query).toBe(400)
        expect(response.body._tag).toBe("ValidationError")
        expect(response.body.path, query).toBe(path)
        expect(response.body.message.length).toBeGreaterThan(10)
      }
    }))

  it.effect("cursor paging walks every incident newest first, ties on createdAt broken by id", () =>
    Effect.gen(function*() {
      const monitor = yield* createMonitor()
      const incidents = yield* Incidents
      const base = Date.now() - 5 * HOUR
      const made: Array<{ id: string; at: number }> = []
      for (let i = 0; i < 9; i++) {
        const at = base + i * 60_000
        const { incident } = yield* raise(monitor.id, { type: "FAIL", at })
        made.push({ id: incident.id, at })
        yield* incidents.autoResolve({ monitorId: monitor.id, types: ["FAIL"], at: at + 1000, reason: "a successful run" })
      }
      // Two incidents created at the same instant (different types): ordered by id, descending.
      const tieAt = base + 10 * 60_000
      const tieA = (yield* raise(monitor.id, { type: "MISSED", at: tieAt })).incident
      const tieB = (yield* raise(monitor.id, { type: "LATE", at: tieAt })).incident
      made.push(...[{ id: tieA.id, at: tieAt }, { id: tieB.id, at: tieAt }])
      const expected = [...made].sort((a, b) => b.at - a.at || (a.id < b.id ? 1 : -1)).map((m) => m.id)

      const seen: Array<string> = []
      let cursor: string | null = null
      let pages = 0
      do {
        const query: string = `/api/incidents?monitorId=${monitor.id}&limit=4${cursor === null ? "" : `&cursor=${cursor}`}`
        const page = yield* call("GET", query)
        expect(page.status).toBe(200)
        expect(page.body.incidents.length).toBeLessThanOrEqual(4)
        seen.push(...page.body.incidents.map((i: any) => i.id))
        cursor = page.body.nextCursor
        pages++
      } while (cursor !== null && pages < 10)
      expect(pages).toBe(3)
      expect(seen).toEqual(expected)
      // Auto-resolved incidents carry the system's note and resolvedBy.
      const oldest = yield* call("GET", `/api/incidents/${made[0]!.id}`)
      expect(oldest.body).toMatchObject({
        status: "RESOLVED",
        resolvedBy: { userId: null, name: "system" },
        mttrSeconds: 1,
        notes: [{ text: "a successful run", by: "system", at: new Date(made[0]!.at + 1000).toISOString() }]
      })
      const defaults = yield* call("GET", `/api/incidents?monitorId=${monitor.id}`)
      expect(defaults.body.incidents.length).toBe(11)
      expect(defaults.body.nextCursor).toBeNull()
    }))

  it.effect("autoResolve resolves the active incidents of the given types as system, with incident.resolved each", () =>
    Effect.gen(function*() {
      const incidents = yield* Incidents
      const monitor = yield* createMonitor()
      const t0 = Date.now() - HOUR
      const fail = (yield* raise(monitor.id, { type: "FAIL", at: t0 })).incident
      const missed = (yield* raise(monitor.id, { type: "MISSED", at: t0 })).incident
      const late = (yield* raise(monitor.id, { type: "LATE", at: t0 })).incident
      yield* call("POST", `/api/incidents/${missed.id}/acknowledge`)
      const resolved = yield* incidents.autoResolve({
        monitorId: monitor.id,
        types: ["FAIL", "MISSED"],
        at: t0 + 125_000,
        reason: "the next run succeeded"
      })
      expect(resolved.map((i) => i.id).sort()).toEqual([fail.id, missed.id].sort())
      for (const i of resolved) {
        expect(i).toMatchObject({
          status: "RESOLVED",
          resolvedAt: new Date(t0 + 125_000).toISOString(),
          resolvedBy: { userId: null, name: "system" },
          mttrSeconds: 125
        })
        expect(i.notes.at(-1)).toEqual({ at: new Date(t0 + 125_000).toISOString(), text: "the next run succeeded", by: "system" })
        const events = yield* eventsAbout(i.id, "incident.resolved")
        expect(events.map((e) => e.data)).toEqual([{
          incident: { id: i.id, status: "RESOLVED", mttrSeconds: 125, monitorId: monitor.id, monitor: summaryOf(monitor) },
          resolvedBy: { userId: null, name: "system" },
          note: "the next run succeeded"
        }])
      }
      expect((yield* call("GET", `/api/incidents/${late.id}`)).body.status).toBe("OPEN")
      // Nothing active of those types any more: a no-op.
      expect(yield* incidents.autoResolve({ monitorId: monitor.id, types: ["FAIL", "MISSED"], at: Date.now(), reason: "x" })).toEqual([])
      expect(yield* incidents.autoResolve({ monitorId: monitor.id, types: [], at: Date.now(), reason: "x" })).toEqual([])
    }))

  it.effect("another organization's incident is 404 everywhere; a non-UUID id is 404", () =>
    Effect.gen(function*() {
      const monitor = yield* createMonitor()
      const { incident } = yield* raise(monitor.id)
      const other = yield* createOrganization("incidents-other", "admin")
      const asOther = { token: other.token }
      expect((yield* call("GET", `/api/incidents/${incident.id}`, asOther)).status).toBe(404)
      for (const action of ["acknowledge", "resolve"]) {
        const response = yield* call("POST", `/api/incidents/${incident.id}/${action}`, asOther)
        expect(response.status).toBe(404)
        expect(response.body._tag).toBe("NotFound")
      }
      expect((yield* call("POST", `/api/incidents/${incident.id}/notes`, { ...asOther, body: { note: "hi" } })).status).toBe(404)
      const list = yield* call("GET", "/api/incidents", asOther)
      expect(list.body).toEqual({ incidents: [], nextCursor: null })
      // Filtering by another organization's monitor matches nothing.
      const byMonitor = yield* call("GET", `/api/incidents?monitorId=${monitor.id}`, asOther)
      expect(byMonitor.body).toEqual({ incidents: [], nextCursor: null })
      // Untouched.
      expect((yield* call("GET", `/api/incidents/${incident.id}`)).body).toMatchObject({ status: "OPEN", notes: [] })

      for (const id of ["not-a-uuid", "123", crypto.randomUUID()]) {
        expect((yield* call("GET", `/api/incidents/${id}`)).status).toBe(404)
        expect((yield* call("POST", `/api/incidents/${id}/acknowledge`)).status).toBe(404)
        expect((yield* call("POST", `/api/incidents/${id}/resolve`)).status).toBe(404)
      }
    }))

  it.effect("a read token lists and reads but cannot acknowledge, resolve or add notes (403); a ping token reads nothing", () =>
    Effect.gen(function*() {
      const monitor = yield* createMonitor()
      const { incident } = yield* raise(monitor.id)
      const read = yield* createToken("read")
      expect((yield* call("GET", "/api/incidents", { token: read.token })).status).toBe(200)
      expect((yield* call("GET", `/api/incidents/${incident.id}`, { token: read.token })).status).toBe(200)
      for (const action of ["acknowledge", "resolve"]) {
        const response = yield* call("POST", `/api/incidents/${incident.id}/${action}`, { token: read.token })
        expect(response.status).toBe(403)
        expect(response.body._tag).toBe("Forbidden")
      }
      expect((yield* call("POST", `/api/incidents/${incident.id}/notes`, { token: read.token, body: { note: "x" } })).status).toBe(403)
      const ping = yield* createToken("ping")
      expect((yield* call("GET", "/api/incidents", { token: ping.token })).status).toBe(403)
      expect((yield* call("GET", "/api/incidents", { token: null })).status).toBe(401)
      // A write token may change incidents.
      const write = yield* createToken("write")
      expect((yield* call("POST", `/api/incidents/${incident.id}/acknowledge`, { token: write.token })).status).toBe(200)
      expect((yield* call("GET", `/api/incidents/${incident.id}`)).body.status).toBe("ACKNOWLEDGED")
    }))

  it.effect("wrong method on an incident path is 405", () =>
    Effect.gen(function*() {
      const monitor = yield* createMonitor()
      const { incident } = yield* raise(monitor.id)
      expect((yield* call("DELETE", `/api/incidents/${incident.id}`)).status).toBe(405)
      expect((yield* call("GET", `/api/incidents/${incident.id}/acknowledge`)).status).toBe(405)
    }))

  it.effect("20 concurrent raises of the same (monitor, type) make exactly one incident with 20 occurrences", () =>
    Effect.gen(function*() {
      const monitor = yield* createMonitor()
      const base = Date.now() - HOUR
      const results = yield* Effect.all(
        Array.from({ length: 20 }, (_, i) => raise(monitor.id, { type: "FAIL", at: base + i * 1000 })),
        { concurrency: "unbounded" }
      )
      expect(new Set(results.map((r) => r.incident.id)).size).toBe(1)
      expect(results.filter((r) => r.created).length).toBe(1)
      const list = yield* call("GET", `/api/incidents?monitorId=${monitor.id}`)
      expect(list.body.incidents.length).toBe(1)
      expect(list.body.incidents[0]).toMatchObject({ occurrences: 20, lastOccurredAt: new Date(base + 19_000).toISOString() })
      expect((yield* eventsAbout(list.body.incidents[0].id, "incident.opened")).length).toBe(1)
    }))

  it.effect("raise joins the caller's transaction: a rollback leaves neither the incident nor its event", () =>
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const monitor = yield* createMonitor()
      let raisedId = ""
      const outcome = yield* sql.withTransaction(
        Effect.gen(function*() {
          const { incident } = yield* raise(monitor.id)
          raisedId = incident.id
          expect((yield* eventsAbout(incident.id)).length).toBe(1)
          return yield* Effect.fail("boom" as const)
        })
      ).pipe(Effect.flip)
      expect(outcome).toBe("boom")
      expect(raisedId).not.toBe("")
      expect((yield* call("GET", `/api/incidents/${raisedId}`)).status).toBe(404)
      expect((yield* eventsAbout(raisedId)).length).toBe(0)
      const rows = yield* sql<{ n: number }>`select count(*)::int as n from incidents where monitor_id = ${monitor.id}`
      expect(rows[0]!.n).toBe(0)
    }))

  it.effect("the listener hears user acknowledgements and resolutions after commit, not raises or auto-resolves", () =>
    Effect.gen(function*() {
      const heard: Array<IncidentChange> = []
      const listener = Layer.succeed(IncidentListener, { changed: (c) => Effect.sync(() => void heard.push(c)) })
      // Incidents asks for its listener where a user's change is made, not when it is built.
      const local = Layer.merge(Incidents.Default, listener)
      const admin = yield* defaultOrg
      const principal: Principal = {
        tokenId: crypto.randomUUID(),
        orgId: admin.orgId,
        scope: "write",
        userId: admin.userId,
        userName: admin.userName,
        userEmail: admin.userEmail
      }
      const monitor = yield* createMonitor()
      yield* Effect.gen(function*() {
        const incidents = yield* Incidents
        const { incident } = yield* incidents.raise({
          orgId: admin.orgId, monitorId: monitor.id, type: "LATE", severity: "MEDIUM", at: Date.now(), runId: null, details: {}
        })
        expect(heard).toEqual([])
        const acked = yield* incidents.acknowledge(principal, incident.id, "on it")
        expect(heard).toEqual([{ monitorId: monitor.id, type: "LATE", status: "ACKNOWLEDGED", at: Date.parse(acked.acknowledgedAt!) }])
        yield* incidents.resolve(principal, incident.id)
        expect(heard.map((h) => h.status)).toEqual(["ACKNOWLEDGED", "RESOLVED"])
        const failed = yield* incidents.acknowledge(principal, incident.id).pipe(Effect.flip)
        expect(failed._tag).toBe("Conflict")
        expect(heard.length).toBe(2)
        const second = yield* incidents.raise({
          orgId: admin.orgId, monitorId: monitor.id, type: "LATE", severity: "MEDIUM", at: Date.now(), runId: null, details: {}
        })
        yield* incidents.autoResolve({ monitorId: monitor.id, types: ["LATE"], at: Date.now(), reason: "run finished" })
        expect(heard.length).toBe(2)
        expect(second.created).toBe(true)
      }).pipe(Effect.provide(local))
    }))

  it.effect("the service's engine hears a user's acknowledgement and resolution (the actor of the incident's monitor)", () =>
    Effect.gen(function*() {
      const engine = yield* Engine
      const monitor = yield* createMonitor()
      const { incident } = yield* raise(monitor.id, { type: "LATE", severity: "MEDIUM" })
      const activeIncidents = Effect.gen(function*() {
        yield* engine.idle
        return Option.getOrThrow(engine.stateOf(monitor.id)).activeIncidents.map((a) => [a.type, a.status])
      })
      expect((yield* call("POST", `/api/incidents/${incident.id}/acknowledge`, { body: {} })).status).toBe(200)
      expect(yield* activeIncidents).toEqual([["LATE", "ACKNOWLEDGED"]])
      expect((yield* call("POST", `/api/incidents/${incident.id}/resolve`, { body: {} })).status).toBe(200)
      expect(yield* activeIncidents).toEqual([])
    }))
})
