import { SqlClient } from "@effect/sql"
import { Effect } from "effect"
import type { EventRow } from "../Events/EventsRepo.js"
import { webhookColumns, type WebhookRow } from "./DestinationsRepo.js"

/**
 * The ping feed's rows: `ping_events` (sql/0011_ping_events.sql, one narrow row per ping while
 * someone subscribes), each subscribed webhook's `ping_seq` (how far its pings have been turned
 * into deliveries), and `ping_subscription_version` (sql/0020, moved by a trigger whenever a
 * subscription may have changed). SQL only; errors are defects.
 */

/** One subscribed webhook's reach: every monitor of its organization, or the monitors it names there. */
export interface PingSubscription {
  readonly org_id: string
  readonly every_monitor: boolean
  readonly monitor_ids: ReadonlyArray<string>
}

export class PingFeedRepo extends Effect.Service<PingFeedRepo>()("jobmon/PingFeedRepo", {
  effect: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const span = (name: string) => <A, E, R>(effect: Effect.Effect<A, E, R>) =>
      effect.pipe(Effect.orDie, Effect.withSpan(`PingFeedRepo.${name}`))

    /** The webhooks that receive ping.received (a condition on `webhooks`). */
    const subscribed = sql.literal("deleted_at is null and 'ping.received' = any(events)")

    /** undefined when the row was removed by hand. */
    const subscriptionVersion = Effect.map(
      sql<{ version: string }>`select version from ping_subscription_version where id = 1`,
      (rows) => rows[0]?.version
    ).pipe(span("subscriptionVersion"))

    /**
     * Only the webhook's own organization's monitors: a filter saved before ids were checked (or
     * naming a monitor that moved on) turns on nothing elsewhere.
     */
    const subscriptions = sql<PingSubscription>`
      select w.org_id, cardinality(w.filter_monitor_ids) = 0 as every_monitor,
        array(select m.id from monitors m where m.id = any(w.filter_monitor_ids) and m.org_id = w.org_id) as monitor_ids
      from webhooks w where ${subscribed}`.pipe(span("subscriptions"))

    /** The subscribed webhooks, and how far each has been fed (read without a lock: it only grows). */
    const subscribers = Effect.map(
      sql<{ id: string; ping_seq: string }>`select id, ping_seq from webhooks where ${subscribed}`,
      (rows) => rows.map((r) => ({ id: r.id, pingSeq: Number(r.ping_seq) }))
    ).pipe(span("subscribers"))

    /** The subscriber's row, locked until the transaction ends (instances take turns feeding it); undefined when it no longer subscribes. */
    const lockSubscriber = (id: string) =>
      Effect.map(
        sql<WebhookRow & { ping_seq: string }>`
          select ${sql.literal(webhookColumns)}, ping_seq from webhooks
          where id = ${id} and ${subscribed} for update`,
        (rows) => rows[0]
      ).pipe(span("lockSubscriber"))

    const pendingPingDeliveries = (webhookId: string) =>
      Effect.map(
        sql<{ n: number }>`
          select count(*)::int as n from webhook_deliveries
          where webhook_id = ${webhookId} and status = 'pending' and event_type = 'ping.received'`,
        (rows) => rows[0]!.n
      ).pipe(span("pendingPingDeliveries"))

    /** Every row up to the newest seq has committed (writers hold the ping events lock until then). */
    const newestSeq = Effect.map(
      sql<{ seq: string }>`select coalesce(max(seq), 0) as seq from ping_events`,
      (rows) => Number(rows[0]!.seq)
    ).pipe(span("newestSeq"))

    /** The organization's ping events in (from, upTo], of these monitors (all when none), oldest first. */
    const pingEventsBetween = (orgId: string, from: number, upTo: number, monitorIds: ReadonlyArray<string>, limit: number) =>
      sql<EventRow>`
        select id, seq, org_id, type, created_at, data, monitor_ids, severity from ping_received_events
        where seq > ${from} and seq <= ${upTo} and org_id = ${orgId}
          ${monitorIds.length === 0 ? sql`` : sql`and monitor_ids && ${monitorIds}::uuid[]`}
        order by seq limit ${limit}`.pipe(span("pingEventsBetween"))

    /** event_seq is the ping's own seq, so that the claims take a webhook's pings oldest first. */
    const insertPingDeliveries = (
      webhookId: string,
      rows: ReadonlyArray<{ event_id: string; event_seq: number; body: string }>,
      now: Date
    ) =>
      sql`
        insert into webhook_deliveries (webhook_id, event_id, event_seq, event_type, body, created_at, next_attempt_at)
        select ${webhookId}, t.event_id, t.event_seq, 'ping.received', t.body, ${now}, ${now}
        from jsonb_to_recordset(${JSON.stringify(rows)}::jsonb) as t(event_id uuid, event_seq bigint, body text)
        on conflict do nothing`.pipe(span("insertPingDeliveries"))

    const movePingSeq = (webhookId: string, seq: number) =>
      sql`update webhooks set ping_seq = ${seq} where id = ${webhookId}`.pipe(span("movePingSeq"))

    /**
     * Deletes up to `chunk` ping events, oldest first, that every subscriber has been fed and that
     * are older than `cutoff`; answers how many.
     */
    const deleteFed = (cutoff: Date, chunk: number) =>
      Effect.map(
        sql<{ n: number }>`
          with fed as (
            select coalesce(
              (select min(ping_seq) from webhooks where ${subscribed}),
              (select max(seq) from ping_events)) as seq
          ), gone as (
            delete from ping_events where seq in (
              select seq from ping_events where seq <= (select seq from fed) order by seq limit ${chunk})
            and at < ${cutoff}
            returning 1
          )
          select count(*)::int as n from gone`,
        (rows) => rows[0]?.n ?? 0
      ).pipe(span("deleteFed"))

    return {
      subscriptionVersion,
      subscriptions,
      subscribers,
      lockSubscriber,
      pendingPingDeliveries,
      newestSeq,
      pingEventsBetween,
      insertPingDeliveries,
      movePingSeq,
      deleteFed
    } as const
  })
}) {}
