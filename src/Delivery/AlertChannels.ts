import { SqlClient } from "@effect/sql"
import { Clock, Effect, Either, ParseResult, Schema } from "effect"
import { Conflict, notFound, ValidationError } from "../Domain/Errors.js"
import { isUuid } from "../Domain/Ids.js"
import { iso } from "../Domain/Instant.js"
import { firstProblem } from "../Http/Errors.js"
import type { AlertChannel, CreateAlertChannelRequest, UpdateAlertChannelRequest } from "./Api.js"
import { Attempts } from "./Attempts.js"
import { ChannelRegistry, routingOfRow } from "./ChannelRegistry.js"
import type { AnyAlertChannelType } from "./ChannelType.js"
import { DeliveriesRepo } from "./DeliveriesRepo.js"
import { Destinations } from "./Destinations.js"
import { ALERT_CHANNELS, type AlertChannelRow, type AlertRulesColumns, type ChatWebhookRow, DestinationsRepo } from "./DestinationsRepo.js"
import { echo } from "./Input.js"
import { maskChatUrl } from "./Masking.js"
import { ORGANIZATION_QUOTAS } from "./Quotas.js"
import { toDelivery } from "./Webhooks.js"

/**
 * The channels resource (docs/alerts.md, `/api/alerts/channels`): alert channels of every type,
 * created, listed, changed, deleted and tested along one path; what differs between types is
 * their module (ChannelType.ts: the config schema, its secrets and urls, the channel). The chat
 * webhooks are listed here too, as type `discord`: they can be read, tested, deleted and their
 * deliveries listed through this resource, and are created and changed at
 * `/api/alerts/chat/webhooks` (their rules are the chat webhooks' own: types and severity).
 */

/** A channel found by id: an alert channel of a registered type, or a chat webhook. */
type Found =
  | { readonly _tag: "alert"; readonly row: AlertChannelRow; readonly type: AnyAlertChannelType }
  | { readonly _tag: "chat"; readonly row: ChatWebhookRow }

const NOUN = "alert channel"
const invalid = (path: string, message: string) => Effect.fail(new ValidationError({ path, message }))
const unique = <A>(values: ReadonlyArray<A>): Array<A> => [...new Set(values)]

/** The events a discord channel (a chat webhook) posts. */
const CHAT_EVENTS = ["incident.opened", "incident.resolved"] as const

const DISCORD_CHANGES =
  "discord channels are the chat webhooks: they are created and changed at /api/alerts/chat/webhooks (and listed, tested and deleted here too)."

/** A config as GET shows it: masked secrets masked, omitted ones left out (ChannelType.ts, SecretField). */
const shownConfig = (type: AnyAlertChannelType, config: Record<string, unknown>): Record<string, unknown> => {
  const shown: Record<string, unknown> = {}
  for (const [key, value] of Object.entries(config)) {
    const secret = type.secrets[key]
    if (secret === undefined) shown[key] = value
    else if (secret.shown === "masked" && typeof value === "string") shown[key] = secret.mask(value)
  }
  return shown
}

const toChannel = (row: AlertChannelRow, type: AnyAlertChannelType): AlertChannel => {
  const { reminders, rules } = routingOfRow(row)
  return {
    id: row.id,
    type: type.type as AlertChannel["type"],
    name: row.name,
    config: shownConfig(type, row.config),
    rules: rules as AlertChannel["rules"],
    reminders,
    status: row.status,
    statusReason: row.status_reason,
    createdAt: iso(row.created_at)
  }
}

/** A chat webhook as the channels resource shows it (type discord; its url masked). */
const chatAsChannel = (row: ChatWebhookRow): AlertChannel => ({
  id: row.id,
  type: "discord",
  name: row.name,
  config: { url: maskChatUrl(row.url), mention: row.mention },
  rules: {
    monitorIds: [],
    tags: [],
    types: row.rules_types as AlertChannel["rules"]["types"],
    severity: row.rules_severity as AlertChannel["rules"]["severity"],
    events: [...CHAT_EVENTS]
  },
  reminders: null,
  status: row.status,
  statusReason: row.status_reason,
  createdAt: iso(row.created_at)
})

