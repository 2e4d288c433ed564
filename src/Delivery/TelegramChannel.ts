import { Schema } from "effect"
import { StoredString } from "../Domain/Text.js"
import { type Alert, alertOf, linksOf, clip, tail, testAlertOf } from "./Alert.js"
import {
  type Channel,
  DELIVERED,
  describeAnswer,
  invalid,
  JSON_HEADERS,
  type OutboundRequest,
  rejected,
  retryLater,
  type SendResult,
  type StoredMessage
} from "./Channel.js"
import type { AlertChannelType } from "./ChannelType.js"
import { CHAT_MAX_ATTEMPTS, chatDelayAfterAttempt } from "./RetrySchedule.js"

/**
 * Telegram, through a bot (docs/alerts.md#telegram): the Bot API's `sendMessage`
 * (https://core.telegram.org/bots/api#sendmessage) to one chat, `parse_mode: "HTML"`
 * (https://core.telegram.org/bots/api#html-style: `<`, `>` and `&` outside tags written as
 * entities), link previews off, at most 4,096 characters. Messages that wait together are packed
 * into one (4,096 characters at most). Telegram takes about one message a second per chat and 20 a
 * minute per group (https://core.telegram.org/bots/faq#my-bot-is-hitting-limits-how-do-i-avoid-this):
 * one request a second, 20 a minute. Answers (https://core.telegram.org/bots/api#making-requests:
 * `{ok, error_code, description, parameters}`): 2xx delivered; 429 waits `parameters.retry_after`;
 * 5xx and no answer retry; 401 (token revoked), 403 (bot blocked, kicked), 404 (no such bot), 400
 * `chat not found` / group upgraded make the channel invalid; other 400s fail the message.
 *
 * The bot token is in the request's path (`/bot<token>/sendMessage`): it is never shown by the API
 * (write-only, omitted), never recorded with an attempt (attempts keep the headers, not the url),
 * and never in an answer's detail (the verdict says Telegram's description, not the url).
 */

/** A bot token as @BotFather gives it: the bot's id, a colon, the secret. */
const TOKEN = /^\d{1,20}:[A-Za-z0-9_-]{20,100}$/
/** A chat id: a number (groups and channels negative, `-100…` for supergroups) or a public `@channelusername`. */
const CHAT_ID = /^(-?\d{1,20}|@[A-Za-z][A-Za-z0-9_]{3,31})$/

export const DEFAULT_TELEGRAM_BASE_URL = "https://api.telegram.org"

