import { HttpApiEndpoint, HttpApiGroup, HttpApiSchema, OpenApi } from "@effect/platform"
import { Schema } from "effect"
import { Authentication } from "../Auth/Api.js"
import { BadGateway, Conflict, NotFound, ValidationError } from "../Domain/Errors.js"
import { allOptional, IsoTimestamp, PageLimitParam } from "../Domain/Schemas.js"
import { StoredString } from "../Domain/Text.js"
import { EventTypes } from "../Events/Events.js"

/**
 * Outbound webhooks, chat alert webhooks (docs/decisions.md#delivery, docs/delivery.md) and alert
 * channels (docs/alerts.md).
 */

/** Event kinds a webhook may select: the events table's kinds plus the test delivery's. */
const WebhookEventKinds = [...EventTypes, "webhook.test"] as const

const Filters = Schema.Struct({
  monitorIds: Schema.Array(Schema.String).annotations({ description: "empty: every monitor" }),
  severity: Schema.Array(Schema.Literal("HIGH", "MEDIUM", "LOW")).annotations({ description: "empty: every severity" })
})

const FiltersInput = Schema.Struct({
  monitorIds: Schema.optional(Schema.Array(Schema.String)),
  severity: Schema.optional(Schema.Array(Schema.Literal("HIGH", "MEDIUM", "LOW")))
})

export const Webhook = Schema.Struct({
  id: Schema.String,
  url: Schema.String.annotations({
    description: "credentials in it (user:password, token-like path segments, query values named like secrets) shown as ***; the create answer shows it whole"
  }),
  events: Schema.Array(Schema.String),
  filters: Filters,
  createdAt: IsoTimestamp
})
export type Webhook = typeof Webhook.Type

export const CreatedWebhook = Schema.Struct({
  ...Webhook.fields,
  url: Schema.String.annotations({ description: "the url as given; shown whole only in this answer" }),
  secret: Schema.String.annotations({ description: "the signing secret; shown only in this answer" })
})

export const CreateWebhookRequest = Schema.Struct({
  url: Schema.String,
  events: Schema.Array(Schema.Literal(...WebhookEventKinds)),
  filters: Schema.optional(FiltersInput),
  secret: Schema.optional(Schema.String.annotations({
    description: "16 to 256 printable ASCII characters; whsec_<base64> (Standard Webhooks) is used as that standard says"
  }))
})
export type CreateWebhookRequest = typeof CreateWebhookRequest.Type

/** PATCH: the create request's fields, every one optional, except `secret`, which no PATCH changes. */
export const UpdateWebhookRequest = Schema.Struct(allOptional(CreateWebhookRequest.omit("secret").fields))
export type UpdateWebhookRequest = typeof UpdateWebhookRequest.Type

export const Delivery = Schema.Struct({
  id: Schema.String.annotations({ description: "equals the X-Service-Delivery header" }),
  eventId: Schema.String,
  event: Schema.String,
  createdAt: IsoTimestamp,
  status: Schema.Literal("pending", "succeeded", "failed"),
  attempts: Schema.Int,
  retryCount: Schema.Int,
  lastStatusCode: Schema.NullOr(Schema.Int),
  lastResponseTimeMs: Schema.NullOr(Schema.Int),
  lastError: Schema.NullOr(Schema.String),
  nextAttemptAt: Schema.NullOr(IsoTimestamp),
  requestHeaders: Schema.NullOr(Schema.Record({ key: Schema.String, value: Schema.String }))
})
export type Delivery = typeof Delivery.Type

const WebhookIdPath = Schema.Struct({ webhookId: Schema.String })

