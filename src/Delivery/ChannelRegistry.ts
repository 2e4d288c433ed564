import { Effect, Option } from "effect"
import { AppConfig } from "../Config.js"
import type { AlertRules } from "./AlertRules.js"
import type { Channel } from "./Channel.js"
import type { AnyAlertChannelType, ChannelSettings } from "./ChannelType.js"
import { chatChannel, type ChatDestination } from "./ChatChannel.js"
import {
  type AlertChannelRow,
  alertChannelsOfType,
  CHAT_WEBHOOKS,
  chatDestinationOf,
  type ClaimedWholeTable,
  type DestinationRows,
  type DestinationStore,
  type DestinationTable,
  webhookDestinationOf,
  WEBHOOKS
} from "./DestinationsRepo.js"
import { emailType } from "./EmailChannel.js"
import { opsgenieType } from "./OpsgenieChannel.js"
import { pagerDutyType } from "./PagerDutyChannel.js"
import { slackType } from "./SlackChannel.js"
import { telegramType } from "./TelegramChannel.js"
import { ntfyType } from "./NtfyChannel.js"
import { teamsType } from "./TeamsChannel.js"
import { webhookChannel, type WebhookDestination } from "./WebhookChannel.js"

/**
 * Every kind of destination the delivery cycle serves, registered in one place: its channel (what
 * it is sent, how, what the answer means), where its destinations are stored, and how a stored one
 * reads as the channel's destination. The fan-out makes messages for every kind (FanOut.ts); the
 * attempts send outbound webhooks per delivery, in lanes, and the destinations of every other kind
 * claimed whole (Attempts.ts).
 *
 * The alert channel types of the channels resource (`/api/alerts/channels`) are listed in
 * ALERT_CHANNEL_TYPES: one module each, all stored in `alert_channels`, one kind per type
 * (docs/architecture.md, "How to add an alert channel").
 */

/**
 * The alert channel types, one line each (the `discord` type of the API is the chat webhooks,
 * registered apart). Keep `AlertChannelTypes` in Api.ts in step (a test checks it).
 */
export const ALERT_CHANNEL_TYPES: ReadonlyArray<AnyAlertChannelType> = [
  emailType,
  slackType,
  pagerDutyType,
  opsgenieType,
  telegramType,
  teamsType,
  ntfyType
]

/** An alert channel's routing (applied by the fan-out before its channel makes a message) and reminders. */
export interface Routing {
  readonly rules: AlertRules
  readonly reminders: { readonly everyMinutes: number; readonly max: number } | null
}

/** A kind of destination: its channel, and the table its destinations live in. */
export interface Registered<T extends DestinationTable, D> extends DestinationStore<T> {
  readonly channel: Channel<D>
  /** A stored destination as its channel reads it. */
  readonly destinationOf: (row: DestinationRows[T]) => D
  /** Alert channels: a stored one's rules and reminders. Other kinds route in their channel's `messageFor`. */
  readonly routingOf?: ((row: DestinationRows[T]) => Routing) | undefined
}

/** Any registered kind, whatever its destinations (each kind's channel reads only its own). */
export type AnyRegistered = Registered<any, any>

/** A kind whose destinations are claimed whole. */
export type WholeKind = { readonly [T in ClaimedWholeTable]: Registered<T, any> }[ClaimedWholeTable]

/** An alert channel row's routing, as stored. */
export const routingOfRow = (row: AlertChannelRow): Routing => ({
  rules: {
    monitorIds: row.rules_monitor_ids,
    tags: row.rules_tags,
    types: row.rules_types,
    severity: row.rules_severity,
    events: row.rules_events
  },
  reminders: row.reminder_every_minutes === null || row.reminder_max === null
    ? null
    : { everyMinutes: row.reminder_every_minutes, max: row.reminder_max }
})

/** One alert channel type as a kind of destination: the rows of its type in alert_channels. */
const alertKindOf = (type: AnyAlertChannelType, settings: ChannelSettings): Registered<"alert_channels", unknown> => ({
  ...alertChannelsOfType(type.type),
  channel: type.channel(settings),
  destinationOf: (row) => type.destinationOf({ id: row.id, name: row.name, config: row.config }),
  routingOf: routingOfRow
})

export class ChannelRegistry extends Effect.Service<ChannelRegistry>()("jobmon/ChannelRegistry", {
  effect: Effect.gen(function*() {
    const config = yield* AppConfig
    const settings: ChannelSettings = { publicUrl: config.publicUrl, emailConfigured: Option.isSome(config.smtpUrl) }

    const webhook: Registered<"webhooks", WebhookDestination> = {
      ...WEBHOOKS,
      channel: webhookChannel,
      destinationOf: webhookDestinationOf
    }

    /** Chat messages' buttons link to the dashboard at PUBLIC_URL. */
    const chat: Registered<"chat_webhooks", ChatDestination> = {
      ...CHAT_WEBHOOKS,
      channel: chatChannel(config.publicUrl),
      destinationOf: chatDestinationOf
    }

    /** The alert channel types, by type. */
    const alertKinds = new Map(ALERT_CHANNEL_TYPES.map((type) => [type.type, alertKindOf(type, settings)] as const))

    /** Kinds whose destinations are claimed whole: one worker at a time sends to one, packing what waits. */
    const claimedWhole: ReadonlyArray<WholeKind> = [chat, ...alertKinds.values()]

    return {
      webhook,
      chat,
      settings,
      /** The alert channel types' modules, by type. */
      alertTypes: new Map(ALERT_CHANNEL_TYPES.map((type) => [type.type, type] as const)),
      /** The kind of an alert channel type (undefined for a type no module serves any more). */
      alertKind: (type: string) => alertKinds.get(type),
      /** Every kind: the fan-out asks each one's channel for its messages. */
      all: [...claimedWhole, webhook] as ReadonlyArray<AnyRegistered>,
      claimedWhole
    } as const
  })
}) {}
