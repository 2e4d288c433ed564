import { Schema } from "effect"
import { StoredString } from "../Domain/Text.js"
import { type Alert, alertOf, linksOf, clip, tail, testAlertOf } from "./Alert.js"
import {
  type Channel,
  httpVerdict,
  JSON_HEADERS,
  oneByOne,
  type OutboundRequest,
  type SendResult
} from "./Channel.js"
import type { AlertChannelType } from "./ChannelType.js"
import { maskChatUrl } from "./Masking.js"
import { CHAT_MAX_ATTEMPTS, chatDelayAfterAttempt } from "./RetrySchedule.js"

/**
 * Microsoft Teams, through a Workflows webhook (docs/alerts.md#microsoft-teams): Microsoft retired
 * the Office 365 connectors' incoming webhooks; a Teams channel now takes alerts through the
 * Workflows app's template "Post to a channel when a webhook request is received", whose url
 * takes a message with Adaptive Card attachments
 * (https://learn.microsoft.com/en-us/microsoftteams/platform/webhooks-and-connectors/how-to/add-incoming-webhook,
 * "Create incoming webhooks with Workflows for Microsoft Teams"):
 *
 *   {"type": "message", "attachments": [{"contentType": "application/vnd.microsoft.card.adaptive", "content": <card>}]}
 *
 * The card (https://adaptivecards.io/explorer/, version 1.4, which Teams renders on desktop, web
 * and mobile): the title, the facts as a FactSet, the output's end and the note, a subtle footer
 * (the title, output and note are RichTextBlock TextRuns, never read as markdown, so a monitor's
 * name or output cannot format itself), and Action.OpenUrl buttons to the incident and the monitor. Teams
 * takes messages of at most 28 KB: the output keeps its last 4,000 characters, names are clipped.
 *
 * Pace: the Teams connector of Power Automate allows 100 calls a minute per connection; jobmon
 * sends one request a second per channel at most (60 a minute), one alert a request. Answers:
 * 2xx (the trigger answers 202 Accepted) delivered; 429 waits its Retry-After; 5xx and no answer
 * retry; 401, 403 (a wrong or rotated signature), 404 and 410 (the flow deleted) make the channel
 * invalid; other 4xx (400: the payload refused) fail the message.
 */

export const TeamsConfig = Schema.Struct({
  url: StoredString.pipe(Schema.minLength(1), Schema.maxLength(2048)).annotations({
    description: "the Workflows webhook url (https://….logic.azure.com/workflows/… or …/powerautomate/automations/direct/…); a credential, shown masked"
  })
})
export type TeamsConfig = typeof TeamsConfig.Type

export interface TeamsDestination {
  readonly id: string
  readonly name: string
  readonly url: string
}

export const TEAMS_LIMITS = {
  /** Teams refuses messages over about 28 KB. */
  messageBytes: 28_000,
  title: 200,
  factTitle: 100,
  factValue: 500,
  output: 4000,
  note: 2000
} as const

export const ADAPTIVE_CARD_VERSION = "1.4"
export const ADAPTIVE_CARD_CONTENT_TYPE = "application/vnd.microsoft.card.adaptive"

export type CardElement =
  | {
    readonly type: "TextBlock"
    readonly text: string
    readonly wrap?: boolean
    readonly size?: string
    readonly weight?: string
    readonly color?: string
    readonly isSubtle?: boolean
    readonly spacing?: string
  }
  | { readonly type: "FactSet"; readonly facts: ReadonlyArray<{ readonly title: string; readonly value: string }> }
  | {
    readonly type: "RichTextBlock"
    readonly inlines: ReadonlyArray<{
      readonly type: "TextRun"
      readonly text: string
      readonly fontType?: string
      readonly weight?: string
      readonly size?: string
      readonly color?: string
    }>
  }

export interface AdaptiveCard {
  readonly type: "AdaptiveCard"
  readonly $schema: string
  readonly version: string
  readonly msteams: { readonly width: "Full" }
  readonly fallbackText: string
  readonly body: ReadonlyArray<CardElement>
  readonly actions?: ReadonlyArray<{ readonly type: "Action.OpenUrl"; readonly title: string; readonly url: string }>
}

export interface TeamsMessage {
  readonly type: "message"
  /** What a notification shows (Workflows passes it on; Teams itself reads the card). */
  readonly summary: string
  readonly attachments: ReadonlyArray<{ readonly contentType: typeof ADAPTIVE_CARD_CONTENT_TYPE; readonly contentUrl: null; readonly content: AdaptiveCard }>
}

/** The title's colour: attention (red) for an open incident, good (green) resolved, warning acknowledged. */
const COLOR: Record<Alert["kind"], string> = {
  opened: "Attention",
  reminder: "Attention",
  acknowledged: "Warning",
  resolved: "Good",
  maintenance: "Accent",
  test: "Accent"
}

