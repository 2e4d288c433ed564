import { Effect } from "effect"
import { monitorIdParam } from "../Domain/Ids.js"
import type { Severity } from "../Engine/Model.js"
import { type EventRow, EventsRepo } from "./EventsRepo.js"

/**
 * The outbox of domain events (docs/events.md). Every change that outbound webhooks report writes
 * one row to `events` in the same transaction as the change itself; the delivery worker reads the
 * table by `seq`. Payload shapes are built in ./Payloads.ts.
 */

/** Event kinds of the interface spec, plus the maintenance ones (docs/decisions.md#maintenance-windows). */
export const EventTypes = [
  "incident.opened",
  "incident.acknowledged",
  "incident.resolved",
  "incident.note_added",
  "monitor.created",
  "monitor.updated",
  "monitor.deleted",
  "ping.received",
  "maintenance.upcoming",
  "maintenance.started",
  "maintenance.ended"
] as const
export type EventType = (typeof EventTypes)[number]

export interface EventInput {
  readonly orgId: string
  readonly type: EventType
  readonly data: Record<string, unknown>
  /** The monitors the event is about (webhook `filters.monitorIds`). */
  readonly monitorIds: ReadonlyArray<string>
  /** The incident's severity (webhook `filters.severity`); omit for other events. */
  readonly severity?: Severity | null | undefined
  /** When it happened: epoch milliseconds or a Date (from the caller's Clock). */
  readonly at: number | Date
}

/** What a webhook receiver gets (interface spec, Events). */
export interface EventEnvelope {
  readonly event: string
  readonly id: string
  readonly createdAt: string
  readonly data: Record<string, unknown>
}

/** An event as stored: the envelope plus what consumers and filters need. */
export interface StoredEvent extends EventEnvelope {
  readonly seq: number
  readonly orgId: string
  readonly monitorIds: ReadonlyArray<string>
  readonly severity: Severity | null
}

export const toStoredEvent = (row: EventRow): StoredEvent => ({
  event: row.type,
  id: row.id,
  createdAt: row.created_at.toISOString(),
  data: row.data,
  seq: row.seq,
  orgId: row.org_id,
  monitorIds: row.monitor_ids,
  severity: row.severity as Severity | null
})

/** The exact body a webhook delivery posts. */
export const envelopeOf = (event: StoredEvent): EventEnvelope => ({
  event: event.event,
  id: event.id,
  createdAt: event.createdAt,
  data: event.data
})

export interface ListEventsInput {
  readonly after?: number | undefined
  readonly before?: number | undefined
  readonly limit: number
  readonly type?: EventType | undefined
  readonly monitorId?: string | undefined
}

export class Events extends Effect.Service<Events>()("jobmon/Events", {
  dependencies: [EventsRepo.Default],
  effect: Effect.gen(function*() {
    const repo = yield* EventsRepo

    const toRow = (input: EventInput) => ({
      orgId: input.orgId,
      type: input.type,
      createdAt: typeof input.at === "number" ? new Date(input.at) : input.at,
      data: input.data,
      monitorIds: input.monitorIds,
      severity: input.severity ?? null
    })

    /**
     * Records events with the ambient SqlClient: inside `sql.withTransaction` they commit or roll
     * back with the caller's change. Call it LAST in the transaction: it takes the events lock,
     * which is held until commit (seq order = commit order), so nothing slow should follow it.
     */
    const recordMany = (inputs: ReadonlyArray<EventInput>) =>
      Effect.map(repo.insertMany(inputs.map(toRow)), (rows) => rows.map(toStoredEvent))

    /** Records one event; see recordMany. */
    const record = (input: EventInput) => Effect.map(recordMany([input]), (events) => events[0]!)

    /** An organization's events: with `after`, seq > after oldest first; otherwise newest first. */
    const list = (orgId: string, input: ListEventsInput) =>
      Effect.gen(function*() {
        yield* monitorIdParam(input.monitorId)
        const rows = yield* repo.list({
          orgId,
          after: input.after,
          before: input.before,
          limit: input.limit,
          type: input.type,
          monitorId: input.monitorId
        })
        return rows.map(toStoredEvent)
      })

    return { record, recordMany, list } as const
  })
}) {}