export class WebhooksApi extends HttpApiGroup.make("webhooks")
  .add(
    HttpApiEndpoint.post("create", "/api/webhooks")
      .setPayload(CreateWebhookRequest)
      .addSuccess(CreatedWebhook, { status: 201 })
      .addError(ValidationError)
      .addError(Conflict)
      .annotate(OpenApi.Summary, "Create an outbound webhook; the signing secret is generated when not given; 409 over the organization's quota")
  )
  .add(
    HttpApiEndpoint.get("list", "/api/webhooks")
      .addSuccess(Schema.Struct({ webhooks: Schema.Array(Webhook) }))
      .annotate(OpenApi.Summary, "The organization's outbound webhooks (without secrets)")
  )
  .add(
    HttpApiEndpoint.get("get", "/api/webhooks/:webhookId")
      .setPath(WebhookIdPath)
      .addSuccess(Webhook)
      .addError(NotFound)
  )
  .add(
    HttpApiEndpoint.patch("update", "/api/webhooks/:webhookId")
      .setPath(WebhookIdPath)
      .setPayload(UpdateWebhookRequest)
      .addSuccess(Webhook)
      .addError(NotFound)
      .addError(ValidationError)
      .annotate(OpenApi.Summary, "Change url, events or filters (a url equal to the masked one shown keeps the stored url)")
  )
  .add(
    HttpApiEndpoint.del("delete", "/api/webhooks/:webhookId")
      .setPath(WebhookIdPath)
      .addSuccess(HttpApiSchema.NoContent)
      .addError(NotFound)
  )
  .add(
    HttpApiEndpoint.post("test", "/api/webhooks/:webhookId/test")
      .setPath(WebhookIdPath)
      .addSuccess(Delivery)
      .addError(NotFound)
      .annotate(OpenApi.Summary, "Send a webhook.test delivery at once; answers its delivery record")
  )
  .add(
    HttpApiEndpoint.get("deliveries", "/api/webhooks/:webhookId/deliveries")
      .setPath(WebhookIdPath)
      .setUrlParams(Schema.Struct({ limit: PageLimitParam }))
      .addSuccess(Schema.Struct({ deliveries: Schema.Array(Delivery) }))
      .addError(NotFound)
      .addError(ValidationError)
      .annotate(OpenApi.Summary, "The webhook's deliveries, newest first")
  )
  .middleware(Authentication)
  .annotate(OpenApi.Title, "Outbound webhooks")
{}

// ---- chat alert webhooks (docs/decisions.md#delivery) ----------------------------------------------

const ChatRules = Schema.Struct({
  severity: Schema.Array(Schema.Literal("HIGH", "MEDIUM", "LOW")).annotations({ description: "empty: every severity" }),
  types: Schema.Array(Schema.Literal("MISSED", "FAIL", "LATE", "ANOMALY")).annotations({ description: "empty: every type" })
})

const ChatRulesInput = Schema.Struct({
  severity: Schema.optional(Schema.Array(Schema.Literal("HIGH", "MEDIUM", "LOW"))),
  types: Schema.optional(Schema.Array(Schema.Literal("MISSED", "FAIL", "LATE", "ANOMALY")))
})

export const ChatWebhook = Schema.Struct({
  id: Schema.String,
  name: Schema.String,
  url: Schema.String.annotations({
    description: "a credential: shown whole only in the create answer, then masked (Discord: the webhook id, token as ***)"
  }),
  rules: ChatRules,
  mention: Schema.NullOr(Schema.String),
  status: Schema.Literal("active", "invalid"),
  statusReason: Schema.NullOr(Schema.String).annotations({ description: "why it is invalid; null when active" }),
  createdAt: IsoTimestamp
})
export type ChatWebhook = typeof ChatWebhook.Type

export const CreateChatWebhookRequest = Schema.Struct({
  url: Schema.String,
  name: Schema.optional(Schema.String),
  rules: Schema.optional(ChatRulesInput),
  mention: Schema.optional(Schema.NullOr(Schema.String))
})
export type CreateChatWebhookRequest = typeof CreateChatWebhookRequest.Type

/** PATCH: the create request's fields, every one optional (`mention: null` removes it, as on create). */
export const UpdateChatWebhookRequest = Schema.Struct(allOptional(CreateChatWebhookRequest.fields))
export type UpdateChatWebhookRequest = typeof UpdateChatWebhookRequest.Type

const ChatWebhookIdPath = Schema.Struct({ webhookId: Schema.String })

