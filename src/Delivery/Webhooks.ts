import { SqlClient } from "@effect/sql"
import { Clock, Deferred, Effect, Queue, Stream } from "effect"
import { randomUUID } from "node:crypto"
import Pg from "pg"
import { AppConfig } from "../Config.js"
import { Database } from "../Db/Database.js"
import { Conflict, notFound, ValidationError } from "../Domain/Errors.js"
import { isUuid } from "../Domain/Ids.js"
import { type EventRow } from "../Events/EventsRepo.js"
import { envelopeOf, toStoredEvent } from "../Events/Events.js"
import { Intake } from "../Pings/Intake.js"
import {
  BadGateway,
  type ChatWebhook,
  type CreateChatWebhookRequest,
  type CreateWebhookRequest,
  type Delivery,
  type UpdateChatWebhookRequest,
  type UpdateWebhookRequest,
  type Webhook
} from "./Api.js"
import {
  type ChatIncident,
  type ChatMessageBody,
  maintenanceMessageOf,
  mergeMessages,
  messageOf,
  packMessages,
  postUrlOf,
  testMessageOf
} from "./ChatMessage.js"
import { echo, fieldWithNul } from "./Input.js"
import { maskChatUrl, maskWebhookUrl } from "./Masking.js"
import { ORGANIZATION_QUOTAS } from "./Quotas.js"
import {
  CHAT_MAX_ATTEMPTS,
  CHAT_RATE_LIMIT_PER_MINUTE,
  chatDelayAfterAttempt,
  delayAfterAttempt,
  isRetryable,
  isSuccess,
  type Outcome,
  RATE_LIMIT_PER_MINUTE,
  RATE_WINDOW_MS
} from "./RetrySchedule.js"
import { send } from "./Sender.js"
import { isWellFormedWhsec, newSecret, sign, standardSignature } from "./Signing.js"
import { targetProblem, urlProblem } from "./Ssrf.js"

/**
 * Outbound webhooks (decisions §10, docs/delivery.md): their configuration, and the delivery
 * worker. The worker fans the `events` table out into `webhook_deliveries` rows (one per matching
 * webhook, idempotent), then claims due deliveries and posts them, recording every attempt and
 * rescheduling per the retry table. All times come from the Clock.
 */

interface WebhookRow {
  readonly id: string
  readonly org_id: string
  readonly url: string
  readonly secret: string
  readonly events: ReadonlyArray<string>
  readonly filter_monitor_ids: ReadonlyArray<string>
  readonly filter_severity: ReadonlyArray<string>
  readonly after_seq: string | number
  readonly created_at: Date
}

interface ChatWebhookRow {
  readonly id: string
  readonly org_id: string
  readonly name: string
  readonly url: string
  readonly rules_severity: ReadonlyArray<string>
  readonly rules_types: ReadonlyArray<string>
  readonly mention: string | null
  readonly status: "active" | "invalid"
  readonly status_reason: string | null
  readonly after_seq: string | number
  readonly created_at: Date
}

interface DeliveryRow {
  readonly id: string
  readonly webhook_id: string | null
  readonly chat_webhook_id: string | null
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

const webhookColumns = "id, org_id, url, secret, events, filter_monitor_ids, filter_severity, after_seq, created_at"
const chatColumns = "id, org_id, name, url, rules_severity, rules_types, mention, status, status_reason, after_seq, created_at"
const deliveryColumns =
  "id, webhook_id, chat_webhook_id, event_id, event_type, body, created_at, status, attempts, next_attempt_at, last_status_code, last_response_time_ms, last_error, request_headers, event_seq"

/** Runs `work` over `items`, at most `limit` at a time; answers the results in order. */
const inPool = async <A, B>(items: ReadonlyArray<A>, limit: number, work: (item: A) => Promise<B>): Promise<Array<B>> => {
  const results: Array<B> = new Array(items.length)
  let next = 0
  const runner = async () => {
    while (next < items.length) {
      const i = next++
      results[i] = await work(items[i]!)
    }
  }
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, runner))
  return results
}

/** A webhook as GET, list and PATCH show it: its url masked where it carries credentials. */
const toWebhook = (row: WebhookRow): Webhook => ({
  id: row.id,
  url: maskWebhookUrl(row.url),
  events: row.events,
  filters: { monitorIds: row.filter_monitor_ids, severity: row.filter_severity as ReadonlyArray<"HIGH" | "MEDIUM" | "LOW"> },
  createdAt: row.created_at.toISOString()
})

/** A chat webhook as GET, list and PATCH show it: its url (a credential) masked. */
const toChatWebhook = (row: ChatWebhookRow): ChatWebhook => ({
  id: row.id,
  name: row.name,
  url: maskChatUrl(row.url),
  rules: {
    severity: row.rules_severity as ReadonlyArray<"HIGH" | "MEDIUM" | "LOW">,
    types: row.rules_types as ReadonlyArray<"MISSED" | "FAIL" | "LATE" | "ANOMALY">
  },
  mention: row.mention,
  status: row.status,
  statusReason: row.status_reason,
  createdAt: row.created_at.toISOString()
})

/** Chat rules: empty lists match everything. */
export const chatRulesMatch = (
  rules: { severity: ReadonlyArray<string>; types: ReadonlyArray<string> },
  incident: { type: string; severity: string }
) =>
  (rules.severity.length === 0 || rules.severity.includes(incident.severity)) &&
  (rules.types.length === 0 || rules.types.includes(incident.type))

const MAX_NAME_LENGTH = 100
const MAX_MENTION_LENGTH = 200

export const toDelivery = (row: DeliveryRow): Delivery => ({
  id: row.id,
  eventId: row.event_id,
  event: row.event_type,
  createdAt: row.created_at.toISOString(),
  status: row.status,
  attempts: row.attempts,
  retryCount: Math.max(0, row.attempts - 1),
  lastStatusCode: row.last_status_code,
  lastResponseTimeMs: row.last_response_time_ms,
  lastError: row.last_error,
  nextAttemptAt: row.status === "pending" && row.next_attempt_at !== null ? row.next_attempt_at.toISOString() : null,
  requestHeaders: row.request_headers
})

/** Does the webhook want this event? Events selection, then filters (docs/delivery.md#filters). */
export const matches = (
  webhook: { events: ReadonlyArray<string>; filterMonitorIds: ReadonlyArray<string>; filterSeverity: ReadonlyArray<string> },
  event: { type: string; monitorIds: ReadonlyArray<string>; severity: string | null }
): boolean => {
  if (!webhook.events.includes(event.type)) return false
  if (webhook.filterMonitorIds.length > 0 && event.monitorIds.length > 0) {
    if (!event.monitorIds.some((id) => webhook.filterMonitorIds.includes(id))) return false
  }
  if (webhook.filterSeverity.length > 0 && event.severity !== null) {
    if (!webhook.filterSeverity.includes(event.severity)) return false
  }
  return true
}

