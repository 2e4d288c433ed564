import { Schema } from "effect"
import { StoredString } from "../Domain/Text.js"
import { type Alert, alertOf, clip, linksOf, tail, testAlertOf } from "./Alert.js"
import {
  type Channel,
  httpVerdict,
  oneByOne,
  type OutboundRequest,
  type SendResult,
  type StoredMessage
} from "./Channel.js"
import type { AlertChannelType } from "./ChannelType.js"
import { delayAfterAttempt, MAX_ATTEMPTS } from "./RetrySchedule.js"

/**
 * PagerDuty, through the Events API v2 (docs/alerts.md#pagerduty;
 * https://developer.pagerduty.com/docs/events-api-v2/trigger-events/,
 * …/acknowledge-events/, …/resolve-events/): `POST {baseUrl}/v2/enqueue`. An incident's opening
 * is a `trigger`, its acknowledgement an `acknowledge`, its resolution a `resolve`, all with the
 * incident's id as `dedup_key`, so PagerDuty's incident follows ours; a reminder re-triggers with
 * the same key (PagerDuty counts it against the open incident, it pages nobody anew).
 *
 * The stored message holds no secret: the routing key is added when the request is made, so a
 * PATCH of the key applies to what still waits. One event a request (the API takes no batches),
 * oldest first: the pipeline keeps a destination's order (event_seq), and a retried trigger holds
 * back what follows it, so a trigger always goes before its acknowledge and resolve.
 *
 * Answers: 202 delivered; 400 (invalid event) fails the message; 429 and 5xx and no answer retry
 * (8 attempts over about two minutes: a page matters more than a chat line).
 */

export const PAGERDUTY_BASE_URL = "https://events.pagerduty.com"

export const PagerDutyConfig = Schema.Struct({
  routingKey: StoredString.pipe(Schema.minLength(1), Schema.maxLength(200)).annotations({
    description: "the Events API v2 integration key (routing key) of a PagerDuty service; a secret, never shown"
  }),
  baseUrl: Schema.optional(StoredString.pipe(Schema.minLength(1), Schema.maxLength(2048))).annotations({
    description: "the Events API's address; default https://events.pagerduty.com (https://events.eu.pagerduty.com for EU accounts)"
  })
})
export type PagerDutyConfig = typeof PagerDutyConfig.Type

export interface PagerDutyDestination {
  readonly id: string
  readonly name: string
  readonly routingKey: string
  readonly baseUrl: string
}

// ---- the documented format ----------------------------------------------------------------------

export const PAGERDUTY_LIMITS = {
  /** payload.summary: at most 1,024 characters. */
  summary: 1024,
  /** The whole event: at most 512 KB; the output's end we send is far smaller. */
  output: 4000
} as const

export type PagerDutySeverity = "critical" | "error" | "warning" | "info"

/** Our severities as PagerDuty's (its urgency rules read these). */
export const PAGERDUTY_SEVERITY: Record<string, PagerDutySeverity> = { HIGH: "critical", MEDIUM: "error", LOW: "warning" }

/** An event as stored: everything but the routing key. */
export interface PagerDutyEvent {
  readonly event_action: "trigger" | "acknowledge" | "resolve"
  readonly dedup_key: string
  readonly payload?: {
    readonly summary: string
    readonly source: string
    readonly severity: PagerDutySeverity
    readonly timestamp: string
    readonly component?: string
    readonly group?: string
    readonly class?: string
    readonly custom_details: Record<string, unknown>
  }
  readonly links?: ReadonlyArray<{ readonly href: string; readonly text: string }>
  readonly client?: string
  readonly client_url?: string
}

/**
 * A change event as stored (everything but the routing key): what maintenance notices are sent as
 * (https://developer.pagerduty.com/docs/events-API-v2/03-Change-Events.md: "a change in a system
 * that does not represent a problem"), posted to /v2/change/enqueue; PagerDuty shows it in the
 * service's Recent Changes and notifies nobody.
 */
export interface PagerDutyChangeEvent {
  readonly payload: {
    readonly summary: string
    readonly source: string
    readonly timestamp: string
    readonly custom_details: Record<string, unknown>
  }
  readonly links: ReadonlyArray<{ readonly href: string; readonly text: string }>
}

/** What one message posts: an alert event (trigger, acknowledge, resolve) or a change event. */
export type PagerDutyMessage = PagerDutyEvent | PagerDutyChangeEvent

const hostOf = (url: string) => {
  try {
    return new URL(url).host || "jobmon"
  } catch {
    return "jobmon"
  }
}

const linksFor = (alert: Alert) => linksOf(alert).filter(([, url]) => url !== undefined).map(([text, href]) => ({ href: href!, text }))

