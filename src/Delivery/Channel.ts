import { type EventRow } from "../Events/EventsRepo.js"
import { envelopeOf, type StoredEvent, toStoredEvent } from "../Events/Events.js"
import { isSuccess, type Outcome } from "./RetrySchedule.js"
import type { SendResult } from "./Sender.js"

/**
 * One kind of destination, one module ("one channel, one module"): what the channel posts for an
 * event, how one attempt is carried, and what the receiver's answer means. A channel is pure: no
 * I/O, no clock. The delivery cycle does the rest, the same for every channel: fan-out stores each
 * message as a row before it is attempted (FanOut.ts), the worker claims due rows, takes the rate
 * limit, sends through the one outbound client (Sender.ts: timeouts, SSRF guard), records every
 * attempt and reschedules per the channel's retry table (Attempts.ts, DeliveryWorker.ts).
 *
 * Today: signed webhooks (WebhookChannel.ts) and Discord-style chat (ChatChannel.ts).
 */
export interface Channel<Destination> {
  /** Names the channel in logs and messages ("webhook", "chat"). */
  readonly kind: string
  /** Requests per minute to one destination; the rest wait for the next minute. */
  readonly perMinute: number
  readonly retry: RetryPolicy
  /**
   * Event kinds whose messages read the incident behind them (`ChannelEvent.incident`): the fan-out
   * loads it once per event, and only when some destination of this channel could take the event.
   */
  readonly incidentEvents: ReadonlyArray<string>
  /** The message this destination gets for the event, or undefined when it takes none (its filters, rules). */
  readonly messageFor: (destination: Destination, event: ChannelEvent) => string | undefined
  /** The message of the test endpoint. */
  readonly testMessageFor: (destination: Destination, test: { readonly id: string; readonly at: number }) => string
  /**
   * Due messages of one destination, oldest first, in groups that each go out as one request
   * (order kept, each message in exactly one group). A channel that cannot combine messages answers
   * one group per message.
   */
  readonly pack: <M extends StoredMessage>(messages: ReadonlyArray<M>) => ReadonlyArray<ReadonlyArray<M>>
  /** The request that carries one group of messages (one message for channels that do not pack). */
  readonly requestFor: (destination: Destination, messages: ReadonlyArray<StoredMessage>, attempt: AttemptContext) => OutboundRequest
  /** What the receiver's answer means. */
  readonly verdictOn: (answer: SendResult) => Verdict
}

export interface RetryPolicy {
  /** Attempts of one message in all. */
  readonly maxAttempts: number
  /** Milliseconds after failed attempt `attempt` (1-based) before the next; undefined after the last. */
  readonly delayAfterAttempt: (attempt: number) => number | undefined
}

/** An event as a channel reads it: as stored (`event` is its kind), and what the fan-out adds. */
export interface ChannelEvent extends StoredEvent {
  /** The envelope's exact bytes (`{event, id, createdAt, data}`), built once for all destinations. */
  readonly envelope: () => string
  /** The incident behind it, for the channel's `incidentEvents` (undefined otherwise, or when it is gone). */
  readonly incident: IncidentFacts | undefined
}

/** An incident and its monitor, as alerts describe them. */
export interface IncidentFacts {
  readonly id: string
  /** MISSED, FAIL, LATE or ANOMALY. */
  readonly type: string
  readonly severity: string
  readonly monitorId: string
  readonly monitorName: string
  readonly details: Record<string, unknown>
}

/** A message stored for one destination (a row of webhook_deliveries), as the worker hands it on. */
export interface StoredMessage {
  readonly deliveryId: string
  readonly eventType: string
  readonly body: string
}

export interface AttemptContext {
  /** The attempt's time (the service's Clock), epoch milliseconds. */
  readonly at: number
  /** The destination's minute: its limit, its count with this request, and when it ends (epoch ms). */
  readonly rate: { readonly limit: number; readonly count: number; readonly resetAt: number }
}

export interface OutboundRequest {
  readonly url: string
  /** Sent, and recorded with the attempt: they must never hold a secret (a signature may). */
  readonly headers: Record<string, string>
  readonly body: string
}

/** The receiver's answer, classified by the channel. */
export type Verdict =
  /** Accepted (2xx). */
  | { readonly _tag: "Delivered" }
  /** Try again after the retry table's delay, or the receiver's Retry-After when the channel honours it and it is longer. */
  | { readonly _tag: "RetryLater"; readonly retryAfterMs: number | undefined }
  /** This message failed for good; the destination stays as it is. */
  | { readonly _tag: "Rejected" }
  /** The destination takes nothing any more (deleted, token revoked): it is marked invalid, with the reason. */
  | { readonly _tag: "Invalid"; readonly reason: string }

export const DELIVERED: Verdict = { _tag: "Delivered" }
export const REJECTED: Verdict = { _tag: "Rejected" }
export const retryLater = (retryAfterMs: number | undefined): Verdict => ({ _tag: "RetryLater", retryAfterMs })

/** A stored event as channels read it; `incident` when the fan-out loaded it. */
export const channelEventOf = (row: EventRow, incident?: IncidentFacts): ChannelEvent => {
  const stored = toStoredEvent(row)
  let envelope: string | undefined
  return { ...stored, envelope: () => (envelope ??= JSON.stringify(envelopeOf(stored))), incident }
}

/** The attempt's status code and error, as webhook_delivery_attempts records them. */
export const answerOf = (outcome: Outcome) => ({
  statusCode: outcome._tag === "Answered" ? outcome.status : null,
  error: outcome._tag === "Answered" ? (isSuccess(outcome) ? null : `HTTP ${outcome.status}`) : outcome.error
})

/** A message's state after its attempt `attempt`. */
export const stateAfter = (policy: RetryPolicy, verdict: Verdict, attempt: number): "succeeded" | "pending" | "failed" =>
  verdict._tag === "Delivered" ? "succeeded" : verdict._tag === "RetryLater" && attempt < policy.maxAttempts ? "pending" : "failed"

/**
 * How long a destination waits after a RetryLater on attempt `attempt` (of the oldest message of a
 * group): the retry table's delay (the last one once the table is used up), or the answer's
 * Retry-After when longer.
 */
export const retryWait = (policy: RetryPolicy, attempt: number, retryAfterMs: number | undefined): number =>
  Math.max(policy.delayAfterAttempt(Math.min(attempt, policy.maxAttempts - 1)) ?? 0, retryAfterMs ?? 0)
