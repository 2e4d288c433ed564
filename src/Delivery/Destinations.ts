import { SqlClient } from "@effect/sql"
import { Clock, Effect } from "effect"
import { AppConfig } from "../Config.js"
import { Conflict, notFound, ValidationError } from "../Domain/Errors.js"
import { isUuid } from "../Domain/Ids.js"
import { iso } from "../Domain/Instant.js"
import type {
  ChatWebhook,
  CreateChatWebhookRequest,
  CreateWebhookRequest,
  UpdateChatWebhookRequest,
  UpdateWebhookRequest,
  Webhook
} from "./Api.js"
import { DeliveriesRepo } from "./DeliveriesRepo.js"
import {
  CHAT_WEBHOOKS,
  type ChatWebhookRow,
  type DestinationRows,
  DestinationsRepo,
  type DestinationStore,
  type DestinationTable,
  WEBHOOKS,
  type WebhookRow
} from "./DestinationsRepo.js"
import { echo, fieldWithNul } from "./Input.js"
import { maskChatUrl, maskWebhookUrl } from "./Masking.js"
import { PingFeed } from "./PingFeed.js"
import { ORGANIZATION_QUOTAS } from "./Quotas.js"
import { isWellFormedWhsec, newSecret } from "./Signing.js"
import { targetProblem, urlProblem } from "./Ssrf.js"

/**
 * The destinations' configuration (docs/delivery.md, "API" and "Chat alert webhooks"): outbound
 * webhooks and chat webhooks, created, listed, changed and deleted along one path. Every kind has
 * its url checked (SSRF guard), NUL refused in stored text, its organization's quota, its url
 * masked after the create answer, and 404 for another organization's; what differs between kinds
 * (fields, rules, tables, nouns) is data: a `Kind`.
 */

const MAX_SECRET_LENGTH = 256
const MAX_NAME_LENGTH = 100
const MAX_MENTION_LENGTH = 200
/** The unknown ids a "no such monitor" message names at most. */
const MAX_NAMED_IDS = 5

/** The fields of a create or update body that the rules read (each kind has some of them). */
interface Fields {
  readonly url?: string | undefined
  readonly secret?: string | undefined
  readonly name?: string | undefined
  readonly mention?: string | null | undefined
  readonly events?: ReadonlyArray<string> | undefined
  readonly filters?: { readonly monitorIds?: ReadonlyArray<string> | undefined } | undefined
}

/** One check of a create or update body; `url` is the url to be stored when it changes (undefined: kept). */
type Rule = (input: Fields, context: { readonly orgId: string; readonly url: string | undefined }) => Effect.Effect<void, ValidationError>

/** The tables of the destinations configured here (alert channels: AlertChannels.ts). */
type UrlTable = Exclude<DestinationTable, "alert_channels">

/** What differs between kinds of destination (beside where they are stored). */
interface Kind<T extends UrlTable, Shown, Created, Create extends Fields & { readonly url: string }, Update extends Fields>
  extends DestinationStore<T>
{
  readonly quota: keyof typeof ORGANIZATION_QUOTAS
  readonly quotaNoun: string
  readonly mask: (url: string) => string
  /** As GET, list and PATCH show it: the url masked. */
  readonly show: (row: DestinationRows[T]) => Shown
  /** The create answer, the only one that shows the url whole (and a webhook's secret). */
  readonly created: (row: DestinationRows[T]) => Created
  /** In order: the first that fails names the field. */
  readonly rules: ReadonlyArray<Rule>
  readonly insert: (orgId: string, input: Create, now: Date) => Effect.Effect<DestinationRows[T]>
  readonly update: (row: DestinationRows[T], input: Update, url: string | undefined, now: Date) => Effect.Effect<DestinationRows[T]>
  /** Its changes may change which pings record events. */
  readonly subscribesToPings: boolean
}

const unique = <A>(values: ReadonlyArray<A>): Array<A> => [...new Set(values)]

