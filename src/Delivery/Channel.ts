import { type EventRow } from "../Events/EventsRepo.js"
import { envelopeOf, type StoredEvent, toStoredEvent } from "../Events/Events.js"
import { isSuccess, type Outcome } from "./RetrySchedule.js"
import type { SendResult } from "./Sender.js"

export type { SendResult }

/**
 * One kind of destination, one module ("one channel, one module"): what the channel posts for an
 * event, how one attempt is carried, and what the receiver's answer means. A channel is pure: no
 * I/O, no clock. The delivery cycle does the rest, the same for every channel: fan-out stores each
 * message as a row before it is attempted (FanOut.ts), the worker claims due rows, takes the rate
 * limit, sends through the one outbound client (Sender.ts: timeouts, SSRF guard), records every
 * attempt and reschedules per the channel's retry table (Attempts.ts, DeliveryWorker.ts).
 *
 * A request is HTTP (`OutboundRequest`, sent by Sender.ts) or a mail (`MailRequest`, sent over SMTP
 * by Mailer.ts); the answer comes back as a `SendResult` either way.
 *
 * Channels: signed webhooks (WebhookChannel.ts), Discord-style chat (ChatChannel.ts), and the alert
 * channels of the channels resource (ChannelType.ts: SlackChannel.ts, EmailChannel.ts, …).
 */
export interface Channel<Destination, Request extends Transmission = Transmission> {
  /** Names the channel in logs and messages ("webhook", "chat"). */
  readonly kind: string
  /** Requests per minute to one destination; the rest wait for the next minute. */
  readonly perMinute: number
  /**
   * The least time between two requests to one destination, in milliseconds (a provider's pace,
   * e.g. Slack's one message a second per webhook); 0 for none. Only for destinations claimed whole.
   */
  readonly spacingMs: number
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
  readonly requestFor: (destination: Destination, messages: ReadonlyArray<StoredMessage>, attempt: AttemptContext) => Request
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
  /**
   * A maintenance notice's monitors (the window's, as they are when the fan-out reads them), for
   * alert channels: their rules route it, their messages name them. Undefined for other events.
   */
  readonly monitors?: ReadonlyArray<MonitorFacts> | undefined
}

/** A monitor as a maintenance notice names it and the rules read it. */
export interface MonitorFacts {
  readonly id: string
  readonly name: string
  readonly tags: ReadonlyArray<string>
}