const FANOUT_BATCH = 1000
/** ping.received deliveries a webhook has pending at most (RATE_LIMIT_PER_MINUTE: a minute's worth). */
const PING_QUEUE = RATE_LIMIT_PER_MINUTE
/** Ping events one feed of a webhook looks through at most (a filter that matches few moves on anyway). */
const PING_SCAN = 100_000
/** Ping events are kept this long at least (GET /api/events?type=ping.received). */
const PING_EVENTS_KEEP_MS = 24 * 3_600_000
const PURGE_CHUNK = 50_000
/** While some webhook subscribes to ping.received, the worker feeds them at least this often. */
const PING_FEED_MS = 1_000
/** Outbound deliveries claimed at once by one lane, and lanes claiming side by side. */
const CLAIM_BATCH = 200
const CLAIM_LANES = 3
/** POSTs in flight per lane. */
const SEND_CONCURRENCY = 100
/** Chat webhooks claimed at once, and a chat webhook's messages read at once (packed into messages). */
const CHAT_CLAIM_BATCH = 20
const CHAT_ROWS_PER_ROUND = 200
const LEASE_MS = 60_000
/** Without a notification, the worker still looks this often (a missed notification costs at most this). */
const SAFETY_POLL_MS = 30_000
const ERROR_RETRY_MS = 1_000
const LISTEN_RETRY = "1 second"
const WAKE_CHANNEL = "jobmon_delivery"
const MAX_SECRET_LENGTH = 256
/** The unknown ids a "no such monitor" message names at most. */
const MAX_NAMED_IDS = 5

