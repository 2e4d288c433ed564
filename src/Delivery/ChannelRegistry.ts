import { Effect } from "effect"
import { AppConfig } from "../Config.js"
import type { Channel } from "./Channel.js"
import { chatChannel, type ChatDestination } from "./ChatChannel.js"
import {
  CHAT_WEBHOOKS,
  chatDestinationOf,
  type ClaimedWholeTable,
  type DestinationRows,
  type DestinationStore,
  type DestinationTable,
  webhookDestinationOf,
  WEBHOOKS
} from "./DestinationsRepo.js"
import { webhookChannel, type WebhookDestination } from "./WebhookChannel.js"

/**
 * Every kind of destination the delivery cycle serves, registered in one place: its channel (what
 * it is sent, how, what the answer means), where its destinations are stored, and how a stored one
 * reads as the channel's destination. The fan-out makes messages for every kind (FanOut.ts); the
 * attempts send outbound webhooks per delivery, in lanes, and the destinations of every other kind
 * claimed whole (Attempts.ts). A new channel registers here (docs/delivery.md, "The modules").
 */

/** A kind of destination: its channel, and the table its destinations live in. */
export interface Registered<T extends DestinationTable, D> extends DestinationStore<T> {
  readonly channel: Channel<D>
  /** A stored destination as its channel reads it. */
  readonly destinationOf: (row: DestinationRows[T]) => D
}

/** Any registered kind, whatever its destinations (each kind's channel reads only its own). */
export type AnyRegistered = Registered<any, any>

export class ChannelRegistry extends Effect.Service<ChannelRegistry>()("jobmon/ChannelRegistry", {
  effect: Effect.gen(function*() {
    const { publicUrl } = yield* AppConfig

    const webhook: Registered<"webhooks", WebhookDestination> = {
      ...WEBHOOKS,
      channel: webhookChannel,
      destinationOf: webhookDestinationOf
    }

    /** Chat messages' buttons link to the dashboard at PUBLIC_URL. */
    const chat: Registered<"chat_webhooks", ChatDestination> = {
      ...CHAT_WEBHOOKS,
      channel: chatChannel(publicUrl),
      destinationOf: chatDestinationOf
    }

    /** Kinds whose destinations are claimed whole: one worker at a time sends to one, packing what waits. */
    const claimedWhole: ReadonlyArray<Registered<ClaimedWholeTable, any>> = [chat]

    return {
      webhook,
      chat,
      /** Every kind: the fan-out asks each one's channel for its messages. */
      all: [...claimedWhole, webhook] as ReadonlyArray<AnyRegistered>,
      claimedWhole
    } as const
  })
}) {}