export class ChatApi extends HttpApiGroup.make("chat")
  .add(
    HttpApiEndpoint.post("create", "/api/alerts/chat/webhooks")
      .setPayload(CreateChatWebhookRequest)
      .addSuccess(ChatWebhook, { status: 201 })
      .addError(ValidationError)
      .addError(Conflict)
      .annotate(OpenApi.Summary, "Add a chat alert webhook; rules omitted or empty match every incident; 409 over the organization's quota")
  )
  .add(
    HttpApiEndpoint.get("list", "/api/alerts/chat/webhooks")
      .addSuccess(Schema.Struct({ webhooks: Schema.Array(ChatWebhook) }))
  )
  .add(
    HttpApiEndpoint.get("get", "/api/alerts/chat/webhooks/:webhookId")
      .setPath(ChatWebhookIdPath)
      .addSuccess(ChatWebhook)
      .addError(NotFound)
  )
  .add(
    HttpApiEndpoint.patch("update", "/api/alerts/chat/webhooks/:webhookId")
      .setPath(ChatWebhookIdPath)
      .setPayload(UpdateChatWebhookRequest)
      .addSuccess(ChatWebhook)
      .addError(NotFound)
      .addError(ValidationError)
      .annotate(OpenApi.Summary, "Change rules, name, mention or url (a new url makes an invalid webhook active again; the masked url shown keeps the stored one)")
  )
  .add(
    HttpApiEndpoint.del("delete", "/api/alerts/chat/webhooks/:webhookId")
      .setPath(ChatWebhookIdPath)
      .addSuccess(HttpApiSchema.NoContent)
      .addError(NotFound)
  )
  .add(
    HttpApiEndpoint.post("test", "/api/alerts/chat/test")
      .setPayload(Schema.Struct({ webhookId: Schema.String }))
      .addSuccess(Schema.Struct({ sent: Schema.Literal(true), status: Schema.Literal("active", "invalid") }))
      .addError(NotFound)
      .addError(BadGateway)
      .annotate(OpenApi.Summary, "Send a test message; 502 names the chat service's answer when it did not accept it")
  )
  .middleware(Authentication)
  .annotate(OpenApi.Title, "Chat alerts")
{}

// ---- alert channels (docs/alerts.md) -------------------------------------------------------------

/**
 * The types of the channels resource. `discord` is the chat webhooks (`/api/alerts/chat/webhooks`);
 * every other type is a module registered in src/Delivery/ChannelRegistry.ts (a test keeps the two
 * lists in step).
 */
export const AlertChannelTypes = ["discord", "email", "slack", "pagerduty", "opsgenie", "telegram", "teams", "ntfy"] as const
export type AlertChannelType = (typeof AlertChannelTypes)[number]

const IncidentTypes = Schema.Literal("MISSED", "FAIL", "LATE", "ANOMALY")
const Severities = Schema.Literal("HIGH", "MEDIUM", "LOW")
/** The events a channel's `rules.events` may select: incident events and maintenance notices (docs/alerts.md#routing-rules). */
export const AlertEventKinds = [
  "incident.opened",
  "incident.acknowledged",
  "incident.resolved",
  "maintenance.upcoming",
  "maintenance.started",
  "maintenance.ended"
] as const
const AlertEvents = Schema.Literal(...AlertEventKinds)

const AlertRules = Schema.Struct({
  monitorIds: Schema.Array(Schema.String).annotations({ description: "empty: every monitor" }),
  tags: Schema.Array(Schema.String).annotations({ description: "the monitor carries one of them; empty: every monitor" }),
  types: Schema.Array(IncidentTypes).annotations({ description: "empty: every incident type" }),
  severity: Schema.Array(Severities).annotations({ description: "empty: every severity" }),
  events: Schema.Array(AlertEvents).annotations({ description: "empty: every one (incident events and maintenance notices)" })
})

const ChannelTag = StoredString.pipe(Schema.minLength(1), Schema.maxLength(64))

const AlertRulesInput = Schema.Struct({
  monitorIds: Schema.optional(Schema.Array(Schema.String).pipe(Schema.maxItems(100))),
  tags: Schema.optional(Schema.Array(ChannelTag).pipe(Schema.maxItems(50))),
  types: Schema.optional(Schema.Array(IncidentTypes)),
  severity: Schema.optional(Schema.Array(Severities)),
  events: Schema.optional(Schema.Array(AlertEvents))
})

export const ReminderSettings = Schema.Struct({
  everyMinutes: Schema.Int.pipe(Schema.between(1, 10_080)).annotations({ description: "1 to 10080 (a week)" }),
  max: Schema.Int.pipe(Schema.between(1, 100)).annotations({ description: "reminders per incident, 1 to 100" })
})

const ChannelConfig = Schema.Record({ key: Schema.String, value: Schema.Unknown }).annotations({
  description:
    "per type (docs/alerts.md): email {to}, slack {url, mention?}, pagerduty {routingKey, baseUrl?}, opsgenie {apiKey, region?, baseUrl?}, telegram {botToken, chatId, baseUrl?}, teams {url}, ntfy {server?, topic, token?}, discord {url, mention}. Secrets are write-only: a Slack, Teams or Discord url is shown masked, a PagerDuty routing key, Opsgenie API key, Telegram bot token or ntfy token never shown"
})