export const TelegramConfig = Schema.Struct({
  botToken: StoredString.pipe(
    Schema.filter((value) => TOKEN.test(value) || "must be a bot token as @BotFather gives it, such as 123456789:AAE…")
  ).annotations({ description: "the bot's token from @BotFather (123456789:AAE…); a secret, never shown back" }),
  chatId: Schema.Union(
    Schema.Int,
    StoredString.pipe(
      Schema.filter((value) => CHAT_ID.test(value) || "must be a chat id such as -1001234567890, or @channelusername")
    )
  ).annotations({ description: "the chat to post to: a number such as -1001234567890, or @channelusername" }),
  baseUrl: Schema.optional(
    StoredString.pipe(
      Schema.maxLength(2048),
      Schema.filter((value) => /^https?:\/\/[^/?#\s]+(\/[^?#\s]*)?$/.test(value) || "must be an http(s) url such as https://api.telegram.org")
    )
  ).annotations({ description: `the Bot API server (a local Bot API server); default ${DEFAULT_TELEGRAM_BASE_URL}` })
})
export type TelegramConfig = typeof TelegramConfig.Type

export interface TelegramDestination {
  readonly id: string
  readonly name: string
  readonly botToken: string
  readonly chatId: string | number
  readonly baseUrl: string
}

/** Telegram's limit on a message's text (after entities are parsed; jobmon counts the HTML, which is longer). */
export const TELEGRAM_TEXT_LIMIT = 4096

/** Telegram's HTML mode: `<`, `>` and `&` outside tags as entities (and `"` inside an attribute). */
export const escapeTelegramHtml = (text: string) =>
  text.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;").replace(/"/g, "&quot;")

const EMOJI: Record<Alert["kind"], string> = {
  opened: "\u{1F534}",
  reminder: "\u23F0",
  acknowledged: "\u{1F440}",
  resolved: "\u2705",
  maintenance: "\u{1F6E0}\uFE0F",
  test: "\u{1F514}"
}

/** Room kept for one fact's value, the title and the note, so the output has its share. */
const FACT_CHARS = 300
const TITLE_CHARS = 300
const NOTE_CHARS = 1000
/** Below this much room, the output is left out rather than shown as a stub. */
const MIN_OUTPUT_CHARS = 80

/** The end of an output, escaped, in a `<pre>` that fits `room` characters. */
const preBlock = (output: string, room: number): string | undefined => {
  const open = "<b>Output</b>\n<pre>"
  const close = "</pre>"
  let take = Math.min(output.length, room - open.length - close.length)
  if (take < MIN_OUTPUT_CHARS && take < output.length) return undefined
  for (;;) {
    const body = escapeTelegramHtml(tail(output, take))
    const excess = open.length + body.length + close.length - room
    if (excess <= 0) return open + body + close
    if (take <= MIN_OUTPUT_CHARS) return undefined
    // escaping makes one character at most six (&quot;)
    take -= Math.max(1, Math.ceil(excess / 6))
  }
}

/** The text of one alert (pure): Telegram HTML, at most 4,096 characters whatever the name or output. */
export const telegramTextOf = (alert: Alert): string => {
  const lines: Array<string> = [`${EMOJI[alert.kind]} <b>${escapeTelegramHtml(clip(alert.summary, TITLE_CHARS))}</b>`]
  if (alert.text !== undefined) lines.push(escapeTelegramHtml(alert.text))
  for (const fact of alert.facts) lines.push(`<b>${escapeTelegramHtml(fact.label)}:</b> ${escapeTelegramHtml(clip(fact.value, FACT_CHARS))}`)
  if (alert.note !== null && alert.note !== "") lines.push(`<b>Note:</b> ${escapeTelegramHtml(clip(alert.note, NOTE_CHARS))}`)
  const links = linksOf(alert)
  const anchors = links.filter(([, url]) => url !== undefined).map(([label, url]) => `<a href="${escapeTelegramHtml(url!)}">${label}</a>`)
  const footer = [...(anchors.length > 0 ? [anchors.join(" · ")] : []), `<i>jobmon · ${escapeTelegramHtml(alert.at)}</i>`]
  const head = lines.join("\n")
  const end = footer.join("\n")
  if (alert.output !== undefined) {
    const room = TELEGRAM_TEXT_LIMIT - head.length - end.length - 2
    const pre = preBlock(alert.output, room)
    if (pre !== undefined) return `${head}\n${pre}\n${end}`
  }
  return `${head}\n${end}`
}

/** Between two alerts packed into one message. */
const SEPARATOR = "\n\n"

/** Waiting messages, oldest first, in groups whose texts joined fit 4,096 characters; each in exactly one, in order. */
export const packTelegramMessages = <M extends StoredMessage>(messages: ReadonlyArray<M>): Array<Array<M>> => {
  const groups: Array<Array<M>> = []
  let current: Array<M> = []
  let length = 0
  for (const message of messages) {
    const added = message.body.length + (current.length === 0 ? 0 : SEPARATOR.length)
    if (current.length > 0 && length + added > TELEGRAM_TEXT_LIMIT) {
      groups.push(current)
      current = []
      length = 0
    }
    length += current.length === 0 ? message.body.length : added
    current.push(message)
  }
  if (current.length > 0) groups.push(current)
  return groups
}

/** The body of `sendMessage` for texts packed together. */
export const telegramRequestBody = (chatId: string | number, texts: ReadonlyArray<string>) =>
  JSON.stringify({ chat_id: chatId, text: texts.join(SEPARATOR), parse_mode: "HTML", disable_web_page_preview: true })

/** Telegram's answer body: `{ok, error_code?, description?, parameters?: {retry_after?, migrate_to_chat_id?}}`. */
interface TelegramAnswer {
  readonly ok?: unknown
  readonly description?: unknown
  readonly parameters?: { readonly retry_after?: unknown; readonly migrate_to_chat_id?: unknown }
}

const parseAnswer = (text: string | undefined): TelegramAnswer | undefined => {
  try {
    const parsed = JSON.parse(text ?? "")
    return typeof parsed === "object" && parsed !== null ? parsed as TelegramAnswer : undefined
  } catch {
    return undefined
  }
}

/** 400 descriptions that mean the chat will never take this bot's messages as configured. */
const CHAT_GONE = [/chat not found/i, /group chat was upgraded/i, /group chat was deleted/i, /chat_id is empty/i, /not enough rights/i, /have no rights/i]

/** What Telegram's answer means (https://core.telegram.org/bots/api#making-requests). */
export const telegramVerdict = (result: SendResult) => {
  const { outcome } = result
  if (outcome._tag === "Refused") return rejected(describeAnswer(result))
  if (outcome._tag === "NoAnswer") return retryLater(undefined, describeAnswer(result))
  const status = outcome.status
  if (status >= 200 && status < 300) return DELIVERED
  const answer = parseAnswer(result.responseText)
  const description = typeof answer?.description === "string" ? clip(answer.description.replace(/\s+/g, " ").trim(), 200) : undefined
  const detail = description === undefined ? describeAnswer(result) : `HTTP ${status}: ${description}`
  if (status === 429) {
    const after = answer?.parameters?.retry_after
    const seconds = typeof after === "number" && Number.isFinite(after) && after >= 0 ? after : result.retryAfterSeconds
    return retryLater(seconds === undefined ? undefined : seconds * 1000, detail)
  }
  if (status >= 500) return retryLater(undefined, detail)
  const said = description ?? `HTTP ${status}`
  if (status === 401 || status === 404) {
    return invalid(`Telegram answered ${status} ${said}: the bot token was revoked or is wrong. Get the token from @BotFather (/token) and update it here.`, detail)
  }
  if (status === 403) {
    return invalid(`Telegram answered ${status} ${said}: the bot cannot post to this chat (blocked, removed from the group or channel). Add the bot to the chat again, then edit this channel.`, detail)
  }
  if (status === 400 && description !== undefined && CHAT_GONE.some((gone) => gone.test(description))) {
    const moved = answer?.parameters?.migrate_to_chat_id
    const hint = typeof moved === "number" ? ` The group is now chat ${moved}: set chatId to it.` : " Check the chat id and that the bot is a member of the chat."
    return invalid(`Telegram answered ${status} ${said}.${hint}`, detail)
  }
  return rejected(detail)
}

/** Telegram's pace: about one message a second per chat, 20 a minute per group. */
export const TELEGRAM_SPACING_MS = 1000
export const TELEGRAM_PER_MINUTE = 20

/** Where `sendMessage` is: the token is in the path (the reason the url is never recorded nor shown). */
export const sendMessageUrl = (baseUrl: string, botToken: string) => `${baseUrl.replace(/\/+$/, "")}/bot${botToken}/sendMessage`

export const telegramChannel = (publicUrl: string): Channel<TelegramDestination, OutboundRequest> => ({
  kind: "telegram",
  perMinute: TELEGRAM_PER_MINUTE,
  spacingMs: TELEGRAM_SPACING_MS,
  retry: { maxAttempts: CHAT_MAX_ATTEMPTS, delayAfterAttempt: chatDelayAfterAttempt },
  incidentEvents: ["incident.opened", "incident.acknowledged", "incident.resolved"],
  messageFor: (_telegram, event) => {
    const alert = alertOf(event, publicUrl)
    return alert === undefined ? undefined : telegramTextOf(alert)
  },
  testMessageFor: (telegram, test) => telegramTextOf(testAlertOf(telegram.name, test.at)),
  pack: packTelegramMessages,
  requestFor: (telegram, messages) => ({
    url: sendMessageUrl(telegram.baseUrl, telegram.botToken),
    headers: JSON_HEADERS,
    body: telegramRequestBody(telegram.chatId, messages.map((m) => m.body))
  }),
  verdictOn: telegramVerdict
})

export const telegramType: AlertChannelType<TelegramConfig, TelegramDestination> = {
  type: "telegram",
  config: TelegramConfig,
  secrets: { botToken: { shown: "omitted" } },
  urlFields: ["baseUrl"],
  defaultName: (config) => `telegram ${config.chatId}`,
  unavailable: () => undefined,
  channel: (settings) => telegramChannel(settings.publicUrl),
  destinationOf: ({ config, id, name }) => ({
    id,
    name,
    botToken: config.botToken,
    chatId: config.chatId,
    baseUrl: config.baseUrl ?? DEFAULT_TELEGRAM_BASE_URL
  })
}
