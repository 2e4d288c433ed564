import { SqlClient } from "@effect/sql"
import { Effect } from "effect"
import type { ChatDestination } from "./ChatChannel.js"
import type { WebhookDestination } from "./WebhookChannel.js"

/**
 * The destinations' configuration rows: outbound webhooks (`webhooks`) and chat alert webhooks
 * (`chat_webhooks`), sql/0006_delivery.sql, and alert channels of every other type
 * (`alert_channels`, sql/0024_alert_channels.sql). SQL only; a deleted one keeps its row
 * (`deleted_at`).
 */

export interface WebhookRow {
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

export interface ChatWebhookRow {
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

export interface AlertChannelRow {
  readonly id: string
  readonly org_id: string
  /** Its module: slack, email, … */
  readonly type: string
  readonly name: string
  /** The type's configuration as validated, secrets included. */
  readonly config: Record<string, unknown>
  readonly rules_monitor_ids: ReadonlyArray<string>
  readonly rules_tags: ReadonlyArray<string>
  readonly rules_types: ReadonlyArray<string>
  readonly rules_severity: ReadonlyArray<string>
  readonly rules_events: ReadonlyArray<string>
  readonly reminder_every_minutes: number | null
  readonly reminder_max: number | null
  readonly status: "active" | "invalid"
  readonly status_reason: string | null
  readonly after_seq: string | number
  readonly created_at: Date
}

export const webhookColumns = "id, org_id, url, secret, events, filter_monitor_ids, filter_severity, after_seq, created_at"
export const chatColumns = "id, org_id, name, url, rules_severity, rules_types, mention, status, status_reason, after_seq, created_at"
export const alertChannelColumns =
  "id, org_id, type, name, config, rules_monitor_ids, rules_tags, rules_types, rules_severity, rules_events, reminder_every_minutes, reminder_max, status, status_reason, after_seq, created_at"

/** The tables of the destinations, and their rows. */
export interface DestinationRows {
  readonly webhooks: WebhookRow
  readonly chat_webhooks: ChatWebhookRow
  readonly alert_channels: AlertChannelRow
}
export type DestinationTable = keyof DestinationRows

/**
 * The tables of destinations that are claimed whole (one worker at a time sends to one, and packs
 * what waits for it): they have `status` and `status_reason` (invalid), `claimed_until` (the lease)
 * and `wait_until` (a backoff or a full minute).
 */
export type ClaimedWholeTable = "chat_webhooks" | "alert_channels"

/** The column of `webhook_deliveries` that names a delivery's destination (one per table). */
export type DestinationColumn = "webhook_id" | "chat_webhook_id" | "channel_id"

/** Where a kind's destinations are stored, and what messages about one call it. */
export interface DestinationStore<T extends DestinationTable> {
  readonly table: T
  readonly column: DestinationColumn
  /** "<noun> … does not exist" (404); "<noun> deleted" and "<noun> invalid" on its failed deliveries. */
  readonly noun: string
  /** Kinds that share a table (alert_channels: one per type) read the rows of their type only. */
  readonly type?: string | undefined
}

export const WEBHOOKS: DestinationStore<"webhooks"> = { table: "webhooks", column: "webhook_id", noun: "webhook" }
export const CHAT_WEBHOOKS: DestinationStore<"chat_webhooks"> = { table: "chat_webhooks", column: "chat_webhook_id", noun: "chat webhook" }
/** The alert channels of the channels resource, all types (the API's view). */
export const ALERT_CHANNELS: DestinationStore<"alert_channels"> = { table: "alert_channels", column: "channel_id", noun: "alert channel" }
/** The alert channels of one type (the delivery cycle's view: one kind per type). */
export const alertChannelsOfType = (type: string): DestinationStore<"alert_channels"> => ({ ...ALERT_CHANNELS, type })

export const columnsOf: Record<DestinationTable, string> = {
  webhooks: webhookColumns,
  chat_webhooks: chatColumns,
  alert_channels: alertChannelColumns
}

/** Which destinations of a table take new messages: not deleted, and active where one can be invalid. */
const takesMessages: Record<DestinationTable, string> = {
  webhooks: "deleted_at is null",
  chat_webhooks: "deleted_at is null and status = 'active'",
  alert_channels: "deleted_at is null and status = 'active'"
}

/** A webhook row as its channel reads it. */
export const webhookDestinationOf = (row: WebhookRow): WebhookDestination => ({
  id: row.id,
  url: row.url,
  secret: row.secret,
  events: row.events,
  filterMonitorIds: row.filter_monitor_ids,
  filterSeverity: row.filter_severity
})

/** A chat webhook row as its channel reads it. */
export const chatDestinationOf = (row: ChatWebhookRow): ChatDestination => ({
  id: row.id,
  name: row.name,
  url: row.url,
  rulesSeverity: row.rules_severity,
  rulesTypes: row.rules_types,
  mention: row.mention
})

export interface NewWebhook {
  readonly orgId: string
  readonly url: string
  readonly secret: string
  readonly events: ReadonlyArray<string>
  readonly filterMonitorIds: ReadonlyArray<string>
  readonly filterSeverity: ReadonlyArray<string>
  readonly now: Date
}

export interface WebhookChange {
  readonly url: string
  readonly events: ReadonlyArray<string>
  readonly filterMonitorIds: ReadonlyArray<string>
  readonly filterSeverity: ReadonlyArray<string>
  /** It starts subscribing to ping.received: pings from now on, not those recorded for others before. */
  readonly pingsFromNow: boolean
  readonly now: Date
}

export interface NewChatWebhook {
  readonly orgId: string
  readonly name: string
  readonly url: string
  readonly rulesSeverity: ReadonlyArray<string>
  readonly rulesTypes: ReadonlyArray<string>
  readonly mention: string | null
  readonly now: Date
}

export interface ChatWebhookChange {
  readonly name: string
  readonly url: string
  readonly rulesSeverity: ReadonlyArray<string>
  readonly rulesTypes: ReadonlyArray<string>
  readonly mention: string | null
  readonly status: "active" | "invalid"
  readonly statusReason: string | null
  readonly now: Date
}

export interface NewAlertChannel {
  readonly orgId: string
  readonly type: string
  readonly name: string
  readonly config: Record<string, unknown>
  readonly rules: AlertRulesColumns
  readonly reminders: { readonly everyMinutes: number; readonly max: number } | null
  readonly now: Date
}

export interface AlertRulesColumns {
  readonly monitorIds: ReadonlyArray<string>
  readonly tags: ReadonlyArray<string>
  readonly types: ReadonlyArray<string>
  readonly severity: ReadonlyArray<string>
  readonly events: ReadonlyArray<string>
}

/** An edit: everything as it is to be, and the channel active again (docs/alerts.md: an edit revives an invalid channel). */
export type AlertChannelChange = Omit<NewAlertChannel, "orgId" | "type">

export class DestinationsRepo extends Effect.Service<DestinationsRepo>()("jobmon/DestinationsRepo", {
  effect: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient

    const find = <T extends DestinationTable>(table: T, orgId: string, id: string) =>
      Effect.map(
        sql<DestinationRows[T]>`
          select ${sql.literal(columnsOf[table])} from ${sql.literal(table)}
          where id = ${id} and org_id = ${orgId} and deleted_at is null`,
        (rows) => rows[0]
      ).pipe(Effect.orDie, Effect.withSpan("DestinationsRepo.find"))

    const list = <T extends DestinationTable>(table: T, orgId: string) =>
      sql<DestinationRows[T]>`
        select ${sql.literal(columnsOf[table])} from ${sql.literal(table)}
        where org_id = ${orgId} and deleted_at is null
        order by created_at, id`.pipe(Effect.orDie, Effect.withSpan("DestinationsRepo.list"))

    /**
     * How many live ones the organization has, with its row locked until the transaction ends (FOR
     * NO KEY UPDATE: creates of one organization take turns; foreign-key checks elsewhere are not
     * blocked). Run inside the create's transaction.
     */
    const countLiveLocked = (table: DestinationTable, orgId: string) =>
      Effect.gen(function*() {
        yield* sql`select 1 from organizations where id = ${orgId} for no key update`
        const [row] = yield* sql<{ n: number }>`
          select count(*)::int as n from ${sql.literal(table)} where org_id = ${orgId} and deleted_at is null`
        return row!.n
      }).pipe(Effect.orDie, Effect.withSpan("DestinationsRepo.countLiveLocked"))

    const softDelete = (table: DestinationTable, id: string, now: Date) =>
      sql`update ${sql.literal(table)} set deleted_at = ${now} where id = ${id}`.pipe(Effect.orDie, Effect.asVoid, Effect.withSpan("DestinationsRepo.softDelete"))

    /** Which of `ids` are monitors of the organization that are not deleted (lowercase). */
    const liveMonitorsOf = (orgId: string, ids: ReadonlyArray<string>) =>
      Effect.map(
        sql<{ id: string }>`
          select id from monitors
          where org_id = ${orgId} and deleted_at is null and id = any(${[...new Set(ids)]}::uuid[])`,
        (rows) => new Set(rows.map((r) => r.id.toLowerCase()))
      ).pipe(Effect.orDie, Effect.withSpan("DestinationsRepo.liveMonitorsOf"))

    /** A new webhook receives the events (and pings) recorded after it. */
    const insertWebhook = (w: NewWebhook) =>
      Effect.map(
        sql<WebhookRow>`
          insert into webhooks (org_id, url, secret, events, filter_monitor_ids, filter_severity, after_seq, ping_seq, created_at, updated_at)
          values (${w.orgId}, ${w.url}, ${w.secret}, ${w.events}::text[], ${w.filterMonitorIds}::uuid[], ${w.filterSeverity}::text[],
            (select coalesce(max(seq), 0) from events), (select coalesce(max(seq), 0) from ping_events), ${w.now}, ${w.now})
          returning ${sql.literal(webhookColumns)}`,
        (rows) => rows[0]!
      ).pipe(Effect.orDie, Effect.withSpan("DestinationsRepo.insertWebhook"))

    const updateWebhook = (id: string, c: WebhookChange) =>
      Effect.map(
        sql<WebhookRow>`
          update webhooks set
            url = ${c.url},
            events = ${c.events}::text[],
            filter_monitor_ids = ${c.filterMonitorIds}::uuid[],
            filter_severity = ${c.filterSeverity}::text[],
            ${c.pingsFromNow ? sql`ping_seq = (select coalesce(max(seq), 0) from ping_events),` : sql``}
            updated_at = ${c.now}
          where id = ${id}
          returning ${sql.literal(webhookColumns)}`,
        (rows) => rows[0]!
      ).pipe(Effect.orDie, Effect.withSpan("DestinationsRepo.updateWebhook"))

    /** A new chat webhook receives the events recorded after it. */
    const insertChat = (c: NewChatWebhook) =>
      Effect.map(
        sql<ChatWebhookRow>`
          insert into chat_webhooks (org_id, name, url, rules_severity, rules_types, mention, after_seq, created_at, updated_at)
          values (${c.orgId}, ${c.name}, ${c.url}, ${c.rulesSeverity}::text[], ${c.rulesTypes}::text[], ${c.mention},
            (select coalesce(max(seq), 0) from events), ${c.now}, ${c.now})
          returning ${sql.literal(chatColumns)}`,
        (rows) => rows[0]!
      ).pipe(Effect.orDie, Effect.withSpan("DestinationsRepo.insertChat"))

    const updateChat = (id: string, c: ChatWebhookChange) =>
      Effect.map(
        sql<ChatWebhookRow>`
          update chat_webhooks set
            name = ${c.name},
            url = ${c.url},
            rules_severity = ${c.rulesSeverity}::text[],
            rules_types = ${c.rulesTypes}::text[],
            mention = ${c.mention},
            status = ${c.status},
            status_reason = ${c.statusReason},
            updated_at = ${c.now}
          where id = ${id}
          returning ${sql.literal(chatColumns)}`,
        (rows) => rows[0]!
      ).pipe(Effect.orDie, Effect.withSpan("DestinationsRepo.updateChat"))

    /** A new alert channel receives the events recorded after it. */
    const insertAlertChannel = (c: NewAlertChannel) =>
      Effect.map(
        sql<AlertChannelRow>`
          insert into alert_channels (org_id, type, name, config, rules_monitor_ids, rules_tags, rules_types, rules_severity,
            rules_events, reminder_every_minutes, reminder_max, after_seq, created_at, updated_at)
          values (${c.orgId}, ${c.type}, ${c.name}, ${JSON.stringify(c.config)}::jsonb, ${c.rules.monitorIds}::uuid[],
            ${c.rules.tags}::text[], ${c.rules.types}::text[], ${c.rules.severity}::text[], ${c.rules.events}::text[],
            ${c.reminders?.everyMinutes ?? null}, ${c.reminders?.max ?? null},
            (select coalesce(max(seq), 0) from events), ${c.now}, ${c.now})
          returning ${sql.literal(alertChannelColumns)}`,
        (rows) => rows[0]!
      ).pipe(Effect.orDie, Effect.withSpan("DestinationsRepo.insertAlertChannel"))

    /** An edit: the channel as given, active again, and no longer waiting. */
    const updateAlertChannel = (id: string, c: AlertChannelChange) =>
      Effect.map(
        sql<AlertChannelRow>`
          update alert_channels set
            name = ${c.name},
            config = ${JSON.stringify(c.config)}::jsonb,
            rules_monitor_ids = ${c.rules.monitorIds}::uuid[],
            rules_tags = ${c.rules.tags}::text[],
            rules_types = ${c.rules.types}::text[],
            rules_severity = ${c.rules.severity}::text[],
            rules_events = ${c.rules.events}::text[],
            reminder_every_minutes = ${c.reminders?.everyMinutes ?? null},
            reminder_max = ${c.reminders?.max ?? null},
            status = 'active',
            status_reason = null,
            wait_until = null,
            updated_at = ${c.now}
          where id = ${id}
          returning ${sql.literal(alertChannelColumns)}`,
        (rows) => rows[0]!
      ).pipe(Effect.orDie, Effect.withSpan("DestinationsRepo.updateAlertChannel"))

    /** The destinations of these organizations that take new messages (fan-out); of its type only where the store names one. */
    const audienceOf = <T extends DestinationTable>(store: DestinationStore<T>, orgIds: ReadonlyArray<string>) =>
      sql<DestinationRows[T]>`
        select ${sql.literal(columnsOf[store.table])} from ${sql.literal(store.table)}
        where ${sql.literal(takesMessages[store.table])} and org_id in ${sql.in(orgIds)}
          ${store.type === undefined ? sql`` : sql`and type = ${store.type}`}`.pipe(
        Effect.orDie,
        Effect.withSpan("DestinationsRepo.audienceOf", { attributes: { table: store.table } })
      )

    /** These webhooks, those not deleted (attempts). */
    const liveWebhooks = (ids: ReadonlyArray<string>) =>
      sql<WebhookRow>`
        select ${sql.literal(webhookColumns)} from webhooks where id = any(${ids}::uuid[]) and deleted_at is null`.pipe(Effect.orDie, Effect.withSpan("DestinationsRepo.liveWebhooks"))

    return {
      find,
      list,
      countLiveLocked,
      softDelete,
      liveMonitorsOf,
      insertWebhook,
      updateWebhook,
      insertChat,
      updateChat,
      insertAlertChannel,
      updateAlertChannel,
      audienceOf,
      liveWebhooks
    } as const
  })
}) {}