/** A webhook as GET, list and PATCH show it: its url masked where it carries credentials. */
const toWebhook = (row: WebhookRow): Webhook => ({
  id: row.id,
  url: maskWebhookUrl(row.url),
  events: row.events,
  filters: { monitorIds: row.filter_monitor_ids, severity: row.filter_severity as ReadonlyArray<"HIGH" | "MEDIUM" | "LOW"> },
  createdAt: iso(row.created_at)
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
  createdAt: iso(row.created_at)
})

/**
 * A PATCH that sends back the masked url the API showed (a client echoing what it read) keeps the
 * stored url; any other url replaces it.
 */
const newUrl = (given: string | undefined, masked: string) => given === undefined || given === masked ? undefined : given

const invalid = (path: string, message: string) => Effect.fail(new ValidationError({ path, message }))

/** Every stored text field: NUL is refused by name (PostgreSQL text cannot hold it). */
const noNul = (...fields: ReadonlyArray<"url" | "secret" | "name" | "mention">): Rule => (input) => {
  const field = fieldWithNul(fields.map((f) => [f, input[f]] as const))
  return field === undefined ? Effect.void : invalid(field, `${field} must not contain a NUL character (\\u0000).`)
}

const someEvents: Rule = (input) =>
  input.events !== undefined && input.events.length === 0 ? invalid("events", "events must select at least one event kind.") : Effect.void

/** A given secret: 16 to 256 printable ASCII characters; one starting with whsec_ must be a well-formed one. */
const secretForm: Rule = ({ secret }) => {
  if (secret === undefined) return Effect.void
  if (secret.length < 16 || secret.length > MAX_SECRET_LENGTH || !/^[\x21-\x7e]+$/.test(secret)) {
    return invalid("secret", `secret must have 16 to ${MAX_SECRET_LENGTH} printable ASCII characters, without spaces.`)
  }
  if (secret.startsWith("whsec_") && !isWellFormedWhsec(secret)) {
    return invalid(
      "secret",
      "a secret starting with whsec_ must be whsec_ followed by the base64 of 24 to 64 random bytes (the Standard Webhooks form)."
    )
  }
  return Effect.void
}

const chatName: Rule = ({ name }) =>
  name !== undefined && (name.trim() === "" || name.length > MAX_NAME_LENGTH || /[\s]/.test(name))
    ? invalid("name", `name must have 1 to ${MAX_NAME_LENGTH} characters and no spaces (maintenance channels name it as chat:<name>).`)
    : Effect.void

const chatMention: Rule = ({ mention }) =>
  typeof mention === "string" && (mention.length === 0 || mention.length > MAX_MENTION_LENGTH)
    ? invalid("mention", `mention must have 1 to ${MAX_MENTION_LENGTH} characters (e.g. <@&123>).`)
    : Effect.void

