import { SqlClient } from "@effect/sql"
import { Clock, Effect } from "effect"
import type { Principal } from "../Auth/Principal.js"
import { cursorParam, pageOf } from "../Domain/Cursor.js"
import { Conflict, notFound } from "../Domain/Errors.js"
import { isUuid, monitorIdParam } from "../Domain/Ids.js"
import { iso } from "../Domain/Instant.js"
import { DEFAULT_PAGE_LIMIT } from "../Domain/Schemas.js"
import type { IncidentStatus, IncidentType, Severity } from "../Engine/Model.js"
import { type EventInput, Events } from "../Events/Events.js"
import {
  type Actor,
  incidentAcknowledged,
  incidentNoteAdded,
  incidentOpened,
  incidentResolved,
  type MonitorSummary,
  SYSTEM
} from "../Events/Payloads.js"
import type { Incident } from "./Api.js"
import { type IncidentRow, IncidentsRepo, type NoteRow } from "./IncidentsRepo.js"
import { IncidentListener } from "./Listener.js"

export interface RaiseInput {
  readonly orgId: string
  readonly monitorId: string
  readonly type: IncidentType
  readonly severity: Severity
  /** Epoch milliseconds: the moment it occurred (createdAt of a new incident). */
  readonly at: number
  readonly runId: string | null
  readonly details: Readonly<Record<string, unknown>>
}

export interface AutoResolveInput {
  readonly monitorId: string
  readonly types: ReadonlyArray<IncidentType>
  /** Epoch milliseconds. */
  readonly at: number
  /** Recorded as a note by "system" and sent as the event's note. */
  readonly reason: string
}

export interface ListInput {
  readonly status?: IncidentStatus | undefined
  readonly type?: IncidentType | undefined
  readonly monitorId?: string | undefined
  readonly limit?: number | undefined
  readonly cursor?: string | undefined
}

/** resolvedAt − createdAt in whole seconds (rounded down). */
export const mttrSeconds = (row: Pick<IncidentRow, "created_at" | "resolved_at">) =>
  row.resolved_at === null ? null : Math.max(0, Math.floor((row.resolved_at.getTime() - row.created_at.getTime()) / 1000))

export const toIncident = (row: IncidentRow, notes: ReadonlyArray<NoteRow>): Incident => ({
  id: row.id,
  type: row.type,
  severity: row.severity,
  status: row.status,
  monitorId: row.monitor_id,
  createdAt: row.created_at.toISOString(),
  acknowledgedAt: iso(row.acknowledged_at),
  acknowledgedBy: row.acknowledged_at === null
    ? null
    : { userId: row.acknowledged_by, name: row.acknowledged_by_name ?? "", email: row.acknowledged_by_email },
  resolvedAt: iso(row.resolved_at),
  resolvedBy: row.resolved_at === null ? null : { userId: row.resolved_by, name: row.resolved_by_name ?? "system" },
  mttrSeconds: mttrSeconds(row),
  details: row.details,
  occurrences: row.occurrences,
  lastOccurredAt: row.last_occurred_at.toISOString(),
  runId: row.run_id,
  notes: notes.filter((n) => n.incident_id === row.id).map((n) => ({ at: n.at.toISOString(), text: n.text, by: n.user_name }))
})

/** FAIL details always carry the four keys of the spec (null when unknown); other types keep theirs. */
export const normalizeDetails = (type: IncidentType, details: Readonly<Record<string, unknown>>): Record<string, unknown> => {
  if (type !== "FAIL") return { ...details }
  const { durationMs, exitCode, expectedDurationMs, output, ...rest } = details
  return {
    exitCode: exitCode ?? null,
    durationMs: durationMs ?? null,
    output: output ?? null,
    expectedDurationMs: expectedDurationMs ?? null,
    ...rest
  }
}

/** The token's owner; a token without a user is named after its id. */
export const actorOf = (principal: Principal): Actor => ({
  userId: principal.userId,
  name: principal.userName ?? `token ${principal.tokenId}`,
  email: principal.userEmail
})

const incidentNotFound = (id: string) => notFound("Incident", id)

