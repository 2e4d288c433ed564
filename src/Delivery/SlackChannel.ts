import { Schema } from "effect"
import { StoredString } from "../Domain/Text.js"
import { type Alert, alertOf, linksOf, clip, tail, testAlertOf } from "./Alert.js"
import {
  type Channel,
  httpVerdict,
  JSON_HEADERS,
  type OutboundRequest,
  type SendResult,
  type StoredMessage
} from "./Channel.js"
import type { AlertChannelType } from "./ChannelType.js"
import { maskChatUrl } from "./Masking.js"
import { CHAT_MAX_ATTEMPTS, chatDelayAfterAttempt } from "./RetrySchedule.js"

/**
 * Slack, through an incoming webhook (docs/alerts.md#slack): a Block Kit message per alert (a
 * header, the facts as fields, the output's end in a code block, the note, buttons to the incident
 * and the monitor, the time), within Slack's limits (https://api.slack.com/reference/block-kit):
 * at most 50 blocks a message, 150 characters in a header, 3,000 in a section's text, 10 fields
 * of 2,000. Messages that wait together are packed into one (each alert's blocks, a divider between,
 * 50 blocks at most). Slack takes about one message a second per webhook: one request a second, 60
 * a minute. Answers: 200 `ok` delivered; 429 waits its Retry-After; 5xx and no answer retry; 404,
 * 410, 401, and 403 `invalid_token`/`no_service`/`channel_not_found`/… make the channel invalid;
 * other answers (400 `invalid_payload`, 403 `action_prohibited`) fail the message.
 */

export const SlackConfig = Schema.Struct({
  url: StoredString.pipe(Schema.minLength(1), Schema.maxLength(2048)).annotations({
    description: "the incoming webhook url (https://hooks.slack.com/services/…); a credential, shown masked"
  }),
  mention: Schema.optional(StoredString.pipe(Schema.minLength(1), Schema.maxLength(200))).annotations({
    description: "put above each alert, e.g. <!here>, <!channel>, <@U012AB3CD> or <!subteam^S012AB3CD>"
  })
})
export type SlackConfig = typeof SlackConfig.Type

export interface SlackDestination {
  readonly id: string
  readonly name: string
  readonly url: string
  readonly mention: string | undefined
}

// ---- Slack's limits (Block Kit reference) -------------------------------------------------------

export const SLACK_LIMITS = {
  blocks: 50,
  headerText: 150,
  sectionText: 3000,
  fields: 10,
  fieldText: 2000,
  buttonText: 75,
  url: 3000,
  contextElements: 10,
  /** Slack cuts the top-level text beyond 40,000 characters; a notification shows far less. */
  text: 3000
} as const

type Text = { readonly type: "plain_text" | "mrkdwn"; readonly text: string; readonly emoji?: boolean }
export type SlackBlock =
  | { readonly type: "header"; readonly text: Text }
  | { readonly type: "section"; readonly block_id?: string; readonly text?: Text; readonly fields?: ReadonlyArray<Text> }
  | {
    readonly type: "actions"
    readonly elements: ReadonlyArray<{ readonly type: "button"; readonly text: Text; readonly url: string }>
  }
  | { readonly type: "context"; readonly elements: ReadonlyArray<Text> }
  | { readonly type: "divider" }

export interface SlackMessage {
  readonly text: string
  readonly blocks: ReadonlyArray<SlackBlock>
}

const MENTION_BLOCK = "mention"

/** Slack's mrkdwn: &, < and > are control characters. */
export const escapeMrkdwn = (text: string) => text.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;")

