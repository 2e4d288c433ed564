import { Schema } from "effect"
import { StoredString } from "../Domain/Text.js"
import { type Alert, alertOf, clip, tail, testAlertOf } from "./Alert.js"
import {
  type Channel,
  httpVerdict,
  JSON_HEADERS,
  oneByOne,
  type OutboundRequest,
  type SendResult
} from "./Channel.js"
import type { AlertChannelType } from "./ChannelType.js"
import { CHAT_MAX_ATTEMPTS, chatDelayAfterAttempt } from "./RetrySchedule.js"

/**
 * ntfy (docs/alerts.md#ntfy), on the public https://ntfy.sh or a self-hosted server: each alert is
 * published as JSON to the server's root (https://docs.ntfy.sh/publish/#publish-as-json):
 * `{topic, title, message, priority, tags, click, actions}`, with `Authorization: Bearer <token>`
 * when the channel has an access token (https://docs.ntfy.sh/publish/#access-tokens; sent, never
 * recorded). Priority and tags by severity and event (https://docs.ntfy.sh/publish/#message-priority,
 * #tags-emojis): an open incident HIGH is 5 (urgent) with 🚨, MEDIUM 4 with ⚠️, LOW 3; a reminder
 * the same with ⏰; acknowledged 3 with 👀; resolved 2 with ✅. `click` opens the incident, a `view`
 * action the monitor (#click-action, #action-buttons). The message stays under ntfy's 4,096 bytes
 * (a longer one would become an attachment, #limitations): the output keeps its end.
 *
 * Pace: ntfy limits each client to a burst of 60 requests, then one per 5 seconds (the server's
 * `visitor-request-limit-*`, the same on ntfy.sh, #limitations): jobmon sends 12 a minute per
 * channel at most, one a second. Answers: 200 delivered; 429 waits its Retry-After, or 5 seconds;
 * 5xx and no answer retry; 401 and 403 (a wrong or revoked token, a topic reserved by someone
 * else) and 404 (no ntfy server at that url) make the channel invalid; other 4xx (400, 413) fail
 * the message.
 */

/** ntfy's topic names: letters, digits, `-` and `_`, at most 64 (https://docs.ntfy.sh/publish/). */
const TOPIC = /^[-_A-Za-z0-9]{1,64}$/

export const NTFY_PUBLIC_SERVER = "https://ntfy.sh"

export const NtfyConfig = Schema.Struct({
  server: Schema.optionalWith(
    StoredString.pipe(Schema.minLength(1), Schema.maxLength(2048)).annotations({
      description: "the ntfy server's url (default https://ntfy.sh; a self-hosted one, e.g. https://ntfy.example.com)"
    }),
    { default: () => NTFY_PUBLIC_SERVER }
  ),
  topic: StoredString.pipe(Schema.pattern(TOPIC, { message: () => "letters, digits, - and _, 1 to 64" })).annotations({
    description: "the topic to publish to (letters, digits, - and _; at most 64)"
  }),
  token: Schema.optional(StoredString.pipe(Schema.minLength(1), Schema.maxLength(200))).annotations({
    description: "an access token (tk_…), sent as Authorization: Bearer; a credential, never shown"
  })
})
export type NtfyConfig = typeof NtfyConfig.Type

export interface NtfyDestination {
  readonly id: string
  readonly name: string
  readonly server: string
  readonly topic: string
  readonly token: string | undefined
}

export const NTFY_LIMITS = {
  /** ntfy turns a longer message into an attachment (or refuses it when attachments are off). */
  messageBytes: 4096,
  title: 250
} as const

export interface NtfyMessage {
  readonly topic: string
  readonly title: string
  readonly message: string
  /** 1 (min) to 5 (max/urgent). */
  readonly priority: 1 | 2 | 3 | 4 | 5
  readonly tags: ReadonlyArray<string>
  readonly click?: string
  readonly actions?: ReadonlyArray<{ readonly action: "view"; readonly label: string; readonly url: string }>
}

const byteLength = (text: string) => Buffer.byteLength(text, "utf8")

/** Priority and tags (an emoji shortcode first, then the incident's type) for an alert. */
export const ntfyPriorityOf = (alert: Alert): { priority: NtfyMessage["priority"]; tags: Array<string> } => {
  const severity = alert.incident?.severity
  const type = alert.incident?.type
  const urgent = severity === "HIGH" ? 5 : severity === "MEDIUM" ? 4 : 3
  const emoji = severity === "HIGH" ? "rotating_light" : severity === "MEDIUM" ? "warning" : "information_source"
  const typeTag = type === undefined ? [] : [type.toLowerCase()]
  switch (alert.kind) {
    case "opened":
      return { priority: urgent, tags: [emoji, ...typeTag] }
    case "reminder":
      return { priority: urgent, tags: ["alarm_clock", ...typeTag] }
    case "acknowledged":
      return { priority: 3, tags: ["eyes", ...typeTag] }
    case "resolved":
      return { priority: 2, tags: ["white_check_mark", ...typeTag] }
    case "maintenance":
      return { priority: alert.maintenance?.notice === "ended" ? 2 : 3, tags: ["hammer_and_wrench", "maintenance"] }
    case "test":
      return { priority: 3, tags: ["bell"] }
  }
}