/** The change event for a maintenance notice (pure). */
export const pagerDutyChangeOf = (alert: Alert, publicUrl: string): PagerDutyChangeEvent => {
  const details: Record<string, unknown> = {}
  for (const fact of alert.facts) details[fact.label] = fact.value
  if (alert.text !== undefined) details["Message"] = alert.text
  return {
    payload: { summary: clip(alert.summary, PAGERDUTY_LIMITS.summary), source: hostOf(publicUrl), timestamp: alert.at, custom_details: details },
    links: linksFor(alert)
  }
}

/** The message for one alert (pure): a change event for a maintenance notice, else an alert event. */
export const pagerDutyMessageOf = (alert: Alert, publicUrl: string): PagerDutyMessage =>
  alert.kind === "maintenance" ? pagerDutyChangeOf(alert, publicUrl) : pagerDutyEventOf(alert, publicUrl)

/** The event for one alert (pure). */
export const pagerDutyEventOf = (alert: Alert, publicUrl: string, testId?: string): PagerDutyEvent => {
  const incident = alert.incident
  const dedupKey = incident?.id ?? `jobmon-test-${testId ?? alert.at}`
  if (alert.kind === "acknowledged" || alert.kind === "resolved") {
    return { event_action: alert.kind === "acknowledged" ? "acknowledge" : "resolve", dedup_key: dedupKey }
  }
  const details: Record<string, unknown> = {}
  for (const fact of alert.facts) details[fact.label] = fact.value
  if (alert.text !== undefined) details["Message"] = alert.text
  if (alert.output !== undefined) details["Output"] = tail(alert.output, PAGERDUTY_LIMITS.output)
  return {
    event_action: "trigger",
    dedup_key: dedupKey,
    payload: {
      summary: clip(alert.summary, PAGERDUTY_LIMITS.summary),
      source: hostOf(publicUrl),
      severity: incident === undefined ? "info" : PAGERDUTY_SEVERITY[incident.severity] ?? "error",
      timestamp: alert.at,
      ...(incident === undefined
        ? { component: "jobmon" }
        : { component: incident.monitorName, class: incident.type, ...(incident.monitorTags[0] === undefined ? {} : { group: incident.monitorTags[0] }) }),
      custom_details: details
    },
    links: linksFor(alert),
    client: "jobmon",
    ...(alert.incidentUrl === undefined ? {} : { client_url: alert.incidentUrl })
  }
}

/** PagerDuty's answer (https://developer.pagerduty.com/docs/events-api-v2/overview/#response-codes--retry-logic). */
export const pagerDutyVerdict = (result: SendResult) => httpVerdict(result, () => undefined)

const HEADERS: Record<string, string> = { "Content-Type": "application/json", "User-Agent": "jobmon-alerts/1" }

/** PagerDuty takes 120 events a minute per routing key (Events API v2 rate limits). */
export const PAGERDUTY_PER_MINUTE = 120

export const enqueueUrl = (baseUrl: string) => `${baseUrl.replace(/\/+$/, "")}/v2/enqueue`

/** Where change events go (maintenance notices). */
export const changeEnqueueUrl = (baseUrl: string) => `${baseUrl.replace(/\/+$/, "")}/v2/change/enqueue`

export const pagerDutyChannel = (publicUrl: string): Channel<PagerDutyDestination, OutboundRequest> => ({
  kind: "pagerduty",
  perMinute: PAGERDUTY_PER_MINUTE,
  spacingMs: 0,
  retry: { maxAttempts: MAX_ATTEMPTS, delayAfterAttempt },
  incidentEvents: ["incident.opened", "incident.acknowledged", "incident.resolved"],
  messageFor: (_pd, event) => {
    const alert = alertOf(event, publicUrl)
    return alert === undefined ? undefined : JSON.stringify(pagerDutyMessageOf(alert, publicUrl))
  },
  testMessageFor: (pd, test) => JSON.stringify(pagerDutyEventOf(testAlertOf(pd.name, test.at), publicUrl, test.id)),
  pack: oneByOne,
  requestFor: (pd, messages: ReadonlyArray<StoredMessage>) => {
    const message = JSON.parse(messages[0]!.body) as PagerDutyMessage
    return {
      url: "event_action" in message ? enqueueUrl(pd.baseUrl) : changeEnqueueUrl(pd.baseUrl),
      headers: HEADERS,
      body: JSON.stringify({ routing_key: pd.routingKey, ...message })
    }
  },
  verdictOn: pagerDutyVerdict
})

export const pagerDutyType: AlertChannelType<PagerDutyConfig, PagerDutyDestination> = {
  type: "pagerduty",
  config: PagerDutyConfig,
  secrets: { routingKey: { shown: "omitted" } },
  urlFields: ["baseUrl"],
  defaultName: () => "pagerduty",
  unavailable: () => undefined,
  channel: (settings) => pagerDutyChannel(settings.publicUrl),
  destinationOf: ({ config, id, name }) => ({ id, name, routingKey: config.routingKey, baseUrl: config.baseUrl ?? PAGERDUTY_BASE_URL })
}