export class Incidents extends Effect.Service<Incidents>()("jobmon/Incidents", {
  dependencies: [IncidentsRepo.Default, Events.Default],
  effect: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const repo = yield* IncidentsRepo
    const events = yield* Events

    /** Tells the listener (the engine) of a user's change, once it committed. */
    const notify = (row: IncidentRow, at: number) =>
      Effect.flatMap(IncidentListener, (listener) =>
        listener.changed({ monitorId: row.monitor_id, type: row.type, status: row.status, at }).pipe(
          Effect.catchAllCause((cause) => Effect.logWarning(`incident listener failed for incident ${row.id}`, cause))
        ))

    const withNotes = (row: IncidentRow) => Effect.map(repo.notesOf([row.id]), (notes) => toIncident(row, notes))

    const summaryOf = (monitorId: string) =>
      Effect.map(repo.monitorSummary(monitorId), (m): MonitorSummary =>
        m === undefined
          ? { id: monitorId, name: "", schedule: { type: "", expression: "" } }
          : { id: m.id, name: m.name, schedule: { type: m.schedule_type, expression: m.schedule_expression } })

    /**
     * Opens an incident of (monitor, type), or counts one more occurrence of the active one, in one
     * transaction with its incident.opened event. Repeats write no event. Race-safe: the partial
     * unique index decides, so concurrent raises open exactly one.
     */
    const raise = (input: RaiseInput) =>
      Effect.gen(function*() {
        const row = yield* sql.withTransaction(
          Effect.gen(function*() {
            const row = yield* repo.upsertActive({
              orgId: input.orgId,
              monitorId: input.monitorId,
              type: input.type,
              severity: input.severity,
              at: new Date(input.at),
              runId: input.runId,
              details: normalizeDetails(input.type, input.details)
            })
            if (row.created) {
              const monitor = yield* summaryOf(input.monitorId)
              yield* events.record(incidentOpened(row.org_id, toIncident(row, []), monitor))
            }
            return row
          })
        ).pipe(Effect.orDie)
        const incident = row.created ? toIncident(row, []) : yield* withNotes(row)
        return { incident, created: row.created }
      }).pipe(Effect.withSpan("Incidents.raise"))

    /**
     * Resolves the monitor's active incidents of these types as "system" (the reason becomes a
     * note and the event's note), with one incident.resolved event each. Answers what it resolved.
     */
    const autoResolve = (input: AutoResolveInput) =>
      sql.withTransaction(
        Effect.gen(function*() {
          const at = new Date(input.at)
          const rows = yield* repo.resolveActive(input.monitorId, input.types, at)
          if (rows.length === 0) return [] as ReadonlyArray<Incident>
          const reason = input.reason.trim()
          if (reason !== "") {
            yield* repo.insertNotes(rows.map((r) => ({ incidentId: r.id, at: r.resolved_at!, text: reason })), null, SYSTEM.name)
          }
          const notes = yield* repo.notesOf(rows.map((r) => r.id))
          const incidents = rows.map((row) => toIncident(row, notes))
          // every row is of input.monitorId
          const monitor = yield* summaryOf(input.monitorId)
          yield* events.recordMany(
            rows.map((row, i) => incidentResolved(row.org_id, incidents[i]!, monitor, SYSTEM, reason === "" ? null : reason))
          )
          return incidents
        })
      ).pipe(Effect.orDie, Effect.withSpan("Incidents.autoResolve"))

    const get = (orgId: string, id: string) =>
      Effect.gen(function*() {
        if (!isUuid(id)) return yield* incidentNotFound(id)
        const row = yield* repo.findById(orgId, id)
        if (row === undefined) return yield* incidentNotFound(id)
        return yield* withNotes(row)
      })

    const list = (orgId: string, input: ListInput) =>
      Effect.gen(function*() {
        yield* monitorIdParam(input.monitorId)
        // A page ends at an incident's (createdAt, id).
        const cursor = yield* cursorParam(input.cursor)
        const limit = input.limit ?? DEFAULT_PAGE_LIMIT
        const rows = yield* repo.list({
          orgId,
          status: input.status,
          type: input.type,
          monitorId: input.monitorId,
          cursor: cursor === undefined ? undefined : { createdAt: cursor.at, id: cursor.id },
          limit: limit + 1
        })
        const { page, nextCursor } = pageOf(rows, limit, (row) => ({ at: row.created_at, id: row.id }))
        const notes = yield* repo.notesOf(page.map((r) => r.id))
        return { incidents: page.map((row) => toIncident(row, notes)), nextCursor }
      })

    /** A user transition in one transaction: lock, check, change, note, event; then the listener. */
    const transition = (
      principal: Principal,
      id: string,
      note: string | null | undefined,
      change: (row: IncidentRow, at: Date, by: Actor) => Effect.Effect<IncidentRow | undefined, Conflict>,
      eventOf: (orgId: string, incident: Incident, monitor: MonitorSummary, by: Actor, note: string | null) => EventInput,
      noteAt: (row: IncidentRow) => Date
    ) =>
      Effect.gen(function*() {
        if (!isUuid(id)) return yield* incidentNotFound(id)
        const now = yield* Clock.currentTimeMillis
        const by = actorOf(principal)
        const text = note === null || note === undefined ? null : note.trim()
        const row = yield* sql.withTransaction(
          Effect.gen(function*() {
            const current = yield* repo.lock(principal.orgId, id)
            if (current === undefined) return yield* incidentNotFound(id)
            const row = yield* change(current, new Date(now), by)
            if (row === undefined) return yield* incidentNotFound(id)
            if (text !== null) yield* repo.insertNote(row.id, noteAt(row), text, by.userId, by.name)
            const incident = yield* withNotes(row)
            const monitor = yield* summaryOf(row.monitor_id)
            yield* events.record(eventOf(principal.orgId, incident, monitor, by, text))
            return row
          })
        ).pipe(Effect.catchTag("SqlError", (e) => Effect.die(e)))
        yield* notify(row, now)
        return yield* withNotes(row)
      })

    /** OPEN → ACKNOWLEDGED (409 from any other status). */
    const acknowledge = (principal: Principal, id: string, note?: string | null) =>
      transition(
        principal,
        id,
        note,
        (current, at, by) =>
          current.status === "OPEN"
            ? repo.acknowledge(principal.orgId, current.id, at, by)
            : Effect.fail(
              new Conflict({
                message: `Incident ${current.id} is ${current.status}; only an OPEN incident can be acknowledged.`
              })
            ),
        incidentAcknowledged,
        (row) => row.acknowledged_at!
      ).pipe(Effect.withSpan("Incidents.acknowledge"))

    /** OPEN or ACKNOWLEDGED → RESOLVED (409 when already resolved: it never reopens). */
    const resolve = (principal: Principal, id: string, note?: string | null) =>
      transition(
        principal,
        id,
        note,
        (current, at, by) =>
          current.status !== "RESOLVED"
            ? repo.resolve(principal.orgId, current.id, at, by)
            : Effect.fail(
              new Conflict({
                message: `Incident ${current.id} is already RESOLVED; a resolved incident cannot be resolved again or reopened.`
              })
            ),
        incidentResolved,
        (row) => row.resolved_at!
      ).pipe(Effect.withSpan("Incidents.resolve"))

    /** A note on an incident of any status, with its incident.note_added event. */
    const addNote = (principal: Principal, id: string, note: string) =>
      Effect.gen(function*() {
        if (!isUuid(id)) return yield* incidentNotFound(id)
        const at = new Date(yield* Clock.currentTimeMillis)
        const by = actorOf(principal)
        const text = note.trim()
        return yield* sql.withTransaction(
          Effect.gen(function*() {
            const row = yield* repo.findById(principal.orgId, id)
            if (row === undefined) return yield* incidentNotFound(id)
            const stored = yield* repo.insertNote(row.id, at, text, by.userId, by.name)
            const incident = yield* withNotes(row)
            const monitor = yield* summaryOf(row.monitor_id)
            yield* events.record(
              incidentNoteAdded(
                principal.orgId,
                incident,
                monitor,
                { at: stored.at.toISOString(), text: stored.text, by: stored.user_name },
                by
              )
            )
            return incident
          })
        ).pipe(Effect.catchTag("SqlError", (e) => Effect.die(e)))
      }).pipe(Effect.withSpan("Incidents.addNote"))

    return { raise, autoResolve, get, list, acknowledge, resolve, addNote } as const
  })
}) {}