const EMOJI: Record<Alert["kind"], string> = {
  opened: "🔴",
  reminder: "⏰",
  acknowledged: "👀",
  resolved: "✅",
  maintenance: "🛠️",
  test: "🔔"
}

/** The card for one alert (pure): within Teams' limits whatever the monitor's name or output. */
export const teamsMessageOf = (alert: Alert): TeamsMessage => {
  const body: Array<CardElement> = [
    {
      type: "RichTextBlock",
      inlines: [{ type: "TextRun", text: clip(`${EMOJI[alert.kind]} ${alert.title}`, TEAMS_LIMITS.title), size: "Large", weight: "Bolder", color: COLOR[alert.kind] }]
    }
  ]
  if (alert.text !== undefined) body.push({ type: "RichTextBlock", inlines: [{ type: "TextRun", text: alert.text }] })
  if (alert.facts.length > 0) {
    body.push({
      type: "FactSet",
      facts: alert.facts.map((f) => ({
        title: clip(f.label, TEAMS_LIMITS.factTitle),
        value: clip(f.value, TEAMS_LIMITS.factValue)
      }))
    })
  }
  if (alert.output !== undefined) {
    body.push(
      { type: "TextBlock", text: "Output (the end)", weight: "Bolder", spacing: "Medium" },
      { type: "RichTextBlock", inlines: [{ type: "TextRun", text: tail(alert.output, TEAMS_LIMITS.output), fontType: "Monospace" }] }
    )
  }
  if (alert.note !== null && alert.note !== "") {
    body.push(
      { type: "TextBlock", text: "Note", weight: "Bolder", spacing: "Medium" },
      { type: "RichTextBlock", inlines: [{ type: "TextRun", text: clip(alert.note, TEAMS_LIMITS.note) }] }
    )
  }
  body.push({ type: "TextBlock", text: `jobmon · ${alert.at}`, isSubtle: true, size: "Small", wrap: true, spacing: "Medium" })
  const links = linksOf(alert)
  const actions = links.filter(([, url]) => url !== undefined).map(([title, url]) => ({ type: "Action.OpenUrl" as const, title, url: url! }))
  const card: AdaptiveCard = {
    type: "AdaptiveCard",
    $schema: "http://adaptivecards.io/schemas/adaptive-card.json",
    version: ADAPTIVE_CARD_VERSION,
    msteams: { width: "Full" },
    fallbackText: alert.summary,
    body,
    ...(actions.length > 0 ? { actions } : {})
  }
  return {
    type: "message",
    summary: alert.summary,
    attachments: [{ contentType: ADAPTIVE_CARD_CONTENT_TYPE, contentUrl: null, content: card }]
  }
}

/** What the Workflows trigger's answer means (Logic Apps' HTTP trigger: 202 Accepted, 429 throttled). */
export const teamsVerdict = (result: SendResult) =>
  httpVerdict(result, (status, detail) =>
    status === 401 || status === 403 || status === 404 || status === 410
      ? `Teams answered ${detail.slice("HTTP ".length)}: the workflow was deleted or turned off, or its url's signature is ` +
        "wrong. Open the workflow in Teams (Workflows app), copy its url again and update it here."
      : undefined)

export const TEAMS_SPACING_MS = 1000
export const TEAMS_PER_MINUTE = 60


export const teamsChannel = (publicUrl: string): Channel<TeamsDestination, OutboundRequest> => ({
  kind: "teams",
  perMinute: TEAMS_PER_MINUTE,
  spacingMs: TEAMS_SPACING_MS,
  retry: { maxAttempts: CHAT_MAX_ATTEMPTS, delayAfterAttempt: chatDelayAfterAttempt },
  incidentEvents: ["incident.opened", "incident.acknowledged", "incident.resolved"],
  messageFor: (_teams, event) => {
    const alert = alertOf(event, publicUrl)
    return alert === undefined ? undefined : JSON.stringify(teamsMessageOf(alert))
  },
  testMessageFor: (teams, test) => JSON.stringify(teamsMessageOf(testAlertOf(teams.name, test.at))),
  pack: oneByOne,
  requestFor: (teams, messages) => ({ url: teams.url, headers: JSON_HEADERS, body: messages[0]!.body }),
  verdictOn: teamsVerdict
})

export const teamsType: AlertChannelType<TeamsConfig, TeamsDestination> = {
  type: "teams",
  config: TeamsConfig,
  secrets: { url: { shown: "masked", mask: maskChatUrl } },
  urlFields: ["url"],
  defaultName: () => "teams",
  unavailable: () => undefined,
  channel: (settings) => teamsChannel(settings.publicUrl),
  destinationOf: ({ config, id, name }) => ({ id, name, url: config.url })
}
