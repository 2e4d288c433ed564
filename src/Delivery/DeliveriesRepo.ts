import { SqlClient } from "@effect/sql"
import { Effect } from "effect"
import { iso } from "../Domain/Instant.js"
import type { EventRow } from "../Events/EventsRepo.js"
import { isUuid } from "../Domain/Ids.js"
import type { IncidentFacts, MonitorFacts } from "./Channel.js"
import {
  type ClaimedWholeTable,
  columnsOf,
  type DestinationColumn,
  type DestinationRows,
  type DestinationStore
} from "./DestinationsRepo.js"

/**
 * Deliveries (sql/0006_delivery.sql): one row of `webhook_deliveries` per (destination, event)
 * with the exact body, written before it is attempted; every attempt a row of
 * `webhook_delivery_attempts`; the fan-out's cursor over `events`; the per-minute counters of
 * `webhook_rate`. SQL only: claims, attempts, rescheduling and purges. Errors are defects.
 */

export interface DeliveryRow {
  readonly id: string
  readonly webhook_id: string | null
  readonly chat_webhook_id: string | null
  readonly channel_id: string | null
  readonly event_id: string
  readonly event_type: string
  readonly body: string
  readonly created_at: Date
  readonly status: "pending" | "succeeded" | "failed"
  readonly attempts: number
  readonly next_attempt_at: Date | null
  readonly last_status_code: number | null
  readonly last_response_time_ms: number | null
  readonly last_error: string | null
  readonly request_headers: Record<string, string> | null
  readonly event_seq: string | number | null
}

const deliveryColumns =
  "id, webhook_id, chat_webhook_id, channel_id, event_id, event_type, body, created_at, status, attempts, next_attempt_at, last_status_code, last_response_time_ms, last_error, request_headers, event_seq"
const qualifiedDeliveryColumns = deliveryColumns.split(", ").map((c) => `d.${c}`).join(", ")

/** A message the fan-out made, for one destination: its column names it. */
export type NewDelivery = { readonly [C in DestinationColumn]?: string } & {
  readonly event_id: string
  /** The event's place in `events`; null for what is no event there (reminders). */
  readonly event_seq: number | null
  readonly event_type: string
  readonly body: string
}

/** An attempt made, to be recorded with its delivery's new state. */
export interface Attempted {
  readonly id: string
  readonly attempt: number
  readonly at: number
  readonly headers: Record<string, string>
  readonly statusCode: number | null
  readonly responseTimeMs: number | null
  readonly error: string | null
  readonly status: "pending" | "succeeded" | "failed"
  readonly next: Date | null
}