/** The end of an output, escaped, that fits `room` characters with its code fence. */
const codeBlock = (label: string, output: string, room: number): string => {
  const open = `*${label}*\n\`\`\`\n`
  const close = "\n```"
  const safe = output.replace(/```/g, "`\u200b``")
  let take = Math.min(safe.length, room - open.length - close.length)
  for (;;) {
    const body = escapeMrkdwn(tail(safe, take))
    const excess = open.length + body.length + close.length - room
    if (excess <= 0 || take <= 1) return open + body + close
    // escaping makes one character at most five (&amp;)
    take -= Math.max(1, Math.ceil(excess / 5))
  }
}

const EMOJI: Record<Alert["kind"], string> = {
  opened: ":red_circle:",
  reminder: ":alarm_clock:",
  acknowledged: ":eyes:",
  resolved: ":white_check_mark:",
  maintenance: ":hammer_and_wrench:",
  test: ":bell:"
}

/** The message for one alert (pure): within Slack's limits whatever the monitor's name or output. */
export const slackMessageOf = (alert: Alert, mention: string | undefined): SlackMessage => {
  const blocks: Array<SlackBlock> = []
  if (mention !== undefined) blocks.push({ type: "section", block_id: MENTION_BLOCK, text: { type: "mrkdwn", text: clip(mention, SLACK_LIMITS.sectionText) } })
  blocks.push({
    type: "header",
    text: { type: "plain_text", text: clip(`${EMOJI[alert.kind]} ${alert.title}`, SLACK_LIMITS.headerText), emoji: true }
  })
  if (alert.text !== undefined) blocks.push({ type: "section", text: { type: "mrkdwn", text: escapeMrkdwn(alert.text) } })
  if (alert.facts.length > 0) {
    blocks.push({
      type: "section",
      fields: alert.facts.slice(0, SLACK_LIMITS.fields).map((fact) => ({
        type: "mrkdwn",
        text: clip(`*${escapeMrkdwn(fact.label)}*\n${escapeMrkdwn(fact.value)}`, SLACK_LIMITS.fieldText)
      }))
    })
  }
  if (alert.output !== undefined) {
    blocks.push({ type: "section", text: { type: "mrkdwn", text: codeBlock("Output", alert.output, SLACK_LIMITS.sectionText) } })
  }
  if (alert.note !== null && alert.note !== "") {
    blocks.push({ type: "section", text: { type: "mrkdwn", text: clip(`*Note*\n${escapeMrkdwn(alert.note)}`, SLACK_LIMITS.sectionText) } })
  }
  const links = linksOf(alert)
  const buttons = links.filter(([, url]) => url !== undefined && url.length <= SLACK_LIMITS.url).map(([label, url]) => ({
    type: "button" as const,
    text: { type: "plain_text" as const, text: label },
    url: url!
  }))
  if (buttons.length > 0) blocks.push({ type: "actions", elements: buttons })
  blocks.push({ type: "context", elements: [{ type: "mrkdwn", text: `jobmon · ${alert.at}` }] })
  return { text: clip(alert.summary, SLACK_LIMITS.text), blocks }
}

/**
 * Several messages as one (a burst that waited): their blocks in order with a divider between,
 * the first one's mention only, the texts on lines of their own. A single message is left as it is.
 */
export const mergeSlackMessages = (messages: ReadonlyArray<SlackMessage>): SlackMessage => {
  if (messages.length === 1) return messages[0]!
  const blocks: Array<SlackBlock> = []
  for (const [i, message] of messages.entries()) {
    if (i > 0) blocks.push({ type: "divider" })
    // the mention once, at the top
    for (const block of message.blocks) if (i === 0 || !isMention(block)) blocks.push(block)
  }
  return { text: clip(messages.map((m) => m.text).join("\n"), SLACK_LIMITS.text), blocks }
}

const isMention = (block: SlackBlock) => block.type === "section" && block.block_id === MENTION_BLOCK

/** Blocks a message adds to a merged one: its own (less the mention, which comes once) and a divider. */
const blocksAdded = (message: SlackMessage, first: boolean) =>
  first ? message.blocks.length : message.blocks.filter((b) => !isMention(b)).length + 1

/** Waiting messages, oldest first, in groups of at most 50 blocks once merged; each in exactly one, in order. */
export const packSlackMessages = <M extends StoredMessage>(messages: ReadonlyArray<M>): Array<Array<M>> => {
  const groups: Array<Array<M>> = []
  let current: Array<M> = []
  let blocks = 0
  for (const message of messages) {
    const parsed = JSON.parse(message.body) as SlackMessage
    if (current.length > 0 && blocks + blocksAdded(parsed, false) > SLACK_LIMITS.blocks) {
      groups.push(current)
      current = []
      blocks = 0
    }
    blocks += blocksAdded(parsed, current.length === 0)
    current.push(message)
  }
  if (current.length > 0) groups.push(current)
  return groups
}

/** Slack's error codes that mean the webhook will never work again. */
const GONE = ["invalid_token", "no_service", "channel_not_found", "channel_is_archived", "team_disabled", "no_team", "no_service_id"]

/** What Slack's answer means (https://api.slack.com/messaging/webhooks#handling_errors). */
export const slackVerdict = (result: SendResult) =>
  httpVerdict(result, (status, detail) => {
    const code = (result.responseText ?? "").trim()
    if (status === 404 || status === 410 || status === 401 || (status === 403 && GONE.some((g) => code.startsWith(g)))) {
      return `Slack answered ${detail.slice("HTTP ".length)}: the incoming webhook was removed, its app uninstalled or its channel ` +
        "archived. Add a new incoming webhook in Slack and update the url here."
    }
    return undefined
  })

/** Slack's pace: about one message a second per webhook (https://api.slack.com/apis/rate-limits). */
export const SLACK_SPACING_MS = 1000
export const SLACK_PER_MINUTE = 60

export const slackChannel = (publicUrl: string): Channel<SlackDestination, OutboundRequest> => ({
  kind: "slack",
  perMinute: SLACK_PER_MINUTE,
  spacingMs: SLACK_SPACING_MS,
  retry: { maxAttempts: CHAT_MAX_ATTEMPTS, delayAfterAttempt: chatDelayAfterAttempt },
  incidentEvents: ["incident.opened", "incident.acknowledged", "incident.resolved"],
  messageFor: (slack, event) => {
    const alert = alertOf(event, publicUrl)
    return alert === undefined ? undefined : JSON.stringify(slackMessageOf(alert, slack.mention))
  },
  testMessageFor: (slack, test) => JSON.stringify(slackMessageOf(testAlertOf(slack.name, test.at), slack.mention)),
  pack: packSlackMessages,
  requestFor: (slack, messages) => ({
    url: slack.url,
    headers: JSON_HEADERS,
    body: JSON.stringify(mergeSlackMessages(messages.map((m) => JSON.parse(m.body) as SlackMessage)))
  }),
  verdictOn: slackVerdict
})

export const slackType: AlertChannelType<SlackConfig, SlackDestination> = {
  type: "slack",
  config: SlackConfig,
  secrets: { url: { shown: "masked", mask: maskChatUrl } },
  urlFields: ["url"],
  defaultName: () => "slack",
  unavailable: () => undefined,
  channel: (settings) => slackChannel(settings.publicUrl),
  destinationOf: ({ config, id, name }) => ({ id, name, url: config.url, mention: config.mention })
}