export const AlertChannel = Schema.Struct({
  id: Schema.String,
  type: Schema.Literal(...AlertChannelTypes),
  name: Schema.String,
  config: ChannelConfig,
  rules: AlertRules,
  reminders: Schema.NullOr(ReminderSettings),
  status: Schema.Literal("active", "invalid"),
  statusReason: Schema.NullOr(Schema.String).annotations({ description: "why it is invalid; null when active" }),
  createdAt: IsoTimestamp
})
export type AlertChannel = typeof AlertChannel.Type

const ChannelName = StoredString.pipe(Schema.minLength(1), Schema.maxLength(100))

export const CreateAlertChannelRequest = Schema.Struct({
  type: Schema.Literal(...AlertChannelTypes),
  name: Schema.optional(ChannelName),
  config: ChannelConfig,
  rules: Schema.optional(AlertRulesInput),
  reminders: Schema.optional(Schema.NullOr(ReminderSettings))
})
export type CreateAlertChannelRequest = typeof CreateAlertChannelRequest.Type

/** PATCH: any of name, config (merged field by field; null removes an optional field), rules (a given list replaces it), reminders (null: none). */
export const UpdateAlertChannelRequest = Schema.Struct(allOptional(CreateAlertChannelRequest.omit("type").fields))
export type UpdateAlertChannelRequest = typeof UpdateAlertChannelRequest.Type

export const ChannelTestResult = Schema.Struct({
  sent: Schema.Boolean.annotations({ description: "whether the provider accepted the test message" }),
  answer: Schema.String.annotations({ description: "the provider's answer in one line: HTTP 200: ok, SMTP 250: …, timeout: …" }),
  channel: AlertChannel,
  delivery: Delivery
})

const ChannelIdPath = Schema.Struct({ channelId: Schema.String })

export class AlertChannelsApi extends HttpApiGroup.make("channels")
  .add(
    HttpApiEndpoint.post("create", "/api/alerts/channels")
      .setPayload(CreateAlertChannelRequest)
      .addSuccess(AlertChannel, { status: 201 })
      .addError(ValidationError)
      .addError(Conflict)
      .annotate(OpenApi.Summary, "Add an alert channel (email, slack, teams, pagerduty, opsgenie, telegram, ntfy; discord ones are made at /api/alerts/chat/webhooks); 409 over the organization's quota")
  )
  .add(
    HttpApiEndpoint.get("list", "/api/alerts/channels")
      .addSuccess(Schema.Struct({ channels: Schema.Array(AlertChannel) }))
      .annotate(OpenApi.Summary, "The organization's alert channels, the chat webhooks among them (type discord), oldest first; secrets masked or left out")
  )
  .add(
    HttpApiEndpoint.get("get", "/api/alerts/channels/:channelId")
      .setPath(ChannelIdPath)
      .addSuccess(AlertChannel)
      .addError(NotFound)
  )
  .add(
    HttpApiEndpoint.patch("update", "/api/alerts/channels/:channelId")
      .setPath(ChannelIdPath)
      .setPayload(UpdateAlertChannelRequest)
      .addSuccess(AlertChannel)
      .addError(NotFound)
      .addError(ValidationError)
      .annotate(OpenApi.Summary, "Change name, config, rules or reminders; the channel becomes active again")
  )
  .add(
    HttpApiEndpoint.del("delete", "/api/alerts/channels/:channelId")
      .setPath(ChannelIdPath)
      .addSuccess(HttpApiSchema.NoContent)
      .addError(NotFound)
  )
  .add(
    HttpApiEndpoint.post("test", "/api/alerts/channels/:channelId/test")
      .setPath(ChannelIdPath)
      .addSuccess(ChannelTestResult)
      .addError(NotFound)
      .annotate(OpenApi.Summary, "Send a test message now; answers what the provider said, the channel (invalid when the answer says it is gone) and the delivery")
  )
  .add(
    HttpApiEndpoint.get("deliveries", "/api/alerts/channels/:channelId/deliveries")
      .setPath(ChannelIdPath)
      .setUrlParams(Schema.Struct({ limit: PageLimitParam }))
      .addSuccess(Schema.Struct({ deliveries: Schema.Array(Delivery) }))
      .addError(NotFound)
      .addError(ValidationError)
      .annotate(OpenApi.Summary, "The channel's messages (alerts, reminders, tests), newest first")
  )
  .middleware(Authentication)
  .annotate(OpenApi.Title, "Alert channels")
{}