/** An incident and its monitor, as alerts describe them (as they are when the fan-out reads them). */
export interface IncidentFacts {
  readonly id: string
  /** MISSED, FAIL, LATE or ANOMALY. */
  readonly type: string
  readonly severity: string
  /** OPEN, ACKNOWLEDGED or RESOLVED. */
  readonly status: string
  readonly monitorId: string
  readonly monitorName: string
  readonly monitorTags: ReadonlyArray<string>
  /** ISO 8601: when it opened. */
  readonly openedAt: string
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

/** An HTTP POST, sent by Sender.ts (SSRF guard, 5 s, no redirects). */
export interface OutboundRequest {
  readonly transport?: "http"
  readonly url: string
  /** Sent, and recorded with the attempt: they must never hold a secret (a signature may). */
  readonly headers: Record<string, string>
  /** Sent but never recorded: credentials (Opsgenie's `Authorization: GenieKey …`, ntfy's bearer token). */
  readonly secretHeaders?: Record<string, string> | undefined
  readonly body: string
}

/** A mail, sent over SMTP by Mailer.ts (SMTP_URL; the sender is SMTP_FROM). */
export interface MailRequest {
  readonly transport: "mail"
  readonly to: ReadonlyArray<string>
  readonly subject: string
  readonly text: string
  readonly html: string
  /** Recorded with the attempt (To, Subject): never a secret. */
  readonly headers: Record<string, string>
}

/** What one attempt sends. */
export type Transmission = OutboundRequest | MailRequest

/**
 * The receiver's answer, classified by the channel. `detail`, when given, is what the attempt
 * records as its error (e.g. `HTTP 400: invalid_payload`); otherwise `HTTP <status>` or the error.
 */
export type Verdict =
  /** Accepted (2xx). */
  | { readonly _tag: "Delivered" }
  /** Try again after the retry table's delay, or the receiver's Retry-After when the channel honours it and it is longer. */
  | { readonly _tag: "RetryLater"; readonly retryAfterMs: number | undefined; readonly detail?: string | undefined }
  /** This message failed for good; the destination stays as it is. */
  | { readonly _tag: "Rejected"; readonly detail?: string | undefined }
  /** The destination takes nothing any more (deleted, token revoked): it is marked invalid, with the reason. */
  | { readonly _tag: "Invalid"; readonly reason: string; readonly detail?: string | undefined }

export const DELIVERED: Verdict = { _tag: "Delivered" }
export const REJECTED: Verdict = { _tag: "Rejected" }
export const retryLater = (retryAfterMs: number | undefined, detail?: string): Verdict =>
  detail === undefined ? { _tag: "RetryLater", retryAfterMs } : { _tag: "RetryLater", retryAfterMs, detail }
export const rejected = (detail: string): Verdict => ({ _tag: "Rejected", detail })
export const invalid = (reason: string, detail?: string): Verdict =>
  detail === undefined ? { _tag: "Invalid", reason } : { _tag: "Invalid", reason, detail }

/** The most of a provider's answer an attempt records. */
const ANSWER_TEXT_LIMIT = 200

/**
 * A provider's answer in one line, as attempts record it and the test endpoint shows it:
 * `HTTP 404: no_service`, `SMTP 550: 5.1.1 mailbox unavailable`, or the error (`timeout: …`).
 */
export const describeAnswer = (result: SendResult): string => {
  const { outcome } = result
  if (outcome._tag !== "Answered") return outcome.error
  const text = (result.responseText ?? "").replace(/\s+/g, " ").trim()
  const clipped = text.length > ANSWER_TEXT_LIMIT ? `${text.slice(0, ANSWER_TEXT_LIMIT)}…` : text
  return `${result.protocol === "smtp" ? "SMTP" : "HTTP"} ${outcome.status}${clipped === "" ? "" : `: ${clipped}`}`
}

/**
 * How an HTTP provider's answer reads, for the channels whose providers answer alike: no
 * connection fails the message, no answer retries, 2xx is delivered, 429 waits the provider's
 * Retry-After (or `retryAfterSeconds` when it sends none), 5xx retries; then the channel's own
 * reading of the rest (`gone`: the reason the destination takes nothing any more, if it does not),
 * and anything else fails the message. `detail` is `describeAnswer`'s line.
 */
export const httpVerdict = (
  result: SendResult,
  gone: (status: number, detail: string) => string | undefined,
  retryAfterSeconds?: number
): Verdict => {
  const { outcome } = result
  const detail = describeAnswer(result)
  if (outcome._tag === "Refused") return rejected(detail)
  if (outcome._tag === "NoAnswer") return retryLater(undefined, detail)
  const status = outcome.status
  if (status >= 200 && status < 300) return DELIVERED
  if (status === 429) {
    const seconds = result.retryAfterSeconds ?? retryAfterSeconds
    return retryLater(seconds === undefined ? undefined : seconds * 1000, detail)
  }
  if (status >= 500) return retryLater(undefined, detail)
  const reason = gone(status, detail)
  return reason === undefined ? rejected(detail) : invalid(reason, detail)
}

/** The headers of a JSON request to a chat provider. */
export const JSON_HEADERS: Record<string, string> = { "Content-Type": "application/json; charset=utf-8", "User-Agent": "jobmon-alerts/1" }

/** `pack` for a provider that takes one message a request. */
export const oneByOne = <M extends StoredMessage>(messages: ReadonlyArray<M>): Array<Array<M>> => messages.map((m) => [m])

/** A stored event as channels read it; `incident` when the fan-out loaded it. */
export const channelEventOf = (row: EventRow, incident?: IncidentFacts, monitors?: ReadonlyArray<MonitorFacts>): ChannelEvent => {
  const stored = toStoredEvent(row)
  let envelope: string | undefined
  return { ...stored, envelope: () => (envelope ??= JSON.stringify(envelopeOf(stored))), incident, monitors }
}

/**
 * The attempt's status code and error, as webhook_delivery_attempts records them: the verdict's
 * detail when it gives one, else `HTTP <status>` or the error.
 */
export const answerOf = (result: SendResult, verdict: Verdict) => {
  const outcome: Outcome = result.outcome
  const detail = verdict._tag === "Delivered" ? undefined : verdict.detail
  return {
    statusCode: outcome._tag === "Answered" ? outcome.status : null,
    error: verdict._tag === "Delivered"
      ? null
      : detail ?? (outcome._tag === "Answered" ? (isSuccess(outcome) ? null : `HTTP ${outcome.status}`) : outcome.error)
  }
}

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