export class DeliveriesRepo extends Effect.Service<DeliveriesRepo>()("jobmon/DeliveriesRepo", {
  effect: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const columns = sql.literal(deliveryColumns)
    const span = (name: string) => <A, E, R>(effect: Effect.Effect<A, E, R>) =>
      effect.pipe(Effect.orDie, Effect.withSpan(`DeliveriesRepo.${name}`))

    // ---- fan-out -----------------------------------------------------------------------------------

    /** The fan-out's cursor, locked until the transaction ends (instances take turns). */
    const lockCursor = Effect.map(
      sql<{ seq: string }>`select seq from delivery_cursor where id = 1 for update`,
      (rows) => Number(rows[0]!.seq)
    ).pipe(span("lockCursor"))

    const eventsAfter = (after: number, limit: number) =>
      sql<EventRow>`
        select id, seq, org_id, type, created_at, data, monitor_ids, severity from events
        where seq > ${after} order by seq limit ${limit}`.pipe(span("eventsAfter"))

    const moveCursor = (seq: number) => sql`update delivery_cursor set seq = ${seq} where id = 1`.pipe(span("moveCursor"))

    /** Idempotent: `unique (webhook_id, event_id)`, `unique (chat_webhook_id, event_id)`, `unique (channel_id, event_id)`. */
    const insertDeliveries = (rows: ReadonlyArray<NewDelivery>, now: Date) =>
      sql`
        insert into webhook_deliveries (webhook_id, chat_webhook_id, channel_id, event_id, event_seq, event_type, body, created_at, next_attempt_at)
        select t.webhook_id, t.chat_webhook_id, t.channel_id, t.event_id, t.event_seq, t.event_type, t.body, ${now}, ${now}
        from jsonb_to_recordset(${JSON.stringify(rows)}::jsonb)
          as t(webhook_id uuid, chat_webhook_id uuid, channel_id uuid, event_id uuid, event_seq bigint, event_type text, body text)
        on conflict do nothing`.pipe(span("insertDeliveries"))

    const incidentFacts = (incidentId: string) =>
      Effect.map(
        sql<{
          type: string
          severity: string
          status: string
          created_at: Date
          monitor_id: string
          details: Record<string, unknown>
          name: string
          tags: ReadonlyArray<string>
        }>`
          select i.type, i.severity, i.status, i.created_at, i.monitor_id, i.details, m.name, m.tags
          from incidents i join monitors m on m.id = i.monitor_id where i.id = ${incidentId}`,
        ([row]): IncidentFacts | undefined =>
          row === undefined
            ? undefined
            : {
              id: incidentId,
              type: row.type,
              severity: row.severity,
              status: row.status,
              openedAt: iso(row.created_at),
              monitorId: row.monitor_id,
              monitorName: row.name,
              monitorTags: row.tags,
              details: row.details
            }
      ).pipe(span("incidentFacts"))

    /** The organization's monitors among `ids` (a maintenance window's), in the order given; gone ones left out. */
    const monitorFacts = (orgId: string, given: ReadonlyArray<string>) => {
      const ids = given.filter(isUuid)
      return ids.length === 0
        ? Effect.succeed([] as Array<MonitorFacts>)
        : Effect.map(
          sql<{ id: string; name: string; tags: ReadonlyArray<string> }>`
            select m.id, m.name, m.tags from unnest(${ids}::uuid[]) with ordinality as w(id, n)
            join monitors m on m.id = w.id and m.org_id = ${orgId} and m.deleted_at is null order by w.n`,
          (rows): Array<MonitorFacts> => rows.map((r) => ({ id: r.id, name: r.name, tags: r.tags }))
        ).pipe(span("monitorFacts"))
    }

    // ---- a webhook's deliveries (API) --------------------------------------------------------------

    const ofWebhook = (webhookId: string, limit: number) => ofDestination("webhook_id", webhookId, limit)

    /** A destination's deliveries, newest first. */
    const ofDestination = (column: DestinationColumn, id: string, limit: number) =>
      sql<DeliveryRow>`
        select ${columns} from webhook_deliveries where ${sql.literal(column)} = ${id}
        order by created_at desc, id desc limit ${limit}`.pipe(span("ofDestination"))

    /**
     * A delivery attempted before it was stored (the channels' test endpoint: one attempt, never
     * retried), with its attempt, in one statement; answers its row.
     */
    const insertAttempted = (d: {
      column: DestinationColumn
      destinationId: string
      eventId: string
      eventType: string
      body: string
      attempt: Attempted
    }) =>
      Effect.map(
        sql<DeliveryRow>`
          with d as (
            insert into webhook_deliveries (${sql.literal(d.column)}, event_id, event_type, body, created_at, status, attempts,
              next_attempt_at, last_status_code, last_response_time_ms, last_error, request_headers)
            values (${d.destinationId}, ${d.eventId}, ${d.eventType}, ${d.body}, ${new Date(d.attempt.at)}, ${d.attempt.status}, 1,
              null, ${d.attempt.statusCode}, ${d.attempt.responseTimeMs}, ${d.attempt.error}, ${JSON.stringify(d.attempt.headers)}::jsonb)
            returning ${columns}
          ), a as (
            insert into webhook_delivery_attempts (delivery_id, attempt, at, status_code, response_time_ms, error, request_headers)
            select id, 1, ${new Date(d.attempt.at)}, ${d.attempt.statusCode}, ${d.attempt.responseTimeMs}, ${d.attempt.error},
              ${JSON.stringify(d.attempt.headers)}::jsonb from d
          )
          select * from d`,
        (rows) => rows[0]!
      ).pipe(span("insertAttempted"))

    /** Nothing more is sent to a deleted destination: its pending deliveries fail with `error`. */
    const failPending = (column: DestinationColumn, id: string, error: string) =>
      sql`
        update webhook_deliveries set status = 'failed', last_error = ${error}, next_attempt_at = null
        where ${sql.literal(column)} = ${id} and status = 'pending'`.pipe(span("failPending"))

    /** A delivery of its own event, leased to the caller at once (the test endpoint attempts it). */
    const insertLeased = (d: { webhookId: string; eventId: string; eventType: string; body: string; now: Date; leaseUntil: Date }) =>
      Effect.map(
        sql<DeliveryRow>`
          insert into webhook_deliveries (webhook_id, event_id, event_type, body, created_at, next_attempt_at, claimed_until)
          values (${d.webhookId}, ${d.eventId}, ${d.eventType}, ${d.body}, ${d.now}, ${d.now}, ${d.leaseUntil})
          returning ${columns}`,
        (rows) => rows[0]!
      ).pipe(span("insertLeased"))

    // ---- claims --------------------------------------------------------------------------------------

    /** Due outbound deliveries, leased (SKIP LOCKED and a lease: concurrent workers never share one). */
    const claimDueWebhookDeliveries = (now: Date, leaseUntil: Date, limit: number) =>
      sql<DeliveryRow>`
        update webhook_deliveries set claimed_until = ${leaseUntil}
        where id in (
          select id from webhook_deliveries
          where status = 'pending' and webhook_id is not null and next_attempt_at <= ${now}
            and (claimed_until is null or claimed_until <= ${now})
          order by next_attempt_at, event_seq, id
          limit ${limit}
          for update skip locked)
        returning ${columns}`.pipe(span("claimDueWebhookDeliveries"))

    // ---- destinations claimed whole (chat webhooks): `store` names their table and delivery column

    /** Destinations with due messages that no worker holds and that need not wait, leased whole. */
    const claimWhole = <T extends ClaimedWholeTable>(store: DestinationStore<T>, now: Date, leaseUntil: Date, limit: number) =>
      sql<DestinationRows[T] & { deleted: boolean }>`
        update ${sql.literal(store.table)} set claimed_until = ${leaseUntil}
        where id in (
          select c.id from ${sql.literal(store.table)} c
          where c.id in (
              select d.${sql.literal(store.column)} from webhook_deliveries d
              where d.status = 'pending' and d.${sql.literal(store.column)} is not null and d.next_attempt_at <= ${now})
            and (c.claimed_until is null or c.claimed_until <= ${now})
            and (c.wait_until is null or c.wait_until <= ${now})
            ${store.type === undefined ? sql`` : sql`and c.type = ${store.type}`}
          limit ${limit}
          for update skip locked)
        returning ${sql.literal(columnsOf[store.table])}, deleted_at is not null as deleted`.pipe(span("claimWhole"))

    /** A claimed destination's due messages, oldest first. */
    const dueOf = (store: DestinationStore<ClaimedWholeTable>, id: string, now: Date, limit: number) =>
      sql<DeliveryRow>`
        select ${columns} from webhook_deliveries
        where ${sql.literal(store.column)} = ${id} and status = 'pending' and next_attempt_at <= ${now}
        order by event_seq nulls last, created_at, id
        limit ${limit}`.pipe(span("dueOf"))

    const failClaimed = (ids: ReadonlyArray<string>, error: string) =>
      sql`
        update webhook_deliveries set status = 'failed', next_attempt_at = null, claimed_until = null, last_error = ${error}
        where id = any(${ids}::uuid[])`.pipe(span("failClaimed"))

    /** Ends a destination's lease; given `waitUntil`, it waits until then (a 429, a 5xx, a full minute), or not (null). */
    const release = (store: DestinationStore<ClaimedWholeTable>, id: string, waitUntil?: Date | null) =>
      sql`
        update ${sql.literal(store.table)} set claimed_until = null ${waitUntil === undefined ? sql`` : sql`, wait_until = ${waitUntil}`}
        where id = ${id}`.pipe(span("release"))

    /** The receiver said the destination is gone (a chat webhook deleted): invalid, with the reason; its waiting messages fail. */
    const invalidate = (store: DestinationStore<ClaimedWholeTable>, id: string, reason: string, now: Date) =>
      Effect.gen(function*() {
        yield* sql`
          update ${sql.literal(store.table)} set status = 'invalid', status_reason = ${reason}, updated_at = ${now}
          where id = ${id}`
        yield* sql`
          update webhook_deliveries set status = 'failed', last_error = ${`${store.noun} invalid`}, next_attempt_at = null, claimed_until = null
          where ${sql.literal(store.column)} = ${id} and status = 'pending' and claimed_until is null`
      }).pipe(span("invalidate"))

    // ---- rate limits ---------------------------------------------------------------------------------

    /** The destinations' counters of the minute, created at 0 where missing. */
    const ensureRateCounters = (windowStart: Date, ids: ReadonlyArray<string>) =>
      sql`
        insert into webhook_rate (webhook_id, window_start, count)
        select id, ${windowStart}, 0 from unnest(${ids}::uuid[]) as id
        on conflict do nothing`.pipe(span("ensureRateCounters"))

    /** The counters of the minute, locked until the transaction ends (two workers never overspend one). */
    const lockRateCounters = (windowStart: Date, ids: ReadonlyArray<string>) =>
      sql<{ webhook_id: string; count: number }>`
        select webhook_id, count from webhook_rate
        where window_start = ${windowStart} and webhook_id = any(${ids}::uuid[])
        order by webhook_id for update`.pipe(span("lockRateCounters"))

    const addToRateCounters = (windowStart: Date, taken: ReadonlyArray<{ webhook_id: string; n: number }>) =>
      sql`
        update webhook_rate r set count = r.count + t.n
        from jsonb_to_recordset(${JSON.stringify(taken)}::jsonb) as t(webhook_id uuid, n int)
        where r.webhook_id = t.webhook_id and r.window_start = ${windowStart}`.pipe(span("addToRateCounters"))

    /** Counts one request against a destination's minute; answers the count, or undefined when full. */
    const takeRate = (id: string, windowStart: Date, limit: number) =>
      Effect.map(
        sql<{ count: number }>`
          insert into webhook_rate (webhook_id, window_start, count) values (${id}, ${windowStart}, 1)
          on conflict (webhook_id, window_start) do update set count = webhook_rate.count + 1
            where webhook_rate.count < ${limit}
          returning count`,
        (rows) => rows[0]?.count
      ).pipe(span("takeRate"))

    const purgeRates = (before: Date) => sql`delete from webhook_rate where window_start < ${before}`.pipe(span("purgeRates"))

    // ---- rescheduling and attempts -------------------------------------------------------------------

    /** The due, unclaimed deliveries of these webhooks wait until `until` (their minute is full). */
    const postponeUnclaimed = (webhookIds: ReadonlyArray<string>, until: Date, now: Date) =>
      sql`
        update webhook_deliveries set next_attempt_at = ${until}
        where webhook_id = any(${webhookIds}::uuid[]) and status = 'pending'
          and next_attempt_at < ${until}
          and (claimed_until is null or claimed_until <= ${now})`.pipe(span("postponeUnclaimed"))

    /** Claimed deliveries put back until `until`, without using an attempt. */
    const postponeClaimed = (ids: ReadonlyArray<string>, until: Date) =>
      sql<DeliveryRow>`
        update webhook_deliveries set next_attempt_at = ${until}, claimed_until = null
        where id = any(${ids}::uuid[]) returning ${columns}`.pipe(span("postponeClaimed"))

    /** Claimed deliveries of a webhook deleted meanwhile. */
    const failOrphaned = (ids: ReadonlyArray<string>) =>
      sql<DeliveryRow>`
        update webhook_deliveries set status = 'failed', last_error = 'webhook deleted', next_attempt_at = null, claimed_until = null
        where id = any(${ids}::uuid[]) returning ${columns}`.pipe(span("failOrphaned"))

    /**
     * Every attempt row and each delivery's new state, in one statement (so all or none); answers the
     * rows after when asked (the test endpoint shows its delivery; the worker needs nothing back).
     */
    const recordAttempts = (attempts: ReadonlyArray<Attempted>, answer = false) =>
      attempts.length === 0
        ? Effect.succeed<ReadonlyArray<DeliveryRow>>([])
        : sql<DeliveryRow>`
          with t as (
            select * from jsonb_to_recordset(${
          JSON.stringify(attempts.map((a) => ({
            id: a.id,
            attempt: a.attempt,
            at: iso(a.at),
            status_code: a.statusCode,
            response_time_ms: a.responseTimeMs,
            error: a.error,
            request_headers: a.headers,
            status: a.status,
            next_attempt_at: iso(a.next)
          })))
        }::jsonb) as t(id uuid, attempt int, at timestamptz, status_code int, response_time_ms int, error text,
              request_headers jsonb, status text, next_attempt_at timestamptz)
          ), attempts as (
            insert into webhook_delivery_attempts (delivery_id, attempt, at, status_code, response_time_ms, error, request_headers)
            select id, attempt, at, status_code, response_time_ms, error, request_headers from t
          )
          update webhook_deliveries d set
            status = t.status, attempts = t.attempt, next_attempt_at = t.next_attempt_at, claimed_until = null,
            last_status_code = t.status_code, last_response_time_ms = t.response_time_ms, last_error = t.error,
            request_headers = t.request_headers
          from t where d.id = t.id
          ${answer ? sql`returning ${sql.literal(qualifiedDeliveryColumns)}` : sql``}`.pipe(span("recordAttempts"))

    /**
     * When the next pending delivery is due: an outbound delivery's time or its lease's end; for
     * the destinations claimed whole (`wholes`), each one's oldest message, or its wait or lease.
     */
    const nextDue = (wholes: ReadonlyArray<DestinationStore<ClaimedWholeTable>>) => {
      // one part per table (the alert channel types share one)
      const tables = [...new Map(wholes.map((store) => [store.table, store] as const)).values()]
      const waits = tables.map((store) =>
        sql`
          union all
          select greatest(min(d.next_attempt_at), max(coalesce(c.wait_until, d.next_attempt_at)), max(coalesce(c.claimed_until, d.next_attempt_at)))
          from webhook_deliveries d join ${sql.literal(store.table)} c on c.id = d.${sql.literal(store.column)}
          where d.status = 'pending' and d.${sql.literal(store.column)} is not null
          group by c.id`
      )
      return Effect.map(
        sql<{ at: Date | null }>`
          select min(at) as at from (
            select min(greatest(next_attempt_at, coalesce(claimed_until, next_attempt_at))) as at
            from webhook_deliveries where status = 'pending' and webhook_id is not null
            ${sql.join(" ", false)(waits)}
          ) due`,
        (rows) => rows[0]?.at?.getTime()
      ).pipe(span("nextDue"))
    }

    return {
      lockCursor,
      eventsAfter,
      moveCursor,
      insertDeliveries,
      incidentFacts,
      monitorFacts,
      ofWebhook,
      ofDestination,
      insertAttempted,
      failPending,
      insertLeased,
      claimDueWebhookDeliveries,
      claimWhole,
      dueOf,
      failClaimed,
      release,
      invalidate,
      ensureRateCounters,
      lockRateCounters,
      addToRateCounters,
      takeRate,
      purgeRates,
      postponeUnclaimed,
      postponeClaimed,
      failOrphaned,
      recordAttempts,
      nextDue
    } as const
  })
}) {}
