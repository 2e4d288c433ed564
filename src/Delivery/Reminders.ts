import { SqlClient } from "@effect/sql"
import { Clock, Effect } from "effect"
import { createHash } from "node:crypto"
import type { Severity } from "../Engine/Model.js"
import { MaintenanceCheck } from "../Engine/Engine.js"
import { REMINDER_EVENT } from "./Alert.js"
import { alertRulesMatch } from "./AlertRules.js"
import type { ChannelEvent, IncidentFacts } from "./Channel.js"
import { ChannelRegistry, routingOfRow } from "./ChannelRegistry.js"
import { DeliveriesRepo, type NewDelivery } from "./DeliveriesRepo.js"
import { RemindersRepo } from "./RemindersRepo.js"

/**
 * Reminders (docs/alerts.md#reminders): while an incident stays OPEN (not acknowledged), a channel
 * with `reminders: {everyMinutes, max}` is reminded every `everyMinutes` minutes, at most `max`
 * times. Acknowledging or resolving the incident ends them; while a maintenance window covers the
 * monitor (or the channel is invalid) they are skipped, and the next is due `everyMinutes` later.
 *
 * Durable and safe with several instances: each (incident, channel) is a row of `alert_reminders`
 * written in the fan-out's transaction of the incident.opened alert. The worker takes due rows with
 * FOR UPDATE SKIP LOCKED and, in the same transaction, writes reminder n as a delivery (its
 * event_id derived from incident and n, unique per channel) and moves the row on: a reminder is
 * sent once, whichever instance takes it, and none is lost in a restart. Times come from the Clock:
 * the first reminder is due `everyMinutes` after the fan-out of the opened alert, each next one
 * `everyMinutes` after the one before was made (after downtime, one reminder, not a burst).
 */

/** Due reminders looked at in one transaction. */
const BATCH = 100
const MINUTE_MS = 60_000

/** The event_id of reminder `n` of an incident: a UUID (version 8) hashed from both; unique per (channel, event). */
export const reminderEventId = (incidentId: string, n: number): string => {
  const hex = createHash("sha256").update(`jobmon-reminder:${incidentId.toLowerCase()}:${n}`).digest("hex")
  const variant = ((Number.parseInt(hex[16]!, 16) & 0x3) | 0x8).toString(16)
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-8${hex.slice(13, 16)}-${variant}${hex.slice(17, 20)}-${hex.slice(20, 32)}`
}

/** Reminder `n` of `max` about an incident, as channels read an event. */
export const reminderEvent = (incident: IncidentFacts, orgId: string, n: number, max: number, at: number): ChannelEvent => {
  const data = { incident: { id: incident.id, status: incident.status, monitorId: incident.monitorId }, reminder: { n, max } }
  const event = {
    event: REMINDER_EVENT,
    id: reminderEventId(incident.id, n),
    createdAt: new Date(at).toISOString(),
    data,
    seq: 0,
    orgId,
    monitorIds: [incident.monitorId],
    severity: incident.severity as Severity
  }
  return { ...event, envelope: () => JSON.stringify({ event: event.event, id: event.id, createdAt: event.createdAt, data }), incident }
}

export class Reminders extends Effect.Service<Reminders>()("jobmon/Reminders", {
  effect: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const repo = yield* RemindersRepo
    const deliveries = yield* DeliveriesRepo
    const registry = yield* ChannelRegistry
    const maintenance = yield* MaintenanceCheck

    /**
     * In the fan-out's transaction: the channels that were alerted of an incident's opening and have
     * reminders get their first one due `everyMinutes` from `now`.
     */
    const schedule = (alerted: ReadonlyArray<{ incidentId: string; channelId: string; everyMinutes: number }>, now: number) =>
      repo.schedule(alerted.map((a) => ({
        incident_id: a.incidentId,
        channel_id: a.channelId,
        next_at: new Date(now + a.everyMinutes * MINUTE_MS).toISOString()
      })))

    /**
     * In the fan-out's transaction: these incidents were acknowledged or resolved. Their reminders
     * end, and one made but not sent yet (its channel waiting) is withdrawn.
     */
    const stop = (incidents: ReadonlyArray<{ id: string; why: "acknowledged" | "resolved" }>, now: number) =>
      Effect.gen(function*() {
        if (incidents.length === 0) return
        const why = new Map(incidents.map((i) => [i.id, i.why]))
        const stopped = yield* repo.stop([...why.keys()])
        for (const reason of ["acknowledged", "resolved"] as const) {
          const pairs = stopped
            .filter((s) => why.get(s.incident_id) === reason)
            .flatMap((s) => Array.from({ length: s.sent }, (_, i) => ({ channel_id: s.channel_id, event_id: reminderEventId(s.incident_id, i + 1) })))
          yield* repo.withdraw(pairs, `reminder withdrawn: the incident was ${reason}`, new Date(now))
        }
      })

    /** One transaction's worth of due reminders: each sent (as a delivery), skipped or ended. Answers how many were due. */
    const makeDueBatch = Effect.gen(function*() {
      const now = yield* Clock.currentTimeMillis
      return yield* sql.withTransaction(Effect.gen(function*() {
        const due = yield* repo.lockDue(new Date(now), BATCH)
        const rows: Array<NewDelivery> = []
        for (const reminder of due) {
          const { channel } = reminder
          const { reminders, rules } = routingOfRow(channel)
          const kind = registry.alertKind(channel.type)
          if (
            reminder.incident_status !== "OPEN" || channel.deleted || reminders === null || reminder.sent >= reminders.max ||
            kind === undefined
          ) {
            yield* repo.remove(reminder.incident_id, channel.id)
            continue
          }
          const next = new Date(now + reminders.everyMinutes * MINUTE_MS)
          if (channel.status !== "active" || maintenance.inMaintenance(reminder.monitor_id, now)) {
            // skipped, not counted: the next one comes a period later
            yield* repo.move(reminder.incident_id, channel.id, reminder.sent, next)
            continue
          }
          const incident = yield* deliveries.incidentFacts(reminder.incident_id)
          const n = reminder.sent + 1
          const event = incident === undefined ? undefined : reminderEvent(incident, channel.org_id, n, reminders.max, now)
          const body = event === undefined || !alertRulesMatch(rules, event)
            ? undefined
            : kind.channel.messageFor(kind.destinationOf(channel), event)
          if (event === undefined || body === undefined) {
            yield* repo.remove(reminder.incident_id, channel.id)
            continue
          }
          rows.push({ channel_id: channel.id, event_id: event.id, event_seq: null, event_type: REMINDER_EVENT, body })
          if (n >= reminders.max) yield* repo.remove(reminder.incident_id, channel.id)
          else yield* repo.move(reminder.incident_id, channel.id, n, next)
        }
        if (rows.length > 0) yield* deliveries.insertDeliveries(rows, new Date(now))
        return due.length
      }))
    }).pipe(Effect.orDie, Effect.withSpan("Reminders.makeDueBatch"))

    /** Every due reminder made into a delivery (the worker's pass, before it sends what is due). */
    const makeDue = Effect.gen(function*() {
      while ((yield* makeDueBatch) === BATCH) {
        // more due
      }
    })

    return { schedule, stop, makeDue, nextDue: repo.nextDue } as const
  }),
  dependencies: [RemindersRepo.Default, DeliveriesRepo.Default, ChannelRegistry.Default]
}) {}