export class Destinations extends Effect.Service<Destinations>()("jobmon/Destinations", {
  effect: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const repo = yield* DestinationsRepo
    const deliveries = yield* DeliveriesRepo
    const pingFeed = yield* PingFeed
    const allowPrivateTargets = (yield* AppConfig).allowPrivateTargets

    /** Syntax, then (unless private targets are allowed) every address the host resolves to; a 400 names `path`. */
    const checkPublicUrl = (path: string, url: string) =>
      Effect.gen(function*() {
        const problem = urlProblem(url)
        if (problem !== undefined) return yield* invalid(path, problem)
        if (allowPrivateTargets) return
        const refused = yield* Effect.promise(() => targetProblem(url))
        if (refused !== undefined) {
          return yield* invalid(path, `${refused} Webhook targets must be public unless the operator sets ALLOW_PRIVATE_TARGETS=true.`)
        }
      })

    const publicUrl: Rule = (_, { url }) => url === undefined ? Effect.void : checkPublicUrl("url", url)

    /**
     * Every id must be a monitor of this organization (not deleted). Another organization's
     * monitor is "no such monitor", like an id that names nothing (docs/decisions.md#errors: never
     * reveal it exists). A 400 names `<path>.<i>`, the first unknown one.
     */
    const checkOwnMonitors = (path: string, orgId: string, ids: ReadonlyArray<string> | undefined) =>
      Effect.gen(function*() {
        if (ids === undefined || ids.length === 0) return
        for (let i = 0; i < ids.length; i++) {
          if (!isUuid(ids[i]!)) {
            return yield* invalid(`${path}.${i}`, `${path}.${i} must be a monitor id (a UUID), not '${echo(ids[i]!)}'.`)
          }
        }
        const known = yield* repo.liveMonitorsOf(orgId, ids)
        const unknown = unique(ids.filter((id) => !known.has(id.toLowerCase())))
        if (unknown.length > 0) {
          const first = ids.findIndex((id) => !known.has(id.toLowerCase()))
          const named = unknown.slice(0, MAX_NAMED_IDS).join(", ")
          const more = unknown.length > MAX_NAMED_IDS ? ` and ${unknown.length - MAX_NAMED_IDS} more` : ""
          return yield* invalid(`${path}.${first}`, `${path}: no such monitor: ${named}${more}.`)
        }
      })

    const ownMonitors: Rule = (input, { orgId }) => checkOwnMonitors("filters.monitorIds", orgId, input.filters?.monitorIds)

    const webhooks: Kind<"webhooks", Webhook, Webhook & { secret: string }, CreateWebhookRequest, UpdateWebhookRequest> = {
      ...WEBHOOKS,
      quota: "webhooks",
      quotaNoun: "outbound webhooks",
      mask: maskWebhookUrl,
      show: toWebhook,
      created: (row) => ({ ...toWebhook(row), url: row.url, secret: row.secret }),
      rules: [noNul("url", "secret"), publicUrl, someEvents, ownMonitors, secretForm],
      insert: (orgId, input, now) =>
        repo.insertWebhook({
          orgId,
          url: input.url,
          secret: input.secret ?? newSecret(),
          events: unique(input.events),
          filterMonitorIds: unique(input.filters?.monitorIds ?? []),
          filterSeverity: unique(input.filters?.severity ?? []),
          now
        }),
      update: (row, input, url, now) =>
        repo.updateWebhook(row.id, {
          url: url ?? row.url,
          events: unique(input.events ?? row.events),
          filterMonitorIds: unique(input.filters?.monitorIds ?? row.filter_monitor_ids),
          filterSeverity: unique(input.filters?.severity ?? row.filter_severity),
          pingsFromNow: input.events !== undefined && input.events.includes("ping.received") && !row.events.includes("ping.received"),
          now
        }),
      subscribesToPings: true
    }

    const chats: Kind<"chat_webhooks", ChatWebhook, ChatWebhook, CreateChatWebhookRequest, UpdateChatWebhookRequest> = {
      ...CHAT_WEBHOOKS,
      quota: "chatWebhooks",
      quotaNoun: "chat webhooks",
      mask: maskChatUrl,
      show: toChatWebhook,
      created: (row) => ({ ...toChatWebhook(row), url: row.url }),
      rules: [noNul("url", "name", "mention"), chatName, chatMention, publicUrl],
      insert: (orgId, input, now) =>
        repo.insertChat({
          orgId,
          name: input.name ?? new URL(input.url).hostname,
          url: input.url,
          rulesSeverity: unique(input.rules?.severity ?? []),
          rulesTypes: unique(input.rules?.types ?? []),
          mention: input.mention ?? null,
          now
        }),
      update: (row, input, url, now) => {
        // A new url makes an invalid webhook active again.
        const urlChanged = url !== undefined && url !== row.url
        return repo.updateChat(row.id, {
          name: input.name ?? row.name,
          url: url ?? row.url,
          rulesSeverity: unique(input.rules?.severity ?? row.rules_severity),
          rulesTypes: unique(input.rules?.types ?? row.rules_types),
          mention: input.mention === undefined ? row.mention : input.mention,
          status: urlChanged ? "active" : row.status,
          statusReason: urlChanged ? null : row.status_reason,
          now
        })
      },
      subscribesToPings: false
    }

    /** The operations of one kind, along the one path. */
    const operationsOf = <T extends UrlTable, Shown, Created, Create extends Fields & { readonly url: string }, Update extends Fields>(
      kind: Kind<T, Shown, Created, Create, Update>
    ) => {
      const validate = (orgId: string, input: Fields, url: string | undefined) =>
        Effect.forEach(kind.rules, (rule) => rule(input, { orgId, url }), { discard: true })

      const afterChange = kind.subscribesToPings ? pingFeed.sync : Effect.void

      /** One of the organization's, not deleted; anything else (another organization's, not a UUID) is 404. */
      const find = (orgId: string, id: string) =>
        Effect.gen(function*() {
          if (!isUuid(id)) return yield* notFound(kind.noun, echo(id))
          const row = yield* repo.find(kind.table, orgId, id)
          if (row === undefined) return yield* notFound(kind.noun, echo(id))
          return row
        })

      /**
       * At most ORGANIZATION_QUOTAS[kind] live ones per organization: counted inside the create's
       * transaction with the organization's row locked, so concurrent creates never overshoot.
       */
      const checkQuota = (orgId: string) =>
        Effect.gen(function*() {
          const limit = ORGANIZATION_QUOTAS[kind.quota]
          if ((yield* repo.countLiveLocked(kind.table, orgId)) >= limit) {
            return yield* new Conflict({
              message: `This organization already has ${limit} ${kind.quotaNoun}, the most it may have; delete one it no longer needs first.`
            })
          }
        })

      const create = (orgId: string, input: Create) =>
        Effect.gen(function*() {
          yield* validate(orgId, input, input.url)
          const now = new Date(yield* Clock.currentTimeMillis)
          const row = yield* sql.withTransaction(Effect.zipRight(checkQuota(orgId), kind.insert(orgId, input, now))).pipe(
            Effect.catchTag("SqlError", Effect.die)
          )
          yield* afterChange
          return kind.created(row)
        }).pipe(Effect.withSpan("Destinations.create", { attributes: { table: kind.table } }))

      const list = (orgId: string) => Effect.map(repo.list(kind.table, orgId), (rows) => rows.map(kind.show))

      const get = (orgId: string, id: string) => Effect.map(find(orgId, id), kind.show)

      const update = (orgId: string, id: string, input: Update) =>
        Effect.gen(function*() {
          const row = yield* find(orgId, id)
          const url = newUrl(input.url, kind.mask(row.url))
          yield* validate(orgId, input, url)
          const now = new Date(yield* Clock.currentTimeMillis)
          const updated = yield* kind.update(row, input, url, now)
          yield* afterChange
          return kind.show(updated)
        }).pipe(Effect.withSpan("Destinations.update", { attributes: { table: kind.table } }))

      const remove = (orgId: string, id: string) =>
        Effect.gen(function*() {
          yield* find(orgId, id)
          const now = new Date(yield* Clock.currentTimeMillis)
          yield* repo.softDelete(kind.table, id, now)
          // Nothing more is sent to it: its pending deliveries fail.
          yield* deliveries.failPending(kind.column, id, `${kind.noun} deleted`)
          yield* afterChange
        }).pipe(Effect.withSpan("Destinations.remove", { attributes: { table: kind.table } }))

      return { find, create, list, get, update, remove } as const
    }

    return {
      webhooks: operationsOf(webhooks),
      chats: operationsOf(chats),
      /** The checks every kind of destination shares (the channels resource, AlertChannels.ts, uses them too). */
      checks: { publicUrl: checkPublicUrl, ownMonitors: checkOwnMonitors }
    } as const
  }),
  dependencies: [DestinationsRepo.Default, DeliveriesRepo.Default, PingFeed.Default]
}) {}
