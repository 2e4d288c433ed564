import { Schema } from "effect"
import { StoredString } from "../Domain/Text.js"
import { type Alert, alertOf, clip, tail, testAlertOf } from "./Alert.js"
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
 * Opsgenie, through the Alert API (docs/alerts.md#opsgenie; https://docs.opsgenie.com/docs/alert-api):
 * an incident's opening creates an alert (`POST /v2/alerts`) whose `alias` is the incident's id;
 * its acknowledgement and resolution acknowledge and close that alert by alias
 * (`POST /v2/alerts/{alias}/acknowledge?identifierType=alias`, `…/close?identifierType=alias`); a
 * reminder creates it again (Opsgenie de-duplicates by alias: its count goes up, nobody is paged anew).
 * The API key goes in `Authorization: GenieKey …`, sent but never recorded with the attempt; the
 * stored message holds no secret. Region `us` is https://api.opsgenie.com, `eu`
 * https://api.eu.opsgenie.com; `baseUrl` overrides both.
 *
 * One request a message, oldest first: the pipeline keeps a destination's order (event_seq) and a
 * retried create holds back what follows, so the create always goes before its acknowledge and close.
 *
 * Answers: 202 delivered; 401/403 make the channel invalid (the key was revoked or lacks the
 * right); 422 and other 4xx fail the message; 429, 5xx and no answer retry.
 */

export const OPSGENIE_BASE_URLS = { us: "https://api.opsgenie.com", eu: "https://api.eu.opsgenie.com" } as const

export const OpsgenieConfig = Schema.Struct({
  apiKey: StoredString.pipe(Schema.minLength(1), Schema.maxLength(200)).annotations({
    description: "an API key of an Opsgenie API integration (Create and Update access); a secret, never shown"
  }),
  region: Schema.optional(Schema.Literal("us", "eu")).annotations({
    description: "us (api.opsgenie.com, the default) or eu (api.eu.opsgenie.com)"
  }),
  baseUrl: Schema.optional(StoredString.pipe(Schema.minLength(1), Schema.maxLength(2048))).annotations({
    description: "the Alert API's address, instead of the region's"
  })
})
export type OpsgenieConfig = typeof OpsgenieConfig.Type

export interface OpsgenieDestination {
  readonly id: string
  readonly name: string
  readonly apiKey: string
  readonly baseUrl: string
}

// ---- the documented format (https://docs.opsgenie.com/docs/alert-api#create-alert) --------------

export const OPSGENIE_LIMITS = {
  message: 130,
  alias: 512,
  description: 15000,
  tags: 20,
  tag: 50,
  /** details: keys and values together at most 8,000 characters. */
  details: 8000,
  source: 100,
  entity: 512,
  note: 25000,
  output: 4000
} as const

export type OpsgeniePriority = "P1" | "P2" | "P3" | "P4" | "P5"
export const OPSGENIE_PRIORITY: Record<string, OpsgeniePriority> = { HIGH: "P1", MEDIUM: "P3", LOW: "P4" }

export interface OpsgenieCreate {
  readonly message: string
  readonly alias: string
  readonly description: string
  readonly priority: OpsgeniePriority
  readonly tags: ReadonlyArray<string>
  readonly details: Record<string, string>
  readonly entity: string
  readonly source: string
}

export interface OpsgenieAction {
  readonly user: string
  readonly source: string
  readonly note: string
}

/** A message as stored: what to do to which alert, and the body (no secret). */
export type OpsgenieMessage =
  | { readonly action: "create"; readonly alias: string; readonly body: OpsgenieCreate }
  | { readonly action: "acknowledge" | "close"; readonly alias: string; readonly body: OpsgenieAction }

const SOURCE = "jobmon"

/**
 * A maintenance period's alert: one per window and period start, so its notices act on the same
 * alert (Opsgenie deduplicates a create with the alias of an open alert; ended closes it).
 */
export const maintenanceAlias = (m: NonNullable<Alert["maintenance"]>) => clip(`jobmon-maintenance-${m.windowId}-${m.startsAt}`, OPSGENIE_LIMITS.alias)

/** The message for one alert (pure), within Opsgenie's limits. */
export const opsgenieMessageOf = (alert: Alert, testId?: string): OpsgenieMessage => {
  const incident = alert.incident
  const alias = alert.maintenance !== undefined
    ? maintenanceAlias(alert.maintenance)
    : clip(incident?.id ?? `jobmon-test-${testId ?? alert.at}`, OPSGENIE_LIMITS.alias)
  if (alert.maintenance?.notice === "ended") {
    return {
      action: "close",
      alias,
      body: { user: SOURCE, source: SOURCE, note: clip([alert.summary, ...alert.facts.map((f) => `${f.label}: ${f.value}`)].join("\n"), OPSGENIE_LIMITS.note) }
    }
  }
  if (alert.kind === "acknowledged" || alert.kind === "resolved") {
    const by = alert.facts.find((f) => f.label === "Acknowledged by" || f.label === "Resolved by")?.value
    return {
      action: alert.kind === "acknowledged" ? "acknowledge" : "close",
      alias,
      body: {
        user: clip(by ?? SOURCE, 100),
        source: SOURCE,
        note: clip([alert.summary, alert.note].filter((s) => s !== null && s !== "").join("\n"), OPSGENIE_LIMITS.note)
      }
    }
  }
  const lines = [
    ...(alert.text === undefined ? [] : [alert.text]),
    ...alert.facts.map((f) => `${f.label}: ${f.value}`),
    ...(alert.incidentUrl === undefined ? [] : [`Incident: ${alert.incidentUrl}`]),
    ...(alert.monitorUrl === undefined ? [] : [`Monitor: ${alert.monitorUrl}`]),
    ...(alert.maintenanceUrl === undefined ? [] : [`Maintenance: ${alert.maintenanceUrl}`])
  ]
  const head = lines.join("\n")
  const room = OPSGENIE_LIMITS.description - head.length - "\n\nOutput:\n".length
  const description = alert.output === undefined || room < 100
    ? clip(head, OPSGENIE_LIMITS.description)
    : `${head}\n\nOutput:\n${tail(alert.output, Math.min(room, OPSGENIE_LIMITS.output))}`
  const details: Record<string, string> = {}
  let used = 0
  for (const [key, value] of [...alert.facts.map((f) => [f.label, f.value] as const), ["Incident", alert.incidentUrl ?? ""] as const]) {
    if (value === "") continue
    const v = clip(value, 500)
    if (used + key.length + v.length > OPSGENIE_LIMITS.details) break
    details[key] = v
    used += key.length + v.length
  }
  const tags = ["jobmon", ...(incident === undefined ? [alert.kind === "maintenance" ? "maintenance" : "test"] : [incident.type, incident.severity, ...incident.monitorTags])]
    .map((t) => clip(t, OPSGENIE_LIMITS.tag))
    .slice(0, OPSGENIE_LIMITS.tags)
  return {
    action: "create",
    alias,
    body: {
      message: clip(alert.title, OPSGENIE_LIMITS.message),
      alias,
      description,
      priority: incident === undefined ? "P5" : OPSGENIE_PRIORITY[incident.severity] ?? "P3",
      tags: [...new Set(tags)],
      details,
      entity: clip(incident?.monitorName ?? SOURCE, OPSGENIE_LIMITS.entity),
      source: SOURCE
    }
  }
}

/** The address of a message's request. */
export const opsgenieUrl = (baseUrl: string, message: OpsgenieMessage) => {
  const base = `${baseUrl.replace(/\/+$/, "")}/v2/alerts`
  return message.action === "create" ? base : `${base}/${encodeURIComponent(message.alias)}/${message.action}?identifierType=alias`
}

/** Opsgenie's answer (https://docs.opsgenie.com/docs/response#response-codes). */
export const opsgenieVerdict = (result: SendResult) =>
  httpVerdict(result, (status, detail) =>
    status === 401 || status === 403
      ? `Opsgenie answered ${detail.slice("HTTP ".length)}: the API key was revoked, its integration disabled, or it lacks ` +
        "Create and Update access (or belongs to the other region). Paste a valid key here."
      : undefined)

const HEADERS: Record<string, string> = { "Content-Type": "application/json", "User-Agent": "jobmon-alerts/1" }

/** A conservative pace under Opsgenie's per-plan API limits; a 429 waits its Retry-After. */
export const OPSGENIE_PER_MINUTE = 120

export const opsgenieChannel = (publicUrl: string): Channel<OpsgenieDestination, OutboundRequest> => ({
  kind: "opsgenie",
  perMinute: OPSGENIE_PER_MINUTE,
  spacingMs: 0,
  retry: { maxAttempts: MAX_ATTEMPTS, delayAfterAttempt },
  incidentEvents: ["incident.opened", "incident.acknowledged", "incident.resolved"],
  messageFor: (_og, event) => {
    const alert = alertOf(event, publicUrl)
    return alert === undefined ? undefined : JSON.stringify(opsgenieMessageOf(alert))
  },
  testMessageFor: (og, test) => JSON.stringify(opsgenieMessageOf(testAlertOf(og.name, test.at), test.id)),
  pack: oneByOne,
  requestFor: (og, messages: ReadonlyArray<StoredMessage>) => {
    const message = JSON.parse(messages[0]!.body) as OpsgenieMessage
    return {
      url: opsgenieUrl(og.baseUrl, message),
      headers: HEADERS,
      secretHeaders: { Authorization: `GenieKey ${og.apiKey}` },
      body: JSON.stringify(message.body)
    }
  },
  verdictOn: opsgenieVerdict
})

export const opsgenieType: AlertChannelType<OpsgenieConfig, OpsgenieDestination> = {
  type: "opsgenie",
  config: OpsgenieConfig,
  secrets: { apiKey: { shown: "omitted" } },
  urlFields: ["baseUrl"],
  defaultName: () => "opsgenie",
  unavailable: () => undefined,
  channel: (settings) => opsgenieChannel(settings.publicUrl),
  destinationOf: ({ config, id, name }) => ({
    id,
    name,
    apiKey: config.apiKey,
    baseUrl: config.baseUrl ?? OPSGENIE_BASE_URLS[config.region ?? "us"]
  })
}