/** The message text: the facts, the note, the output's end; within 4,096 bytes (the output cut first). */
const textOf = (alert: Alert): string => {
  const head = [
    ...(alert.text === undefined ? [] : [alert.text]),
    ...alert.facts.map((f) => `${f.label}: ${f.value}`),
    ...(alert.note !== null && alert.note !== "" ? [`Note: ${alert.note}`] : [])
  ].join("\n")
  const fitted = (text: string) => {
    if (byteLength(text) <= NTFY_LIMITS.messageBytes) return text
    // cut by characters until the bytes fit (a character is at most 4 bytes)
    let room = text.length
    let out = text
    while (byteLength(out) > NTFY_LIMITS.messageBytes) {
      room -= Math.max(1, Math.ceil((byteLength(out) - NTFY_LIMITS.messageBytes) / 4))
      out = clip(text, room)
    }
    return out
  }
  const base = fitted(head === "" ? alert.title : head)
  if (alert.output === undefined) return base
  const label = "\n\nOutput (the end):\n"
  const room = NTFY_LIMITS.messageBytes - byteLength(base) - byteLength(label)
  if (room < 40) return base
  let take = Math.min(alert.output.length, room)
  let out = tail(alert.output, take)
  while (byteLength(out) > room && take > 1) {
    take -= Math.max(1, Math.ceil((byteLength(out) - room) / 4))
    out = tail(alert.output, take)
  }
  return base + label + out
}

/** The JSON published for one alert (pure): within ntfy's limits whatever the name or output. */
export const ntfyMessageOf = (alert: Alert, topic: string): NtfyMessage => {
  const { priority, tags } = ntfyPriorityOf(alert)
  return {
    topic,
    title: clip(alert.summary, NTFY_LIMITS.title),
    message: textOf(alert),
    priority,
    tags,
    ...(alert.incidentUrl === undefined ? {} : { click: alert.incidentUrl }),
    ...(alert.maintenanceUrl === undefined ? {} : { click: alert.maintenanceUrl }),
    ...(alert.monitorUrl === undefined ? {} : { actions: [{ action: "view" as const, label: "View monitor", url: alert.monitorUrl }] })
  }
}

/** What ntfy answered: 429 with its code 42901 (limit reached), 401/403 (40101, 40301), … */
export const ntfyVerdict = (result: SendResult) =>
  httpVerdict(result, (status, detail) => {
    if (status === 401 || status === 403) {
      return `ntfy answered ${detail.slice("HTTP ".length)}: the access token is wrong or revoked, or it may not publish to ` +
        "this topic (reserved by another user). Make a token that may write to the topic (ntfy token add, or the web " +
        "app's Account page) and update it here."
    }
    if (status === 404 || status === 410) {
      return `ntfy answered ${detail.slice("HTTP ".length)}: there is no ntfy server at this url. Check the server url ` +
        "(its root, e.g. https://ntfy.example.com) and update it here."
    }
    return undefined
  }, NTFY_REPLENISH_SECONDS)

/** ntfy gives a client one request back every 5 seconds once its burst is used up. */
export const NTFY_REPLENISH_SECONDS = 5
export const NTFY_PER_MINUTE = 12
export const NTFY_SPACING_MS = 1000

/** The server's root, where JSON is published. */
export const ntfyPublishUrl = (server: string) => `${server.replace(/\/+$/, "")}/`


export const ntfyChannel = (publicUrl: string): Channel<NtfyDestination, OutboundRequest> => ({
  kind: "ntfy",
  perMinute: NTFY_PER_MINUTE,
  spacingMs: NTFY_SPACING_MS,
  retry: { maxAttempts: CHAT_MAX_ATTEMPTS, delayAfterAttempt: chatDelayAfterAttempt },
  incidentEvents: ["incident.opened", "incident.acknowledged", "incident.resolved"],
  messageFor: (ntfy, event) => {
    const alert = alertOf(event, publicUrl)
    return alert === undefined ? undefined : JSON.stringify(ntfyMessageOf(alert, ntfy.topic))
  },
  testMessageFor: (ntfy, test) => JSON.stringify(ntfyMessageOf(testAlertOf(ntfy.name, test.at), ntfy.topic)),
  pack: oneByOne,
  requestFor: (ntfy, messages) => ({
    url: ntfyPublishUrl(ntfy.server),
    headers: JSON_HEADERS,
    ...(ntfy.token === undefined ? {} : { secretHeaders: { Authorization: `Bearer ${ntfy.token}` } }),
    // the topic as the channel has it now (a PATCH may have changed it since the message was made)
    body: JSON.stringify({ ...(JSON.parse(messages[0]!.body) as NtfyMessage), topic: ntfy.topic })
  }),
  verdictOn: ntfyVerdict
})

export const ntfyType: AlertChannelType<NtfyConfig, NtfyDestination> = {
  type: "ntfy",
  config: NtfyConfig,
  secrets: { token: { shown: "omitted" } },
  urlFields: ["server"],
  defaultName: (config) => `ntfy ${config.topic}`,
  unavailable: () => undefined,
  channel: (settings) => ntfyChannel(settings.publicUrl),
  destinationOf: ({ config, id, name }) => ({ id, name, server: config.server, topic: config.topic, token: config.token })
}
