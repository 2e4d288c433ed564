import { SqlClient } from "@effect/sql"
import { Effect } from "effect"
import { alertChannelColumns, type AlertChannelRow } from "./DestinationsRepo.js"

/**
 * Reminders still to send (`alert_reminders`, sql/0024_alert_channels.sql): one row per
 * (incident, channel). SQL only; errors are defects.
 */

/** A due reminder, its row locked, with its incident's state and its channel. */
export interface DueReminder {
  readonly incident_id: string
  readonly sent: number
  readonly incident_status: string
  readonly monitor_id: string
  readonly channel: AlertChannelRow & { readonly deleted: boolean }
}

export class RemindersRepo extends Effect.Service<RemindersRepo>()("jobmon/RemindersRepo", {
  effect: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const span = (name: string) => <A, E, R>(effect: Effect.Effect<A, E, R>) =>
      effect.pipe(Effect.orDie, Effect.withSpan(`RemindersRepo.${name}`))
    const channelColumns = alertChannelColumns.split(", ").map((c) => `c.${c}`).join(", ")

    /** Reminders to come for incidents a channel was alerted of (idempotent: one row per pair). */
    const schedule = (rows: ReadonlyArray<{ incident_id: string; channel_id: string; next_at: string }>) =>
      rows.length === 0 ? Effect.void : sql`
        insert into alert_reminders (incident_id, channel_id, next_at)
        select t.incident_id, t.channel_id, t.next_at
        from jsonb_to_recordset(${JSON.stringify(rows)}::jsonb) as t(incident_id uuid, channel_id uuid, next_at timestamptz)
        on conflict do nothing`.pipe(Effect.asVoid, span("schedule"))

    /** The incidents were acknowledged or resolved: their reminders end; answers what had been sent of each. */
    const stop = (incidentIds: ReadonlyArray<string>) =>
      incidentIds.length === 0
        ? Effect.succeed<ReadonlyArray<{ channel_id: string; incident_id: string; sent: number }>>([])
        : sql<{ channel_id: string; incident_id: string; sent: number }>`
          delete from alert_reminders where incident_id = any(${incidentIds}::uuid[])
          returning channel_id, incident_id, sent`.pipe(span("stop"))

    /** Reminder deliveries not sent yet fail: their incident is no longer open. */
    const withdraw = (pairs: ReadonlyArray<{ channel_id: string; event_id: string }>, reason: string, now: Date) =>
      pairs.length === 0 ? Effect.void : sql`
        update webhook_deliveries d set status = 'failed', last_error = ${reason}, next_attempt_at = null
        from jsonb_to_recordset(${JSON.stringify(pairs)}::jsonb) as t(channel_id uuid, event_id uuid)
        where d.channel_id = t.channel_id and d.event_id = t.event_id and d.status = 'pending'
          and (d.claimed_until is null or d.claimed_until <= ${now})`.pipe(Effect.asVoid, span("withdraw"))

    /**
     * Due reminders, oldest first, their rows locked until the transaction ends (SKIP LOCKED: several
     * instances never take the same one). Run inside the transaction that sends or moves them.
     */
    const lockDue = (now: Date, limit: number) =>
      sql<DueReminder & AlertChannelRow & { deleted: boolean }>`
        select r.incident_id, r.sent, i.status as incident_status, i.monitor_id,
          ${sql.literal(channelColumns)}, c.deleted_at is not null as deleted
        from alert_reminders r
          join incidents i on i.id = r.incident_id
          join alert_channels c on c.id = r.channel_id
        where r.next_at <= ${now}
        order by r.next_at
        limit ${limit}
        for update of r skip locked`.pipe(
        Effect.map((rows) =>
          rows.map(({ incident_id, incident_status, monitor_id, sent, ...channel }): DueReminder => ({
            incident_id,
            sent,
            incident_status,
            monitor_id,
            channel: channel as AlertChannelRow & { deleted: boolean }
          }))
        ),
        span("lockDue")
      )

    const move = (incidentId: string, channelId: string, sent: number, nextAt: Date) =>
      sql`update alert_reminders set sent = ${sent}, next_at = ${nextAt} where incident_id = ${incidentId} and channel_id = ${channelId}`.pipe(
        Effect.asVoid,
        span("move")
      )

    const remove = (incidentId: string, channelId: string) =>
      sql`delete from alert_reminders where incident_id = ${incidentId} and channel_id = ${channelId}`.pipe(Effect.asVoid, span("remove"))

    /** When the next reminder is due (the worker sleeps until then at most). */
    const nextDue = Effect.map(
      sql<{ at: Date | null }>`select min(next_at) as at from alert_reminders`,
      (rows) => rows[0]?.at?.getTime()
    ).pipe(span("nextDue"))

    return { schedule, stop, withdraw, lockDue, move, remove, nextDue } as const
  })
}) {}