export class Webhooks extends Effect.Service<Webhooks>()("jobmon/Webhooks", {
  scoped: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const database = yield* Database
    const config = yield* AppConfig
    const intake = yield* Intake
    const allowPrivateTargets = config.allowPrivateTargets

    // ---- configuration --------------------------------------------------------------------------

    const checkUrl = (url: string) =>
      Effect.gen(function*() {
        const problem = urlProblem(url)
        if (problem !== undefined) return yield* new ValidationError({ path: "url", message: problem })
        if (allowPrivateTargets) return
        const refused = yield* Effect.promise(() => targetProblem(url))
        if (refused !== undefined) {
          return yield* new ValidationError({
            path: "url",
            message: `${refused} Webhook targets must be public unless the operator sets ALLOW_PRIVATE_TARGETS=true.`
          })
        }
      })

    /** Every stored text field: NUL is refused by name (PostgreSQL text cannot hold it). */
    const checkText = (fields: ReadonlyArray<readonly [string, string | null | undefined]>) => {
      const field = fieldWithNul(fields)
      return field === undefined
        ? Effect.void
        : Effect.fail(new ValidationError({ path: field, message: `${field} must not contain a NUL character (\\u0000).` }))
    }

    /**
     * A PATCH that sends back the masked url the API showed (a client echoing what it read) keeps
     * the stored url; any other url replaces it.
     */
    const newUrl = (given: string | undefined, masked: string) => given === undefined || given === masked ? undefined : given

    /**
     * At most ORGANIZATION_QUOTAS[kind] live ones per organization. Runs inside the create's
     * transaction, with the organization's row locked (FOR NO KEY UPDATE: creates of one
     * organization take turns; foreign-key checks elsewhere are not blocked).
     */
    const checkQuota = (orgId: string, kind: "webhooks" | "chatWebhooks") =>
      Effect.gen(function*() {
        yield* sql`select 1 from organizations where id = ${orgId} for no key update`
        const table = sql.literal(kind === "webhooks" ? "webhooks" : "chat_webhooks")
        const [row] = yield* sql<{ n: number }>`
          select count(*)::int as n from ${table} where org_id = ${orgId} and deleted_at is null`
        const limit = ORGANIZATION_QUOTAS[kind]
        if (row!.n >= limit) {
          const what = kind === "webhooks" ? "outbound webhooks" : "chat webhooks"
          return yield* new Conflict({
            message: `This organization already has ${limit} ${what}, the most it may have; delete one it no longer needs first.`
          })
        }
      })

    const checkEvents = (events: ReadonlyArray<string>) =>
      events.length === 0
        ? Effect.fail(new ValidationError({ path: "events", message: "events must select at least one event kind." }))
        : Effect.void

    /**
     * Every id must be a monitor of this organization (not deleted). Another organization's
     * monitor is "no such monitor", like an id that names nothing (decisions §1: never reveal it
     * exists).
     */
    const checkMonitorIds = (orgId: string, ids: ReadonlyArray<string> | undefined) =>
      Effect.gen(function*() {
        if (ids === undefined || ids.length === 0) return
        for (let i = 0; i < ids.length; i++) {
          if (!isUuid(ids[i]!)) {
            return yield* new ValidationError({
              path: `filters.monitorIds.${i}`,
              message: `filters.monitorIds.${i} must be a monitor id (a UUID), not '${echo(ids[i]!)}'.`
            })
          }
        }
        const known = new Set(
          (yield* sql<{ id: string }>`
            select id from monitors
            where org_id = ${orgId} and deleted_at is null and id = any(${[...new Set(ids)]}::uuid[])`.pipe(Effect.orDie))
            .map((r) => r.id.toLowerCase())
        )
        const unknown = [...new Set(ids.filter((id) => !known.has(id.toLowerCase())))]
        if (unknown.length > 0) {
          const first = ids.findIndex((id) => !known.has(id.toLowerCase()))
          const named = unknown.slice(0, MAX_NAMED_IDS).join(", ")
          const more = unknown.length > MAX_NAMED_IDS ? ` and ${unknown.length - MAX_NAMED_IDS} more` : ""
          return yield* new ValidationError({
            path: `filters.monitorIds.${first}`,
            message: `filters.monitorIds: no such monitor: ${named}${more}.`
          })
        }
      })

    /** A given secret: 16 to 256 printable ASCII characters; one starting with whsec_ must be a well-formed one. */
    const checkSecret = (secret: string | undefined) => {
      if (secret === undefined) return Effect.void
      if (secret.length < 16 || secret.length > MAX_SECRET_LENGTH || !/^[\x21-\x7e]+$/.test(secret)) {
        return Effect.fail(
          new ValidationError({
            path: "secret",
            message: `secret must have 16 to ${MAX_SECRET_LENGTH} printable ASCII characters, without spaces.`
          })
        )
      }
      if (secret.startsWith("whsec_") && !isWellFormedWhsec(secret)) {
        return Effect.fail(
          new ValidationError({
            path: "secret",
            message: "a secret starting with whsec_ must be whsec_ followed by the base64 of 24 to 64 random bytes (the Standard Webhooks form)."
          })
        )
      }
      return Effect.void
    }

    /** The webhooks that receive ping.received (a condition on `webhooks`). */
    const subscribedToPings = sql.literal("deleted_at is null and 'ping.received' = any(events)")

    /**
     * ping.received events are written only while some webhook subscribes to them, and only for
     * the monitors such a webhook can receive: every monitor of its organization when it has no
     * monitor filter (one organization's choice costs the others nothing), else those it names.
     *
     * Cheap enough for every pass: the subscription version (sql/0020, moved by a trigger in the
     * transaction of any change to a webhook's subscription) is read first, and the webhooks only
     * when it moved since the last sync. Read before the webhooks, so the state applied is at least
     * as new as the version remembered (at worst one sync more). One sync at a time: a slow one
     * could otherwise apply an older state after a newer one (the API's sync after a change, and
     * the worker's pass, run side by side).
     */
    const syncLock = yield* Effect.makeSemaphore(1)
    let syncedVersion: string | undefined = undefined
    const syncPingEvents = syncLock.withPermits(1)(Effect.gen(function*() {
      const [current] = yield* sql<{ version: string }>`select version from ping_subscription_version where id = 1`
      if (current !== undefined && current.version === syncedVersion) return
      // Only the webhook's own organization's monitors: a filter saved before ids were checked
      // (or naming a monitor that moved on) turns on nothing elsewhere.
      const rows = yield* sql<{ org_id: string; every_monitor: boolean; monitor_ids: ReadonlyArray<string> }>`
        select w.org_id, cardinality(w.filter_monitor_ids) = 0 as every_monitor,
          array(select m.id from monitors m where m.id = any(w.filter_monitor_ids) and m.org_id = w.org_id) as monitor_ids
        from webhooks w where ${subscribedToPings}`
      yield* intake.setPingEvents({
        orgs: new Set(rows.filter((r) => r.every_monitor).map((r) => r.org_id)),
        monitors: new Set(rows.filter((r) => !r.every_monitor).flatMap((r) => r.monitor_ids))
      })
      // No version row (removed by hand): read the webhooks on every pass.
      syncedVersion = current?.version
    })).pipe(Effect.orDie)

    const findRow = (orgId: string, id: string) =>
      Effect.gen(function*() {
        if (!isUuid(id)) return yield* notFound("webhook", echo(id))
        const [row] = yield* sql<WebhookRow>`
          select ${sql.literal(webhookColumns)} from webhooks where id = ${id} and org_id = ${orgId} and deleted_at is null`.pipe(
          Effect.orDie
        )
        if (row === undefined) return yield* notFound("webhook", echo(id))
        return row
      })

    const create = Effect.fn("Webhooks.create")(function*(orgId: string, input: CreateWebhookRequest) {
      yield* checkText([["url", input.url], ["secret", input.secret]])
      yield* checkUrl(input.url)
      yield* checkEvents(input.events)
      yield* checkMonitorIds(orgId, input.filters?.monitorIds)
      yield* checkSecret(input.secret)
      const secret = input.secret ?? newSecret()
      const now = new Date(yield* Clock.currentTimeMillis)
      const row = yield* sql.withTransaction(Effect.gen(function*() {
        yield* checkQuota(orgId, "webhooks")
        const [row] = yield* sql<WebhookRow>`
          insert into webhooks (org_id, url, secret, events, filter_monitor_ids, filter_severity, after_seq, ping_seq, created_at, updated_at)
          values (${orgId}, ${input.url}, ${secret}, ${[...new Set(input.events)]}::text[],
            ${[...new Set(input.filters?.monitorIds ?? [])]}::uuid[], ${[...new Set(input.filters?.severity ?? [])]}::text[],
            (select coalesce(max(seq), 0) from events), (select coalesce(max(seq), 0) from ping_events), ${now}, ${now})
          returning ${sql.literal(webhookColumns)}`
        return row!
      })).pipe(Effect.catchTag("SqlError", Effect.die))
      yield* syncPingEvents
      // the only answer that shows the url unmasked, with the secret
      return { ...toWebhook(row), url: row.url, secret }
    })

    const list = (orgId: string) =>
      sql<WebhookRow>`
        select ${sql.literal(webhookColumns)} from webhooks where org_id = ${orgId} and deleted_at is null
        order by created_at, id`.pipe(Effect.orDie, Effect.map((rows) => rows.map(toWebhook)))

    const get = (orgId: string, id: string) => Effect.map(findRow(orgId, id), toWebhook)

    const update = Effect.fn("Webhooks.update")(function*(orgId: string, id: string, input: UpdateWebhookRequest) {
      const row = yield* findRow(orgId, id)
      yield* checkText([["url", input.url]])
      const url = newUrl(input.url, maskWebhookUrl(row.url))
      if (url !== undefined) yield* checkUrl(url)
      if (input.events !== undefined) yield* checkEvents(input.events)
      yield* checkMonitorIds(orgId, input.filters?.monitorIds)
      const now = new Date(yield* Clock.currentTimeMillis)
      const [updated] = yield* sql<WebhookRow>`
        update webhooks set
          url = ${url ?? row.url},
          events = ${[...new Set(input.events ?? row.events)]}::text[],
          filter_monitor_ids = ${[...new Set(input.filters?.monitorIds ?? row.filter_monitor_ids)]}::uuid[],
          filter_severity = ${[...new Set(input.filters?.severity ?? row.filter_severity)]}::text[],
          ${
        // Subscribing to ping.received now: pings from now on, not those recorded for others before.
        input.events !== undefined && input.events.includes("ping.received") && !row.events.includes("ping.received")
          ? sql`ping_seq = (select coalesce(max(seq), 0) from ping_events),`
          : sql``}
          updated_at = ${now}
        where id = ${id}
        returning ${sql.literal(webhookColumns)}`.pipe(Effect.orDie)
      yield* syncPingEvents
      return toWebhook(updated!)
    })

    const remove = Effect.fn("Webhooks.remove")(function*(orgId: string, id: string) {
      yield* findRow(orgId, id)
      const now = new Date(yield* Clock.currentTimeMillis)
      yield* sql`update webhooks set deleted_at = ${now} where id = ${id}`.pipe(Effect.orDie)
      // Nothing more is sent to it: its pending deliveries fail.
      yield* sql`
        update webhook_deliveries set status = 'failed', last_error = 'webhook deleted', next_attempt_at = null
        where webhook_id = ${id} and status = 'pending'`.pipe(Effect.orDie)
      yield* syncPingEvents
    })

    const deliveries = (orgId: string, id: string, limit: number) =>
      Effect.gen(function*() {
        yield* findRow(orgId, id)
        const rows = yield* sql<DeliveryRow>`
          select ${sql.literal(deliveryColumns)} from webhook_deliveries where webhook_id = ${id}
          order by created_at desc, id desc limit ${limit}`.pipe(Effect.orDie)
        return rows.map(toDelivery)
      })

    // ---- fan-out: events → deliveries --------------------------------------------------------------

    /** The chat message's facts for incident.opened / incident.resolved (from the incident's row). */
    const chatIncidentOf = (e: EventRow) =>
      Effect.gen(function*() {
        const incidentId = (e.data as { incident?: { id?: string } }).incident?.id
        if (incidentId === undefined) return undefined
        const [row] = yield* sql<{ type: string; severity: string; status: string; monitor_id: string; details: Record<string, unknown>; name: string }>`
          select i.type, i.severity, i.status, i.monitor_id, i.details, m.name
          from incidents i join monitors m on m.id = i.monitor_id where i.id = ${incidentId}`
        if (row === undefined) return undefined
        const resolved = e.type === "incident.resolved"
        const message: ChatIncident = {
          id: incidentId,
          type: resolved ? "RESOLVED" : (row.type as ChatIncident["type"]),
          status: resolved ? "RESOLVED" : "OPEN",
          severity: row.severity,
          monitorId: row.monitor_id,
          monitorName: row.name,
          details: row.details,
          at: e.created_at.toISOString()
        }
        return { message, rule: { type: row.type, severity: row.severity } }
      })

    /** One batch of events after the cursor into deliveries, in one transaction; answers how many events. */
    const fanOutBatch = Effect.gen(function*() {
      const now = new Date(yield* Clock.currentTimeMillis)
      return yield* sql.withTransaction(Effect.gen(function*() {
        const [cursor] = yield* sql<{ seq: string }>`select seq from delivery_cursor where id = 1 for update`
        const after = Number(cursor!.seq)
        const events = yield* sql<EventRow>`
          select id, seq, org_id, type, created_at, data, monitor_ids, severity from events
          where seq > ${after} order by seq limit ${FANOUT_BATCH}`
        if (events.length === 0) return 0
        const last = Number(events[events.length - 1]!.seq)
        const hooks = yield* sql<WebhookRow>`
          select ${sql.literal(webhookColumns)} from webhooks
          where deleted_at is null and org_id in ${sql.in([...new Set(events.map((e) => e.org_id))])}`
        const chats = yield* sql<ChatWebhookRow>`
          select ${sql.literal(chatColumns)} from chat_webhooks
          where deleted_at is null and status = 'active' and org_id in ${sql.in([...new Set(events.map((e) => e.org_id))])}`
        const rows: Array<{ webhook_id: string | null; chat_webhook_id: string | null; event_id: string; event_seq: number; event_type: string; body: string }> = []
        for (const e of events) {
          if (e.type.startsWith("maintenance.")) {
            // A window's notice goes to the chat webhooks its channels name (chat:<name>), whatever their rules.
            const data = e.data as {
              channels?: ReadonlyArray<string>
              window?: { name?: string; monitorIds?: ReadonlyArray<string>; reason?: string | null }
              startsAt?: string
              endsAt?: string
            }
            const names = new Set((data.channels ?? []).filter((c) => c.startsWith("chat:")).map((c) => c.slice(5)))
            for (const c of chats) {
              if (c.org_id !== e.org_id || Number(e.seq) <= Number(c.after_seq) || !names.has(c.name)) continue
              rows.push({
                webhook_id: null,
                chat_webhook_id: c.id,
                event_id: e.id,
                event_seq: Number(e.seq),
                event_type: e.type,
                body: JSON.stringify(maintenanceMessageOf({
                  kind: e.type.slice("maintenance.".length) as "upcoming" | "started" | "ended",
                  windowName: data.window?.name ?? "",
                  monitorCount: data.window?.monitorIds?.length ?? 0,
                  startsAt: data.startsAt ?? "",
                  endsAt: data.endsAt ?? "",
                  reason: data.window?.reason ?? null,
                  at: e.created_at.toISOString()
                }, c.mention))
              })
            }
            continue
          }
          if (e.type !== "incident.opened" && e.type !== "incident.resolved") continue
          const targets = chats.filter((c) => c.org_id === e.org_id && Number(e.seq) > Number(c.after_seq))
          if (targets.length === 0) continue
          const incident = yield* chatIncidentOf(e)
          if (incident === undefined) continue
          for (const c of targets) {
            if (!chatRulesMatch({ severity: c.rules_severity, types: c.rules_types }, incident.rule)) continue
            rows.push({
              webhook_id: null,
              chat_webhook_id: c.id,
              event_id: e.id,
              event_seq: Number(e.seq),
              event_type: e.type,
              body: JSON.stringify(messageOf(config.publicUrl, incident.message, c.mention))
            })
          }
        }
        for (const e of events) {
          const stored = toStoredEvent(e)
          let body: string | undefined
          for (const w of hooks) {
            if (w.org_id !== e.org_id || Number(e.seq) <= Number(w.after_seq)) continue
            const wanted = matches(
              { events: w.events, filterMonitorIds: w.filter_monitor_ids, filterSeverity: w.filter_severity },
              { type: e.type, monitorIds: e.monitor_ids, severity: e.severity }
            )
            if (!wanted) continue
            body ??= JSON.stringify(envelopeOf(stored))
            rows.push({ webhook_id: w.id, chat_webhook_id: null, event_id: e.id, event_seq: Number(e.seq), event_type: e.type, body })
          }
        }
        if (rows.length > 0) {
          yield* sql`
            insert into webhook_deliveries (webhook_id, chat_webhook_id, event_id, event_seq, event_type, body, created_at, next_attempt_at)
            select t.webhook_id, t.chat_webhook_id, t.event_id, t.event_seq, t.event_type, t.body, ${now}, ${now}
            from jsonb_to_recordset(${JSON.stringify(rows)}::jsonb)
              as t(webhook_id uuid, chat_webhook_id uuid, event_id uuid, event_seq bigint, event_type text, body text)
            on conflict do nothing`
        }
        yield* sql`update delivery_cursor set seq = ${last} where id = 1`
        return events.length
      }))
    }).pipe(Effect.orDie)

    /**
     * ping.received deliveries, made from `ping_events` (sql/0011_ping_events.sql) as the endpoint
     * can take them: each subscribed webhook keeps at most PING_QUEUE of them pending (a minute's
     * worth at its rate limit), and `ping_seq` says how far its pings have been turned into
     * deliveries; the rows after it are its queue. So a ping costs the intake one narrow row, and a
     * backlog of a million pings is a million such rows, not a million deliveries rewritten every
     * minute. Deliveries are still stored before they are attempted. Answers how many it made.
     */
    const feedPings = Effect.gen(function*() {
      const hooks = yield* sql<{ id: string }>`
        select id from webhooks where ${subscribedToPings}`
      let made = 0
      for (const { id } of hooks) made += yield* feedPingsOf(id)
      return made
    }).pipe(Effect.orDie)

    const feedPingsOf = (id: string) =>
      sql.withTransaction(Effect.gen(function*() {
        // The webhook's row locked: instances take turns feeding it.
        const [hook] = yield* sql<WebhookRow & { ping_seq: string }>`
          select ${sql.literal(webhookColumns)}, ping_seq from webhooks
          where id = ${id} and ${subscribedToPings} for update`
        if (hook === undefined) return 0
        const [queued] = yield* sql<{ n: number }>`
          select count(*)::int as n from webhook_deliveries
          where webhook_id = ${id} and status = 'pending' and event_type = 'ping.received'`
        const room = PING_QUEUE - queued!.n
        if (room <= 0) return 0
        const from = Number(hook.ping_seq)
        // Every row up to the newest seq has committed (writers hold the ping events lock until then).
        const [newest] = yield* sql<{ seq: string }>`select coalesce(max(seq), 0) as seq from ping_events`
        const upTo = Math.min(Number(newest!.seq), from + PING_SCAN)
        if (upTo <= from) return 0
        const filter = hook.filter_monitor_ids
        const events = yield* sql<EventRow>`
          select id, seq, org_id, type, created_at, data, monitor_ids, severity from ping_received_events
          where seq > ${from} and seq <= ${upTo} and org_id = ${hook.org_id}
            ${filter.length === 0 ? sql`` : sql`and monitor_ids && ${filter}::uuid[]`}
          order by seq limit ${room}`
        const reached = events.length === room ? Number(events[events.length - 1]!.seq) : upTo
        if (events.length > 0) {
          const now = new Date(yield* Clock.currentTimeMillis)
          // event_seq: the ping's own seq, so that the claims take a webhook's pings oldest first
          const rows = events.map((e) => ({ event_id: e.id, event_seq: Number(e.seq), body: JSON.stringify(envelopeOf(toStoredEvent(e))) }))
          yield* sql`
            insert into webhook_deliveries (webhook_id, event_id, event_seq, event_type, body, created_at, next_attempt_at)
            select ${id}, t.event_id, t.event_seq, 'ping.received', t.body, ${now}, ${now}
            from jsonb_to_recordset(${JSON.stringify(rows)}::jsonb) as t(event_id uuid, event_seq bigint, body text)
            on conflict do nothing`
        }
        yield* sql`update webhooks set ping_seq = ${reached} where id = ${id}`
        return events.length
      })).pipe(Effect.orDie)

    /**
     * Ping events every subscriber has been fed and that are over a day old are deleted, oldest
     * first, in chunks (they stay a day for GET /api/events?type=ping.received).
     */
    const purgePingEvents = (now: number) =>
      Effect.gen(function*() {
        const cutoff = new Date(now - PING_EVENTS_KEEP_MS)
        for (;;) {
          const deleted = yield* sql<{ n: number }>`
            with fed as (
              select coalesce(
                (select min(ping_seq) from webhooks where ${subscribedToPings}),
                (select max(seq) from ping_events)) as seq
            ), gone as (
              delete from ping_events where seq in (
                select seq from ping_events where seq <= (select seq from fed) order by seq limit ${PURGE_CHUNK})
              and at < ${cutoff}
              returning 1
            )
            select count(*)::int as n from gone`
          if ((deleted[0]?.n ?? 0) < PURGE_CHUNK) return
        }
      }).pipe(Effect.orDie)

    // ---- attempts -----------------------------------------------------------------------------------

    /** An attempt made, ready to be recorded with the delivery's new state. */
    interface Attempted {
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

    const qualifiedDeliveryColumns = deliveryColumns.split(", ").map((c) => `d.${c}`).join(", ")

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
            at: new Date(a.at).toISOString(),
            status_code: a.statusCode,
            response_time_ms: a.responseTimeMs,
            error: a.error,
            request_headers: a.headers,
            status: a.status,
            next_attempt_at: a.next?.toISOString() ?? null
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
          ${answer ? sql`returning ${sql.literal(qualifiedDeliveryColumns)}` : sql``}`

    /**
     * Takes up to `wanted` slots of each webhook's current minute (`limit` a minute), in one
     * transaction that locks the webhooks' counters; answers, per webhook, the count before and how
     * many were granted.
     */
    const takeRates = (windowStart: Date, wanted: ReadonlyMap<string, number>, limit: number) =>
      sql.withTransaction(Effect.gen(function*() {
        const ids = [...wanted.keys()]
        yield* sql`
          insert into webhook_rate (webhook_id, window_start, count)
          select id, ${windowStart}, 0 from unnest(${ids}::uuid[]) as id
          on conflict do nothing`
        const counters = yield* sql<{ webhook_id: string; count: number }>`
          select webhook_id, count from webhook_rate
          where window_start = ${windowStart} and webhook_id = any(${ids}::uuid[])
          order by webhook_id for update`
        const rates = new Map<string, { before: number; granted: number }>()
        for (const c of counters) {
          rates.set(c.webhook_id, { before: c.count, granted: Math.max(0, Math.min(wanted.get(c.webhook_id) ?? 0, limit - c.count)) })
        }
        const taken = [...rates].filter(([, r]) => r.granted > 0).map(([webhook_id, r]) => ({ webhook_id, n: r.granted }))
        if (taken.length > 0) {
          yield* sql`
            update webhook_rate r set count = r.count + t.n
            from jsonb_to_recordset(${JSON.stringify(taken)}::jsonb) as t(webhook_id uuid, n int)
            where r.webhook_id = t.webhook_id and r.window_start = ${windowStart}`
        }
        return rates
      }))

    /** Counts one message against a chat webhook's minute; answers the count, or undefined when full. */
    const takeRate = (webhookId: string, windowStart: Date, limit: number) =>
      Effect.map(
        sql<{ count: number }>`
          insert into webhook_rate (webhook_id, window_start, count) values (${webhookId}, ${windowStart}, 1)
          on conflict (webhook_id, window_start) do update set count = webhook_rate.count + 1
            where webhook_rate.count < ${limit}
          returning count`,
        (rows) => rows[0]?.count
      )

    const resultOf = (outcome: Outcome) => ({
      statusCode: outcome._tag === "Answered" ? outcome.status : null,
      error: outcome._tag === "Answered" ? (isSuccess(outcome) ? null : `HTTP ${outcome.status}`) : outcome.error
    })

    /**
     * Attempts claimed outbound deliveries: the rate limit first (over it, a delivery waits for the
     * next minute without using an attempt), then every POST at once (at most SEND_CONCURRENCY in
     * flight, over keep-alive connections), then all attempts recorded in one statement.
     */
    const attemptWebhooks = (claimed: ReadonlyArray<DeliveryRow>, answer = false): Effect.Effect<ReadonlyArray<DeliveryRow>> =>
      Effect.gen(function*() {
        if (claimed.length === 0) return []
        const now = yield* Clock.currentTimeMillis
        const ids = [...new Set(claimed.map((d) => d.webhook_id!))]
        const hooks = new Map(
          (yield* sql<WebhookRow>`
            select ${sql.literal(webhookColumns)} from webhooks where id = any(${ids}::uuid[]) and deleted_at is null`)
            .map((h) => [h.id, h])
        )
        const windowStart = Math.floor(now / RATE_WINDOW_MS) * RATE_WINDOW_MS
        const wanted = new Map<string, number>()
        for (const d of claimed) if (hooks.has(d.webhook_id!)) wanted.set(d.webhook_id!, (wanted.get(d.webhook_id!) ?? 0) + 1)
        const rates = wanted.size === 0 ? new Map() : yield* takeRates(new Date(windowStart), wanted, RATE_LIMIT_PER_MINUTE)
        const used = new Map<string, number>()
        const toSend: Array<{ delivery: DeliveryRow; hook: WebhookRow; count: number }> = []
        const waiting: Array<string> = []
        /** Webhooks over their limit this minute. */
        const full = new Set<string>()
        const orphaned: Array<string> = []
        for (const d of claimed) {
          const hook = hooks.get(d.webhook_id!)
          if (hook === undefined) {
            orphaned.push(d.id)
            continue
          }
          const rate = rates.get(hook.id)
          const i = used.get(hook.id) ?? 0
          if (rate === undefined || i >= rate.granted) {
            waiting.push(d.id)
            full.add(hook.id)
            continue
          }
          used.set(hook.id, i + 1)
          toSend.push({ delivery: d, hook, count: rate.before + i + 1 })
        }
        const settled: Array<DeliveryRow> = []
        if (waiting.length > 0) {
          // Over the limit: wait for the next minute (nothing is dropped). The other due, unclaimed
          // deliveries of those webhooks wait too, in one statement: otherwise a backlog (pings at
          // thousands a second against 100 a minute) is claimed and put back on every pass.
          yield* sql`
            update webhook_deliveries set next_attempt_at = ${new Date(windowStart + RATE_WINDOW_MS)}
            where webhook_id = any(${[...full]}::uuid[]) and status = 'pending'
              and next_attempt_at < ${new Date(windowStart + RATE_WINDOW_MS)}
              and (claimed_until is null or claimed_until <= ${new Date(now)})`
          settled.push(
            ...yield* sql<DeliveryRow>`
              update webhook_deliveries set next_attempt_at = ${new Date(windowStart + RATE_WINDOW_MS)}, claimed_until = null
              where id = any(${waiting}::uuid[]) returning ${sql.literal(deliveryColumns)}`
          )
        }
        if (orphaned.length > 0) {
          settled.push(
            ...yield* sql<DeliveryRow>`
              update webhook_deliveries set status = 'failed', last_error = 'webhook deleted', next_attempt_at = null, claimed_until = null
              where id = any(${orphaned}::uuid[]) returning ${sql.literal(deliveryColumns)}`
          )
        }
        const attemptOne = async ({ count, delivery, hook }: (typeof toSend)[number]): Promise<Attempted> => {
          // Standard Webhooks: the attempt's time is signed with the id and the body (replays of
          // a captured delivery are refused by a receiver that checks the timestamp)
          const timestamp = Math.floor(now / 1000)
          const headers: Record<string, string> = {
            "Content-Type": "application/json",
            "User-Agent": "jobmon-webhooks/1",
            "X-Service-Event": delivery.event_type,
            "X-Service-Delivery": delivery.id,
            "X-Service-Signature": sign(hook.secret, delivery.body),
            "webhook-id": delivery.id,
            "webhook-timestamp": String(timestamp),
            "webhook-signature": standardSignature(hook.secret, delivery.id, timestamp, delivery.body),
            "X-RateLimit-Limit": String(RATE_LIMIT_PER_MINUTE),
            "X-RateLimit-Remaining": String(RATE_LIMIT_PER_MINUTE - count),
            "X-RateLimit-Reset": String(Math.floor((windowStart + RATE_WINDOW_MS) / 1000))
          }
          const result = await send(hook.url, delivery.body, headers, { allowPrivateTargets })
          const n = delivery.attempts + 1
          const delay = isRetryable(result.outcome) ? delayAfterAttempt(n) : undefined
          const status = isSuccess(result.outcome) ? "succeeded" : delay !== undefined ? "pending" : "failed"
          return {
            id: delivery.id,
            attempt: n,
            at: now,
            headers,
            ...resultOf(result.outcome),
            responseTimeMs: result.responseTimeMs,
            status,
            next: status === "pending" ? new Date(now + delay!) : null
          }
        }
        // one promise pool, not a fiber per POST: at a thousand a second the difference shows
        const attempts = yield* Effect.promise(() => inPool(toSend, SEND_CONCURRENCY, attemptOne))
        settled.push(...yield* recordAttempts(attempts, answer))
        return settled
      }).pipe(Effect.orDie)

    /** Claims due outbound deliveries (SKIP LOCKED and a lease: concurrent workers never share one) and attempts them. */
    const claimAndSendWebhooks = Effect.gen(function*() {
      const now = yield* Clock.currentTimeMillis
      const claimed = yield* sql<DeliveryRow>`
        update webhook_deliveries set claimed_until = ${new Date(now + LEASE_MS)}
        where id in (
          select id from webhook_deliveries
          where status = 'pending' and webhook_id is not null and next_attempt_at <= ${new Date(now)}
            and (claimed_until is null or claimed_until <= ${new Date(now)})
          order by next_attempt_at, event_seq, id
          limit ${CLAIM_BATCH}
          for update skip locked)
        returning ${sql.literal(deliveryColumns)}`.pipe(Effect.orDie)
      const ordered = [...claimed].sort((a, b) =>
        a.next_attempt_at!.getTime() - b.next_attempt_at!.getTime() || Number(a.event_seq ?? 0) - Number(b.event_seq ?? 0)
      )
      yield* attemptWebhooks(ordered)
      return claimed.length
    })

    // ---- chat: one worker per chat webhook at a time; what piled up goes out together ------------------

    const markInvalid = (chatId: string, reason: string, now: number) =>
      Effect.gen(function*() {
        yield* sql`
          update chat_webhooks set status = 'invalid', status_reason = ${reason}, updated_at = ${new Date(now)}
          where id = ${chatId}`
        yield* sql`
          update webhook_deliveries set status = 'failed', last_error = 'chat webhook invalid', next_attempt_at = null, claimed_until = null
          where chat_webhook_id = ${chatId} and status = 'pending' and claimed_until is null`
      })

    const invalidReason = (status: number) =>
      `The chat service answered ${status}: the webhook was deleted or its token is no longer valid. ` +
      "Regenerate it in the chat service and update the url here."

    /** Chat webhooks with due messages that no worker holds and that need not wait, leased to this worker. */
    const claimChats = Effect.gen(function*() {
      const now = new Date(yield* Clock.currentTimeMillis)
      return yield* sql<ChatWebhookRow & { deleted: boolean }>`
        update chat_webhooks set claimed_until = ${new Date(now.getTime() + LEASE_MS)}
        where id in (
          select c.id from chat_webhooks c
          where c.id in (
              select d.chat_webhook_id from webhook_deliveries d
              where d.status = 'pending' and d.chat_webhook_id is not null and d.next_attempt_at <= ${now})
            and (c.claimed_until is null or c.claimed_until <= ${now})
            and (c.wait_until is null or c.wait_until <= ${now})
          limit ${CHAT_CLAIM_BATCH}
          for update skip locked)
        returning ${sql.literal(chatColumns)}, deleted_at is not null as deleted`
    })

    /**
     * Sends a claimed chat webhook's due messages, oldest first, packed into as few messages as
     * Discord allows (10 embeds, 6,000 characters). A 429, a 5xx or a full minute makes the webhook
     * wait (wait_until); what is not sent stays pending and goes with what arrives meanwhile.
     */
    const sendChat = (chat: ChatWebhookRow & { deleted: boolean }) =>
      Effect.gen(function*() {
        const now = yield* Clock.currentTimeMillis
        const due = yield* sql<DeliveryRow>`
          select ${sql.literal(deliveryColumns)} from webhook_deliveries
          where chat_webhook_id = ${chat.id} and status = 'pending' and next_attempt_at <= ${new Date(now)}
          order by event_seq nulls last, created_at, id
          limit ${CHAT_ROWS_PER_ROUND}`
        if (chat.deleted || chat.status !== "active") {
          yield* sql`
            update webhook_deliveries set status = 'failed', next_attempt_at = null, claimed_until = null,
              last_error = ${chat.deleted ? "chat webhook deleted" : "chat webhook invalid"}
            where id = any(${due.map((d) => d.id)}::uuid[])`
          yield* sql`update chat_webhooks set claimed_until = null where id = ${chat.id}`
          return
        }
        const windowStart = Math.floor(now / RATE_WINDOW_MS) * RATE_WINDOW_MS
        const headers: Record<string, string> = { "Content-Type": "application/json", "User-Agent": "jobmon-alerts/1" }
        let waitUntil: number | null = null
        for (const group of packMessages(due, (d) => JSON.parse(d.body) as ChatMessageBody)) {
          const count = yield* takeRate(chat.id, new Date(windowStart), CHAT_RATE_LIMIT_PER_MINUTE)
          if (count === undefined) {
            waitUntil = windowStart + RATE_WINDOW_MS
            break
          }
          const message = mergeMessages(group.map((d) => JSON.parse(d.body) as ChatMessageBody))
          const result = yield* Effect.promise(() =>
            send(postUrlOf(chat.url, message), JSON.stringify(message), headers, { allowPrivateTargets })
          )
          const outcome = result.outcome
          const { error, statusCode } = resultOf(outcome)
          let retry = false
          if (!isSuccess(outcome) && (statusCode === 429 || isRetryable(outcome))) {
            // the oldest message in the group sets the backoff; Retry-After, when longer, wins
            const n = Math.max(...group.map((d) => d.attempts)) + 1
            const delay = chatDelayAfterAttempt(n) ?? chatDelayAfterAttempt(CHAT_MAX_ATTEMPTS - 1)!
            waitUntil = now + Math.max(delay, (result.retryAfterSeconds ?? 0) * 1000)
            retry = true
          }
          yield* recordAttempts(group.map((d): Attempted => {
            const pending = retry && d.attempts + 1 < CHAT_MAX_ATTEMPTS
            return {
              id: d.id,
              attempt: d.attempts + 1,
              at: now,
              headers,
              statusCode,
              responseTimeMs: result.responseTimeMs,
              error,
              status: isSuccess(outcome) ? "succeeded" : pending ? "pending" : "failed",
              next: pending ? new Date(waitUntil!) : null
            }
          }))
          if (statusCode === 404 || statusCode === 401) {
            yield* markInvalid(chat.id, invalidReason(statusCode), now)
            break
          }
          if (retry) break
        }
        yield* sql`
          update chat_webhooks set claimed_until = null, wait_until = ${waitUntil === null ? null : new Date(waitUntil)}
          where id = ${chat.id}`
      }).pipe(Effect.orDie)

    const claimAndSendChats = Effect.gen(function*() {
      const chats = yield* Effect.orDie(claimChats)
      yield* Effect.forEach(chats, sendChat, { concurrency: "unbounded", discard: true })
      return chats.length
    })

    // ---- the worker -------------------------------------------------------------------------------

    /** When the next pending delivery is due: its time, its lease's end, or its chat webhook's wait. */
    const nextDue = Effect.map(
      sql<{ at: Date | null }>`
        select min(at) as at from (
          select min(greatest(next_attempt_at, coalesce(claimed_until, next_attempt_at))) as at
          from webhook_deliveries where status = 'pending' and webhook_id is not null
          union all
          select greatest(min(d.next_attempt_at), max(coalesce(c.wait_until, d.next_attempt_at)), max(coalesce(c.claimed_until, d.next_attempt_at)))
          from webhook_deliveries d join chat_webhooks c on c.id = d.chat_webhook_id
          where d.status = 'pending' and d.chat_webhook_id is not null
          group by c.id
        ) due`.pipe(Effect.orDie),
      (rows) => rows[0]?.at?.getTime()
    )

    const drain = (step: Effect.Effect<number>, batch: number) =>
      Effect.gen(function*() {
        while ((yield* step) === batch) {
          // more due
        }
      })

    const sendDue = Effect.all([
      drain(claimAndSendChats, CHAT_CLAIM_BATCH),
      ...Array.from({ length: CLAIM_LANES }, () => drain(claimAndSendWebhooks, CLAIM_BATCH))
    ], { concurrency: "unbounded", discard: true })

    /**
     * Once a minute: rate counters of past minutes are of no use, and ping events every subscriber
     * has had are deleted after a day.
     */
    let purgedAt = Number.NEGATIVE_INFINITY
    const purgeOnceAMinute = (now: number) =>
      now - purgedAt < RATE_WINDOW_MS ? Effect.void : Effect.gen(function*() {
        purgedAt = now
        yield* sql`delete from webhook_rate where window_start < ${new Date(now - 2 * RATE_WINDOW_MS)}`.pipe(Effect.orDie)
        yield* purgePingEvents(now)
      })

    /**
     * Fans out every new event, feeds the ping subscribers and sends everything due; answers how long
     * to sleep. Under a stream of events, each fan-out batch runs beside the sending of what the one
     * before produced, so neither waits for the other.
     */
    const pass = Effect.gen(function*() {
      // Which pings record events: another instance may have changed the subscriptions. Its change
      // woke this worker (sql/0012), but a lost notification must not matter: every pass compares
      // the subscription version (sql/0020), however it was woken (notification, retry, poll).
      yield* syncPingEvents
      for (;;) {
        const [events] = yield* Effect.all([fanOutBatch, sendDue], { concurrency: "unbounded" })
        if (events < FANOUT_BATCH) break
      }
      yield* feedPings
      yield* sendDue
      const now = yield* Clock.currentTimeMillis
      yield* purgeOnceAMinute(now)
      const due = yield* nextDue
      // Ping events do not wake the worker: while someone subscribes to them, it looks every second.
      const poll = intake.pingEventsOn() ? PING_FEED_MS : SAFETY_POLL_MS
      return due === undefined ? poll : Math.min(poll, Math.max(1, due - now))
    })

    const wake = yield* Queue.unbounded<Deferred.Deferred<void> | undefined>()

    /**
     * This instance's LISTEN connection, as a stream of wake-ups that fails when the connection is
     * lost. (The sql-pg client's own `listen` keeps a lost connection without a word: its stream
     * neither ends nor fails, notifications just stop, and every alert then waited for the safety
     * poll until a restart.) Its first element comes once LISTEN is in place: what was notified
     * while no connection listened is caught up by the pass it starts.
     */
    const wakeups = Stream.asyncPush<void, Error>((emit) =>
      Effect.gen(function*() {
        const client = new Pg.Client(database.pool.options)
        yield* Effect.addFinalizer(() =>
          Effect.sync(() => {
            client.removeAllListeners()
            client.on("error", () => {})
            void client.end().catch(() => {})
          })
        )
        client.on("error", (e) => emit.fail(e))
        client.on("end", () => emit.fail(new Error("the LISTEN connection closed")))
        client.on("notification", (n) => {
          if (n.channel === WAKE_CHANNEL) emit.single(undefined)
        })
        // interruptible: a shutdown does not wait for a connection that does not come
        yield* Effect.tryPromise({
          try: async () => {
            await client.connect()
            await client.query(`LISTEN ${WAKE_CHANNEL}`)
          },
          catch: (cause) => (cause instanceof Error ? cause : new Error(String(cause)))
        })
        emit.single(undefined)
      })
    )

    // Woken by PostgreSQL (a trigger notifies on every write of events or deliveries, from any
    // instance); the Clock-timed sleep only waits for retries, rate windows, and as a safety poll.
    yield* wakeups.pipe(
      Stream.runForEach(() => Queue.offer(wake, undefined)),
      Effect.catchAllCause((cause) => Effect.logWarning("delivery LISTEN lost; polling until it is back", cause)),
      Effect.zipRight(Effect.sleep(LISTEN_RETRY)),
      Effect.forever,
      Effect.forkScoped
    )

    // Each pass starts by syncing which pings record events (the first one too, at start).
    const worker = Effect.gen(function*() {
      for (;;) {
        const waiting = yield* Queue.takeAll(wake)
        const wait = yield* pass.pipe(
          Effect.catchAllCause((cause) => Effect.as(Effect.logError("webhook delivery pass failed", cause), ERROR_RETRY_MS))
        )
        for (const d of waiting) if (d !== undefined) yield* Deferred.succeed(d, undefined)
        const more = yield* Queue.size(wake)
        if (more === 0) yield* Effect.raceFirst(Effect.sleep(wait), Queue.take(wake).pipe(Effect.flatMap((d) => Queue.offer(wake, d))))
      }
    })
    yield* Effect.forkScoped(worker)

    /** Runs one whole pass of the worker (fan-out and due deliveries) and waits for it (tests, test endpoint). */
    const flush = Effect.gen(function*() {
      const done = yield* Deferred.make<void>()
      yield* Queue.offer(wake, done)
      yield* Deferred.await(done)
    })

    /** POST /api/webhooks/{id}/test: a webhook.test delivery, attempted at once. */
    const test = Effect.fn("Webhooks.test")(function*(orgId: string, id: string) {
      const hook = yield* findRow(orgId, id)
      const now = yield* Clock.currentTimeMillis
      const eventId = randomUUID()
      const body = JSON.stringify({
        event: "webhook.test",
        id: eventId,
        createdAt: new Date(now).toISOString(),
        data: { webhook: { id: hook.id, url: hook.url }, message: "This is a test delivery from jobmon." }
      })
      const [row] = yield* sql<DeliveryRow>`
        insert into webhook_deliveries (webhook_id, event_id, event_type, body, created_at, next_attempt_at, claimed_until)
        values (${hook.id}, ${eventId}, 'webhook.test', ${body}, ${new Date(now)}, ${new Date(now)}, ${new Date(now + LEASE_MS)})
        returning ${sql.literal(deliveryColumns)}`.pipe(Effect.orDie)
      return toDelivery((yield* attemptWebhooks([row!], true))[0]!)
    })

    // ---- chat webhooks (decisions §9) ----------------------------------------------------------------

    const checkChatFields = (input: { url?: string | undefined; name?: string | undefined; mention?: string | null | undefined }) =>
      Effect.gen(function*() {
        yield* checkText([["url", input.url], ["name", input.name], ["mention", input.mention]])
        if (input.name !== undefined && (input.name.trim() === "" || input.name.length > MAX_NAME_LENGTH || /[\s]/.test(input.name))) {
          return yield* new ValidationError({
            path: "name",
            message: `name must have 1 to ${MAX_NAME_LENGTH} characters and no spaces (maintenance channels name it as chat:<name>).`
          })
        }
        if (typeof input.mention === "string" && (input.mention.length === 0 || input.mention.length > MAX_MENTION_LENGTH)) {
          return yield* new ValidationError({ path: "mention", message: `mention must have 1 to ${MAX_MENTION_LENGTH} characters (e.g. <@&123>).` })
        }
      })

    const findChat = (orgId: string, id: string) =>
      Effect.gen(function*() {
        if (!isUuid(id)) return yield* notFound("chat webhook", echo(id))
        const [row] = yield* sql<ChatWebhookRow>`
          select ${sql.literal(chatColumns)} from chat_webhooks where id = ${id} and org_id = ${orgId} and deleted_at is null`.pipe(
          Effect.orDie
        )
        if (row === undefined) return yield* notFound("chat webhook", echo(id))
        return row
      })

    const chatCreate = Effect.fn("Webhooks.chatCreate")(function*(orgId: string, input: CreateChatWebhookRequest) {
      yield* checkChatFields(input)
      yield* checkUrl(input.url)
      const name = input.name ?? new URL(input.url).hostname
      const now = new Date(yield* Clock.currentTimeMillis)
      const row = yield* sql.withTransaction(Effect.gen(function*() {
        yield* checkQuota(orgId, "chatWebhooks")
        const [row] = yield* sql<ChatWebhookRow>`
          insert into chat_webhooks (org_id, name, url, rules_severity, rules_types, mention, after_seq, created_at, updated_at)
          values (${orgId}, ${name}, ${input.url}, ${[...new Set(input.rules?.severity ?? [])]}::text[],
            ${[...new Set(input.rules?.types ?? [])]}::text[], ${input.mention ?? null},
            (select coalesce(max(seq), 0) from events), ${now}, ${now})
          returning ${sql.literal(chatColumns)}`
        return row!
      })).pipe(Effect.catchTag("SqlError", Effect.die))
      // the only answer that shows the url unmasked
      return { ...toChatWebhook(row), url: row.url }
    })

    const chatList = (orgId: string) =>
      sql<ChatWebhookRow>`
        select ${sql.literal(chatColumns)} from chat_webhooks where org_id = ${orgId} and deleted_at is null
        order by created_at, id`.pipe(Effect.orDie, Effect.map((rows) => rows.map(toChatWebhook)))

    const chatGet = (orgId: string, id: string) => Effect.map(findChat(orgId, id), toChatWebhook)

    const chatUpdate = Effect.fn("Webhooks.chatUpdate")(function*(orgId: string, id: string, input: UpdateChatWebhookRequest) {
      const row = yield* findChat(orgId, id)
      yield* checkChatFields(input)
      const url = newUrl(input.url, maskChatUrl(row.url))
      if (url !== undefined) yield* checkUrl(url)
      const now = new Date(yield* Clock.currentTimeMillis)
      // A new url makes an invalid webhook active again.
      const urlChanged = url !== undefined && url !== row.url
      const [updated] = yield* sql<ChatWebhookRow>`
        update chat_webhooks set
          name = ${input.name ?? row.name},
          url = ${url ?? row.url},
          rules_severity = ${[...new Set(input.rules?.severity ?? row.rules_severity)]}::text[],
          rules_types = ${[...new Set(input.rules?.types ?? row.rules_types)]}::text[],
          mention = ${input.mention === undefined ? row.mention : input.mention},
          status = ${urlChanged ? "active" : row.status},
          status_reason = ${urlChanged ? null : row.status_reason},
          updated_at = ${now}
        where id = ${id}
        returning ${sql.literal(chatColumns)}`.pipe(Effect.orDie)
      return toChatWebhook(updated!)
    })

    const chatRemove = Effect.fn("Webhooks.chatRemove")(function*(orgId: string, id: string) {
      yield* findChat(orgId, id)
      const now = new Date(yield* Clock.currentTimeMillis)
      yield* sql`update chat_webhooks set deleted_at = ${now} where id = ${id}`.pipe(Effect.orDie)
      yield* sql`
        update webhook_deliveries set status = 'failed', last_error = 'chat webhook deleted', next_attempt_at = null
        where chat_webhook_id = ${id} and status = 'pending'`.pipe(Effect.orDie)
    })

    /** POST /api/alerts/chat/test: one message now; 502 names the chat service's answer. */
    const chatTest = Effect.fn("Webhooks.chatTest")(function*(orgId: string, id: string) {
      const chat = yield* findChat(orgId, id)
      const now = yield* Clock.currentTimeMillis
      const body = JSON.stringify(testMessageOf(chat.name, chat.mention, new Date(now).toISOString()))
      const result = yield* Effect.promise(() =>
        send(chat.url, body, { "Content-Type": "application/json", "User-Agent": "jobmon-alerts/1" }, { allowPrivateTargets })
      )
      const outcome = result.outcome
      if (isSuccess(outcome)) return { sent: true as const, status: chat.status }
      if (outcome._tag === "Answered" && (outcome.status === 404 || outcome.status === 401)) {
        yield* markInvalid(chat.id, invalidReason(outcome.status), now).pipe(Effect.orDie)
        return yield* new BadGateway({ message: invalidReason(outcome.status) })
      }
      return yield* new BadGateway({
        message: outcome._tag === "Answered"
          ? `The chat service answered ${outcome.status}; the test message was not accepted.`
          : `The chat service could not be reached (${echo(outcome.error, 160)}).`
      })
    })

    return {
      create,
      list,
      get,
      update,
      remove,
      deliveries,
      test,
      flush,
      chatCreate,
      chatList,
      chatGet,
      chatUpdate,
      chatRemove,
      chatTest
    } as const
  })
}) {}
