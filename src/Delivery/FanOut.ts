import { SqlClient } from "@effect/sql"
import { Clock, Effect } from "effect"
import type { EventRow } from "../Events/EventsRepo.js"
import { alertRulesMatch } from "./AlertRules.js"
import { MAINTENANCE_EVENTS } from "./Alert.js"
import { type ChannelEvent, channelEventOf, type IncidentFacts, type MonitorFacts } from "./Channel.js"
import { ChannelRegistry, type Registered, type Routing } from "./ChannelRegistry.js"
import { DeliveriesRepo, type NewDelivery } from "./DeliveriesRepo.js"
import { DestinationsRepo, type DestinationTable } from "./DestinationsRepo.js"
import { Reminders } from "./Reminders.js"

/**
 * Fan-out (docs/delivery.md, "How it works"): the `events` table after the cursor into
 * `webhook_deliveries` rows, one per destination whose channel has a message for the event (its
 * filters, rules, channels), each with the exact bytes it will post, and the cursor moved on, in
 * one transaction. `unique (webhook_id, event_id)` makes it idempotent. A destination receives only
 * events recorded after it was created. ping.received deliveries are made by the ping feed.
 *
 * Alert channels (the channels resource) are routed here, by their rules (AlertRules.ts), before
 * their channel makes its message; an incident.opened alert to a channel with reminders schedules
 * them, and an acknowledgement or resolution ends them (Reminders.ts), in the same transaction.
 * Maintenance notices reach alert channels by the window's monitors (read once per notice: ids,
 * names, tags), which their rules judge (docs/alerts.md#maintenance-notices).
 */

const FANOUT_BATCH = 1000

/** A destination of one kind, as the fan-out reads it. */
interface Target<D> {
  readonly id: string
  readonly orgId: string
  /** The newest event when it was created. */
  readonly afterSeq: number
  readonly destination: D
  /** Alert channels' rules and reminders. */
  readonly routing: Routing | undefined
}

/** Reminders to schedule: channels alerted of an incident's opening that have reminders. */
type Alerted = Array<{ incidentId: string; channelId: string; everyMinutes: number }>

/** An acknowledgement or a resolution ends the incident's reminders. */
const stopsReminders = (event: EventRow): Array<{ id: string; why: "acknowledged" | "resolved" }> => {
  if (event.type !== "incident.acknowledged" && event.type !== "incident.resolved") return []
  const id = (event.data as { incident?: { id?: string } }).incident?.id
  return id === undefined ? [] : [{ id, why: event.type === "incident.acknowledged" ? "acknowledged" : "resolved" }]
}

export class FanOut extends Effect.Service<FanOut>()("jobmon/FanOut", {
  effect: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const deliveries = yield* DeliveriesRepo
    const destinations = yield* DestinationsRepo
    const registry = yield* ChannelRegistry
    const reminders = yield* Reminders

    /** The incident behind an event (its data names it), or undefined when it names none or it is gone. */
    const incidentOf = (event: EventRow) => {
      const incidentId = (event.data as { incident?: { id?: string } }).incident?.id
      return incidentId === undefined ? Effect.succeed(undefined) : deliveries.incidentFacts(incidentId)
    }

    /** A maintenance notice's monitors (the window's), to route it to alert channels and name them. */
    const monitorsOf = (event: EventRow) => {
      const ids = (event.data as { window?: { monitorIds?: ReadonlyArray<string> } }).window?.monitorIds ?? []
      return deliveries.monitorFacts(event.org_id, ids)
    }

    /** The kind's destinations in these organizations that take new messages. */
    const audienceOf = <T extends DestinationTable, D>(kind: Registered<T, D>, orgIds: ReadonlyArray<string>) =>
      Effect.map(destinations.audienceOf(kind, orgIds), (rows) =>
        rows.map((row): Target<D> => ({
          id: row.id,
          orgId: row.org_id,
          afterSeq: Number(row.after_seq),
          destination: kind.destinationOf(row),
          routing: kind.routingOf?.(row)
        })))

    /**
     * One kind's messages for the events: its destinations in the event's organization created
     * before it; the incident loaded (once per event) only when one of them could take it.
     */
    const messagesOf = <T extends DestinationTable, D>(
      kind: Registered<T, D>,
      events: ReadonlyArray<EventRow>,
      orgIds: ReadonlyArray<string>,
      incidents: Map<string, IncidentFacts | undefined>,
      monitors: Map<string, ReadonlyArray<MonitorFacts>>,
      rows: Array<NewDelivery>,
      alerted: Alerted
    ) =>
      Effect.gen(function*() {
        const audience = yield* audienceOf(kind, orgIds)
        for (const row of events) {
          const seq = Number(row.seq)
          const targets = audience.filter((t) => t.orgId === row.org_id && seq > t.afterSeq)
          if (targets.length === 0) continue
          let event: ChannelEvent
          if (kind.channel.incidentEvents.includes(row.type)) {
            if (!incidents.has(row.id)) incidents.set(row.id, yield* incidentOf(row))
            event = channelEventOf(row, incidents.get(row.id))
          } else if (kind.routingOf !== undefined && (MAINTENANCE_EVENTS as ReadonlyArray<string>).includes(row.type)) {
            // alert channels: a maintenance notice is routed by the window's monitors
            if (!monitors.has(row.id)) monitors.set(row.id, yield* monitorsOf(row))
            event = channelEventOf(row, undefined, monitors.get(row.id))
          } else {
            event = channelEventOf(row)
          }
          for (const target of targets) {
            if (target.routing !== undefined && !alertRulesMatch(target.routing.rules, event)) continue
            const body = kind.channel.messageFor(target.destination, event)
            if (body === undefined) continue
            if (row.type === "incident.opened" && target.routing?.reminders != null && event.incident !== undefined) {
              alerted.push({ incidentId: event.incident.id, channelId: target.id, everyMinutes: target.routing.reminders.everyMinutes })
            }
            rows.push({
              [kind.column]: target.id,
              event_id: row.id,
              event_seq: seq,
              event_type: row.type,
              body
            })
          }
        }
      })

    /** One batch of events after the cursor into deliveries, in one transaction; answers how many events. */
    const fanOutBatch = Effect.gen(function*() {
      const now = new Date(yield* Clock.currentTimeMillis)
      return yield* sql.withTransaction(Effect.gen(function*() {
        const after = yield* deliveries.lockCursor
        const events = yield* deliveries.eventsAfter(after, FANOUT_BATCH)
        if (events.length === 0) return 0
        const orgIds = [...new Set(events.map((e) => e.org_id))]
        const rows: Array<NewDelivery> = []
        const alerted: Alerted = []
        const incidents = new Map<string, IncidentFacts | undefined>()
        const monitors = new Map<string, ReadonlyArray<MonitorFacts>>()
        for (const kind of registry.all) yield* messagesOf(kind, events, orgIds, incidents, monitors, rows, alerted)
        if (rows.length > 0) yield* deliveries.insertDeliveries(rows, now)
        yield* reminders.schedule(alerted, now.getTime())
        yield* reminders.stop(events.flatMap(stopsReminders), now.getTime())
        yield* deliveries.moveCursor(Number(events[events.length - 1]!.seq))
        return events.length
      }))
    }).pipe(Effect.orDie, Effect.withSpan("FanOut.fanOutBatch"))

    return { fanOutBatch, batchSize: FANOUT_BATCH } as const
  }),
  dependencies: [DeliveriesRepo.Default, DestinationsRepo.Default, ChannelRegistry.Default, Reminders.Default]
}) {}