const shown = (found: Found) => (found._tag === "chat" ? chatAsChannel(found.row) : toChannel(found.row, found.type))

/**
 * A PATCH's config over the stored one, field by field: a field given replaces it, `null` removes
 * it, a masked secret sent back exactly as GET showed it keeps the stored value.
 */
const mergedConfig = (type: AnyAlertChannelType, stored: Record<string, unknown>, patch: Record<string, unknown>) => {
  const merged: Record<string, unknown> = { ...stored }
  for (const [key, value] of Object.entries(patch)) {
    const secret = type.secrets[key]
    if (value === null) delete merged[key]
    else if (secret?.shown === "masked" && typeof stored[key] === "string" && value === secret.mask(stored[key] as string)) continue
    else merged[key] = value
  }
  return merged
}

export class AlertChannels extends Effect.Service<AlertChannels>()("jobmon/AlertChannels", {
  effect: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const repo = yield* DestinationsRepo
    const deliveries = yield* DeliveriesRepo
    const registry = yield* ChannelRegistry
    const attempts = yield* Attempts
    const { chats, checks } = yield* Destinations

    /** The type's config, decoded; a 400 names `config.<field>`. Url fields that are new pass the SSRF guard. */
    const validConfig = (type: AnyAlertChannelType, raw: Record<string, unknown>, stored?: Record<string, unknown>) =>
      Effect.gen(function*() {
        const decoded = Schema.decodeUnknownEither(type.config)(raw)
        if (Either.isLeft(decoded)) {
          const problem = firstProblem(ParseResult.ArrayFormatter.formatErrorSync(decoded.left))
          const path = problem === undefined || problem.path === "" ? "config" : `config.${problem.path}`
          return yield* invalid(path, `${path}: ${problem?.message ?? "is not valid"}`)
        }
        const config = decoded.right as Record<string, unknown>
        for (const field of type.urlFields) {
          const url = config[field]
          if (typeof url === "string" && url !== stored?.[field]) yield* checks.publicUrl(`config.${field}`, url)
        }
        return config
      })

    const validRules = (orgId: string, rules: CreateAlertChannelRequest["rules"], current?: AlertRulesColumns) =>
      Effect.gen(function*() {
        yield* checks.ownMonitors("rules.monitorIds", orgId, rules?.monitorIds)
        return {
          monitorIds: unique((rules?.monitorIds ?? current?.monitorIds ?? []).map((id) => id.toLowerCase())),
          tags: unique(rules?.tags ?? current?.tags ?? []),
          types: unique(rules?.types ?? current?.types ?? []),
          severity: unique(rules?.severity ?? current?.severity ?? []),
          events: unique(rules?.events ?? current?.events ?? [])
        }
      })

    /** One of the organization's, not deleted, of a registered type or a chat webhook; anything else is 404. */
    const find = (orgId: string, id: string) =>
      Effect.gen(function*() {
        if (!isUuid(id)) return yield* notFound(NOUN, echo(id))
        const row = yield* repo.find("alert_channels", orgId, id)
        const type = row === undefined ? undefined : registry.alertTypes.get(row.type)
        if (row !== undefined && type !== undefined) return { _tag: "alert", row, type } as Found
        const chat = yield* repo.find("chat_webhooks", orgId, id)
        if (chat !== undefined) return { _tag: "chat", row: chat } as Found
        return yield* notFound(NOUN, echo(id))
      })

    /** At most ORGANIZATION_QUOTAS.alertChannels live ones; counted with the organization's row locked (creates take turns). */
    const checkQuota = (orgId: string) =>
      Effect.gen(function*() {
        const limit = ORGANIZATION_QUOTAS.alertChannels
        if ((yield* repo.countLiveLocked("alert_channels", orgId)) >= limit) {
          return yield* new Conflict({
            message: `This organization already has ${limit} alert channels, the most it may have; delete one it no longer needs first.`
          })
        }
      })

    const create = Effect.fn("AlertChannels.create")(function*(orgId: string, input: CreateAlertChannelRequest) {
      if (input.type === "discord") return yield* invalid("type", DISCORD_CHANGES)
      const type = registry.alertTypes.get(input.type)
      if (type === undefined) return yield* invalid("type", `type ${input.type} is not served by this server.`)
      const unavailable = type.unavailable(registry.settings)
      if (unavailable !== undefined) return yield* invalid("type", unavailable)
      const config = yield* validConfig(type, input.config)
      const rules = yield* validRules(orgId, input.rules)
      const now = new Date(yield* Clock.currentTimeMillis)
      const row = yield* sql.withTransaction(Effect.zipRight(
        checkQuota(orgId),
        repo.insertAlertChannel({
          orgId,
          type: type.type,
          name: input.name ?? type.defaultName(config),
          config,
          rules,
          reminders: input.reminders ?? null,
          now
        })
      )).pipe(Effect.catchTag("SqlError", Effect.die))
      return toChannel(row, type)
    })

    /** Alert channels and chat webhooks, oldest first. */
    const list = (orgId: string) =>
      Effect.gen(function*() {
        const [alerts, chatRows] = yield* Effect.all([repo.list("alert_channels", orgId), repo.list("chat_webhooks", orgId)])
        const rows: Array<{ at: number; id: string; channel: AlertChannel }> = []
        for (const row of alerts) {
          const type = registry.alertTypes.get(row.type)
          if (type !== undefined) rows.push({ at: row.created_at.getTime(), id: row.id, channel: toChannel(row, type) })
        }
        for (const row of chatRows) rows.push({ at: row.created_at.getTime(), id: row.id, channel: chatAsChannel(row) })
        return rows.sort((a, b) => a.at - b.at || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0)).map((r) => r.channel)
      })

    const get = (orgId: string, id: string) => Effect.map(find(orgId, id), shown)

    const update = Effect.fn("AlertChannels.update")(function*(orgId: string, id: string, input: UpdateAlertChannelRequest) {
      const found = yield* find(orgId, id)
      if (found._tag === "chat") return yield* invalid("", DISCORD_CHANGES)
      const { row, type } = found
      const config = input.config === undefined
        ? row.config
        : yield* validConfig(type, mergedConfig(type, row.config, input.config), row.config)
      const current = routingOfRow(row)
      const rules = yield* validRules(orgId, input.rules, current.rules)
      const now = new Date(yield* Clock.currentTimeMillis)
      const updated = yield* repo.updateAlertChannel(row.id, {
        name: input.name ?? row.name,
        config,
        rules,
        reminders: input.reminders === undefined ? current.reminders : input.reminders,
        now
      })
      return toChannel(updated, type)
    })

    const remove = Effect.fn("AlertChannels.remove")(function*(orgId: string, id: string) {
      const found = yield* find(orgId, id)
      if (found._tag === "chat") return yield* chats.remove(orgId, id)
      const now = new Date(yield* Clock.currentTimeMillis)
      yield* repo.softDelete("alert_channels", id, now)
      // Nothing more is sent to it: its pending messages fail (its reminders end when next due).
      yield* deliveries.failPending(ALERT_CHANNELS.column, id, `${NOUN} deleted`)
    })

    /** POST …/test: one message now; the answer, the channel as it is after it, and the delivery recorded. */
    const test = Effect.fn("AlertChannels.test")(function*(orgId: string, id: string) {
      const found = yield* find(orgId, id)
      const result = found._tag === "chat"
        ? yield* attempts.testWhole(registry.chat, found.row)
        : yield* attempts.testWhole(registry.alertKind(found.type.type)!, found.row)
      const after = yield* find(orgId, id)
      return {
        sent: result.verdict._tag === "Delivered",
        answer: result.answer,
        channel: shown(after),
        delivery: toDelivery(result.delivery)
      }
    })

    /** The channel's messages, newest first. */
    const deliveriesOf = (orgId: string, id: string, limit: number) =>
      Effect.gen(function*() {
        const found = yield* find(orgId, id)
        const column = found._tag === "chat" ? registry.chat.column : ALERT_CHANNELS.column
        return (yield* deliveries.ofDestination(column, id, limit)).map(toDelivery)
      })

    return { create, list, get, update, remove, test, deliveries: deliveriesOf } as const
  }),
  dependencies: [DestinationsRepo.Default, DeliveriesRepo.Default, ChannelRegistry.Default, Attempts.Default, Destinations.Default]
}) {}
