import { iso } from "../Domain/Instant.js"
import { type Channel, type ChannelEvent, DELIVERED, type OutboundRequest, REJECTED, retryLater } from "./Channel.js"
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
import { CHAT_MAX_ATTEMPTS, CHAT_RATE_LIMIT_PER_MINUTE, chatDelayAfterAttempt, isRetryable, isSuccess } from "./RetrySchedule.js"

/**
 * Chat alert webhooks (docs/decisions.md#delivery, docs/delivery.md#chat-alert-webhooks),
 * Discord's incoming webhook shape (ChatMessage.ts): incident.opened and incident.resolved to the
 * chat webhooks whose rules match, maintenance notices to those a window's channels name
 * (`chat:<name>`). Messages that wait together go out packed into as few as Discord allows. A 404
 * or 401 means the webhook is gone: it becomes invalid, with the reason; 429, 5xx and no answer
 * wait for the backoff, or the answer's Retry-After when longer.
 */

export interface ChatDestination {
  readonly id: string
  readonly name: string
  readonly url: string
  readonly rulesSeverity: ReadonlyArray<string>
  readonly rulesTypes: ReadonlyArray<string>
  readonly mention: string | null
}

/** Chat rules: empty lists match everything. */
export const chatRulesMatch = (
  rules: { severity: ReadonlyArray<string>; types: ReadonlyArray<string> },
  incident: { type: string; severity: string }
) =>
  (rules.severity.length === 0 || rules.severity.includes(incident.severity)) &&
  (rules.types.length === 0 || rules.types.includes(incident.type))

export const invalidReason = (status: number) =>
  `The chat service answered ${status}: the webhook was deleted or its token is no longer valid. ` +
  "Regenerate it in the chat service and update the url here."

const HEADERS: Record<string, string> = { "Content-Type": "application/json", "User-Agent": "jobmon-alerts/1" }

const MAINTENANCE = "maintenance."

/** A window's notice goes to the chat webhooks its channels name (chat:<name>), whatever their rules. */
const maintenanceMessage = (chat: ChatDestination, event: ChannelEvent): string | undefined => {
  const data = event.data as {
    channels?: ReadonlyArray<string>
    window?: { name?: string; monitorIds?: ReadonlyArray<string>; reason?: string | null }
    startsAt?: string
    endsAt?: string
  }
  if (!(data.channels ?? []).some((c) => c.startsWith("chat:") && c.slice(5) === chat.name)) return undefined
  return JSON.stringify(maintenanceMessageOf({
    kind: event.event.slice(MAINTENANCE.length) as "upcoming" | "started" | "ended",
    windowName: data.window?.name ?? "",
    monitorCount: data.window?.monitorIds?.length ?? 0,
    startsAt: data.startsAt ?? "",
    endsAt: data.endsAt ?? "",
    reason: data.window?.reason ?? null,
    at: event.createdAt
  }, chat.mention))
}

const incidentMessage = (publicUrl: string, chat: ChatDestination, event: ChannelEvent): string | undefined => {
  const incident = event.incident
  if (incident === undefined) return undefined
  if (!chatRulesMatch({ severity: chat.rulesSeverity, types: chat.rulesTypes }, incident)) return undefined
  const resolved = event.event === "incident.resolved"
  const message: ChatIncident = {
    id: incident.id,
    type: resolved ? "RESOLVED" : (incident.type as ChatIncident["type"]),
    status: resolved ? "RESOLVED" : "OPEN",
    severity: incident.severity,
    monitorId: incident.monitorId,
    monitorName: incident.monitorName,
    details: incident.details,
    at: event.createdAt
  }
  return JSON.stringify(messageOf(publicUrl, message, chat.mention))
}

const INCIDENT_EVENTS = ["incident.opened", "incident.resolved"]

const parse = (body: string) => JSON.parse(body) as ChatMessageBody

/** The chat channel; its messages' buttons link to `publicUrl`. */
export const chatChannel = (publicUrl: string): Channel<ChatDestination, OutboundRequest> => ({
  kind: "chat",
  perMinute: CHAT_RATE_LIMIT_PER_MINUTE,
  spacingMs: 0,
  retry: { maxAttempts: CHAT_MAX_ATTEMPTS, delayAfterAttempt: chatDelayAfterAttempt },
  incidentEvents: INCIDENT_EVENTS,
  messageFor: (chat, event) =>
    event.event.startsWith(MAINTENANCE)
      ? maintenanceMessage(chat, event)
      : INCIDENT_EVENTS.includes(event.event)
      ? incidentMessage(publicUrl, chat, event)
      : undefined,
  testMessageFor: (chat, test) => JSON.stringify(testMessageOf(chat.name, chat.mention, iso(test.at))),
  pack: (messages) => packMessages(messages, (m) => parse(m.body)),
  requestFor: (chat, messages) => {
    const message = mergeMessages(messages.map((m) => parse(m.body)))
    return { url: postUrlOf(chat.url, message), headers: HEADERS, body: JSON.stringify(message) }
  },
  verdictOn: ({ outcome, retryAfterSeconds }) => {
    if (isSuccess(outcome)) return DELIVERED
    if (outcome._tag === "Answered" && (outcome.status === 404 || outcome.status === 401)) {
      return { _tag: "Invalid", reason: invalidReason(outcome.status) }
    }
    if ((outcome._tag === "Answered" && outcome.status === 429) || isRetryable(outcome)) {
      return retryLater(retryAfterSeconds === undefined ? undefined : retryAfterSeconds * 1000)
    }
    return REJECTED
  }
})
