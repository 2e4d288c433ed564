import { iso } from "../Domain/Instant.js"
import { type Channel, DELIVERED, oneByOne, type OutboundRequest, REJECTED, retryLater } from "./Channel.js"
import { delayAfterAttempt, isRetryable, isSuccess, MAX_ATTEMPTS, RATE_LIMIT_PER_MINUTE } from "./RetrySchedule.js"
import { sign, standardSignature } from "./Signing.js"

/**
 * Outbound webhooks (docs/decisions.md#delivery, docs/delivery.md): every selected event, as its
 * envelope's exact bytes, signed with the webhook's secret (X-Service-Signature, and the Standard
 * Webhooks headers signed at each attempt's time). Retried on 5xx and no answer per the retry
 * table; any other answer ends the delivery. Retry-After is not honoured: the table is the
 * contract.
 */

export interface WebhookDestination {
  readonly id: string
  readonly url: string
  readonly secret: string
  readonly events: ReadonlyArray<string>
  readonly filterMonitorIds: ReadonlyArray<string>
  readonly filterSeverity: ReadonlyArray<string>
}

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

export const webhookChannel: Channel<WebhookDestination, OutboundRequest> = {
  kind: "webhook",
  perMinute: RATE_LIMIT_PER_MINUTE,
  spacingMs: 0,
  retry: { maxAttempts: MAX_ATTEMPTS, delayAfterAttempt },
  incidentEvents: [],
  messageFor: (webhook, event) =>
    matches(webhook, { type: event.event, monitorIds: event.monitorIds, severity: event.severity }) ? event.envelope() : undefined,
  testMessageFor: (webhook, test) =>
    JSON.stringify({
      event: "webhook.test",
      id: test.id,
      createdAt: iso(test.at),
      data: { webhook: { id: webhook.id, url: webhook.url }, message: "This is a test delivery from jobmon." }
    }),
  pack: oneByOne,
  requestFor: (webhook, [message], { at, rate }) => {
    // Standard Webhooks: the attempt's time is signed with the id and the body (replays of a
    // captured delivery are refused by a receiver that checks the timestamp)
    const timestamp = Math.floor(at / 1000)
    return {
      url: webhook.url,
      body: message!.body,
      headers: {
        "Content-Type": "application/json",
        "User-Agent": "jobmon-webhooks/1",
        "X-Service-Event": message!.eventType,
        "X-Service-Delivery": message!.deliveryId,
        "X-Service-Signature": sign(webhook.secret, message!.body),
        "webhook-id": message!.deliveryId,
        "webhook-timestamp": String(timestamp),
        "webhook-signature": standardSignature(webhook.secret, message!.deliveryId, timestamp, message!.body),
        "X-RateLimit-Limit": String(rate.limit),
        "X-RateLimit-Remaining": String(rate.limit - rate.count),
        "X-RateLimit-Reset": String(Math.floor(rate.resetAt / 1000))
      }
    }
  },
  verdictOn: ({ outcome }) => (isSuccess(outcome) ? DELIVERED : isRetryable(outcome) ? retryLater(undefined) : REJECTED)
}
