import {
  type APIActionRowComponent,
  type APIButtonComponentWithURL,
  type APIEmbed,
  ButtonStyle,
  ComponentType,
  type RESTPostAPIWebhookWithTokenJSONBody
} from "discord-api-types/v10"

/**
 * The chat alert message (interface spec, Chat alert message shape): one embed per incident, two
 * link buttons, an optional role mention in `content`. Pure: no Effect services.
 */

export type ChatIncidentType = "FAIL" | "MISSED" | "LATE" | "ANOMALY" | "RESOLVED"

export const COLORS: Record<ChatIncidentType, number> = {
  FAIL: 15548997,
  MISSED: 15877410,
  LATE: 16705372,
  ANOMALY: 5793522,
  RESOLVED: 5763719
}

/** Discord's limit on a field value. */
export const FIELD_VALUE_LIMIT = 1024
const FENCE_OPEN = "```\n"
const FENCE_CLOSE = "\n```"
const ELLIPSIS = "…"

export interface ChatIncident {
  readonly id: string
  /** The incident's own type, or RESOLVED for the resolution message. */
  readonly type: ChatIncidentType
  readonly status: string
  readonly severity: string
  readonly monitorId: string
  readonly monitorName: string
  readonly details: Record<string, unknown>
  /** ISO 8601: when it opened, or resolved for RESOLVED. */
  readonly at: string
}

const dash = "—"

export const formatDuration = (ms: unknown): string => {
  if (typeof ms !== "number" || !Number.isFinite(ms)) return dash
  if (ms < 1000) return `${Math.round(ms)} ms`
  const s = ms / 1000
  if (s < 60) return `${s.toFixed(1)} s`
  const m = Math.floor(s / 60)
  const rest = Math.round(s - m * 60)
  if (m < 60) return `${m}m ${rest}s`
  return `${Math.floor(m / 60)}h ${m % 60}m`
}

/**
 * The output in a code block that fits the field limit: too long, it loses its beginning (the end
 * of an output says most about a failure), marked with an ellipsis.
 */
export const errorOutputBlock = (output: string): string => {
  const safe = output.replace(/```/g, "`\u200b``")
  const room = FIELD_VALUE_LIMIT - FENCE_OPEN.length - FENCE_CLOSE.length
  const body = safe.length <= room ? safe : ELLIPSIS + safe.slice(safe.length - (room - ELLIPSIS.length))
  return FENCE_OPEN + body + FENCE_CLOSE
}

export const embedOf = (incident: ChatIncident): APIEmbed => {
  const d = incident.details
  const exitCode = typeof d["exitCode"] === "number" ? String(d["exitCode"]) : dash
  const fields: NonNullable<APIEmbed["fields"]> = [
    { name: "Monitor", value: incident.monitorName.slice(0, FIELD_VALUE_LIMIT) || dash, inline: true },
    { name: "Status", value: incident.status, inline: true },
    { name: "Severity", value: incident.severity, inline: true },
    { name: "Exit Code", value: exitCode, inline: true },
    { name: "Duration", value: formatDuration(d["durationMs"]), inline: true },
    { name: "Expected", value: formatDuration(d["expectedDurationMs"]), inline: true }
  ]
  if (typeof d["output"] === "string" && d["output"] !== "") {
    fields.push({ name: "Error Output", value: errorOutputBlock(d["output"]), inline: false })
  }
  return {
    title: `${incident.type}: ${incident.monitorName}`.slice(0, 256),
    color: COLORS[incident.type],
    fields,
    timestamp: incident.at,
    footer: { text: "jobmon" }
  }
}

export const buttonsOf = (publicUrl: string, incidentId: string, monitorId: string): APIActionRowComponent<APIButtonComponentWithURL> => ({
  type: ComponentType.ActionRow,
  components: [
    { type: ComponentType.Button, style: ButtonStyle.Link, label: "View incident", url: `${publicUrl}/incidents/${incidentId}` },
    { type: ComponentType.Button, style: ButtonStyle.Link, label: "View monitor", url: `${publicUrl}/monitors/${monitorId}` }
  ]
})

export const messageOf = (publicUrl: string, incident: ChatIncident, mention: string | null): RESTPostAPIWebhookWithTokenJSONBody => ({
  ...(mention === null ? {} : { content: mention }),
  embeds: [embedOf(incident)],
  components: [buttonsOf(publicUrl, incident.id, incident.monitorId)]
})

export const testMessageOf = (name: string, mention: string | null, at: string): RESTPostAPIWebhookWithTokenJSONBody => ({
  ...(mention === null ? {} : { content: mention }),
  embeds: [{
    title: `Test message: ${name}`.slice(0, 256),
    description: "This chat webhook is set up: jobmon alerts will arrive here.",
    color: COLORS.RESOLVED,
    timestamp: at,
    footer: { text: "jobmon" }
  }]
})

/** A maintenance notice (maintenance.upcoming/started/ended) to the chat channels a window lists. */
export const MAINTENANCE_COLOR = 5793522

export interface MaintenanceNotice {
  readonly kind: "upcoming" | "started" | "ended"
  readonly windowName: string
  readonly monitorCount: number
  readonly startsAt: string
  readonly endsAt: string
  readonly reason: string | null
  readonly at: string
}

const KIND_TITLE: Record<MaintenanceNotice["kind"], string> = {
  upcoming: "Maintenance upcoming",
  started: "Maintenance started",
  ended: "Maintenance ended"
}

export const maintenanceMessageOf = (notice: MaintenanceNotice, mention: string | null): RESTPostAPIWebhookWithTokenJSONBody => ({
  ...(mention === null ? {} : { content: mention }),
  embeds: [{
    title: `${KIND_TITLE[notice.kind]}: ${notice.windowName}`.slice(0, 256),
    color: MAINTENANCE_COLOR,
    fields: [
      { name: "Monitors", value: String(notice.monitorCount), inline: true },
      { name: "Starts", value: notice.startsAt, inline: true },
      { name: "Ends", value: notice.endsAt, inline: true },
      { name: "Reason", value: (notice.reason ?? dash).slice(0, FIELD_VALUE_LIMIT) || dash, inline: false }
    ],
    timestamp: notice.at,
    footer: { text: "jobmon" }
  }]
})

/** Discord's limits on one message: embeds, and characters over all its embeds. */
export const MAX_EMBEDS = 10
export const MAX_EMBED_CHARACTERS = 6000

/** Characters Discord counts towards the 6,000 of a message: title, description, fields, footer, author. */
export const embedCharacters = (embed: APIEmbed): number =>
  (embed.title?.length ?? 0) +
  (embed.description?.length ?? 0) +
  (embed.fields ?? []).reduce((n, f) => n + f.name.length + f.value.length, 0) +
  (embed.footer?.text.length ?? 0) +
  (embed.author?.name.length ?? 0)

export type ChatMessageBody = RESTPostAPIWebhookWithTokenJSONBody
type Message = ChatMessageBody

const linkButtonsOf = (message: Message): Array<APIButtonComponentWithURL> =>
  (message.components ?? []).flatMap((row) =>
    "components" in row
      ? (row.components as ReadonlyArray<{ type: number; style?: number }>).filter(
        (c): c is APIButtonComponentWithURL => c.type === ComponentType.Button && c.style === ButtonStyle.Link
      )
      : []
  )

/**
 * Several messages to one chat webhook as one (a burst that piled up while the webhook had to
 * wait): their embeds in order, each embed's title linking to its incident, and their link buttons
 * numbered by embed ("View incident 2") in rows of four (two embeds a row; ten embeds fill Discord's
 * five rows). A single message is left as it is.
 */
export const mergeMessages = (messages: ReadonlyArray<Message>): Message => {
  if (messages.length === 1) return messages[0]!
  const content = messages.find((m) => m.content !== undefined)?.content
  const embeds: Array<APIEmbed> = []
  const buttons: Array<APIButtonComponentWithURL> = []
  for (const message of messages) {
    const links = linkButtonsOf(message)
    for (const embed of message.embeds ?? []) {
      const n = embeds.length + 1
      embeds.push(links[0] === undefined ? embed : { ...embed, url: links[0].url })
      for (const b of links) buttons.push({ ...b, label: `${b.label} ${n}`.slice(0, 80) })
    }
  }
  const components: Array<APIActionRowComponent<APIButtonComponentWithURL>> = []
  for (let i = 0; i < buttons.length && components.length < 5; i += 4) {
    components.push({ type: ComponentType.ActionRow, components: buttons.slice(i, i + 4) })
  }
  return {
    ...(content === undefined ? {} : { content }),
    embeds,
    ...(components.length === 0 ? {} : { components })
  }
}

/**
 * Splits messages waiting for one chat webhook, oldest first, into groups that each fit one message:
 * at most 10 embeds and 6,000 embed characters. Every message lands in exactly one group, in order.
 */
export const packMessages = <A>(items: ReadonlyArray<A>, messageOf: (item: A) => Message): Array<Array<A>> => {
  const groups: Array<Array<A>> = []
  let current: Array<A> = []
  let embeds = 0
  let characters = 0
  for (const item of items) {
    const own = messageOf(item).embeds ?? []
    const n = own.length
    const c = own.reduce((sum, e) => sum + embedCharacters(e), 0)
    if (current.length > 0 && (embeds + n > MAX_EMBEDS || characters + c > MAX_EMBED_CHARACTERS)) {
      groups.push(current)
      current = []
      embeds = 0
      characters = 0
    }
    current.push(item)
    embeds += n
    characters += c
  }
  if (current.length > 0) groups.push(current)
  return groups
}

/**
 * Where a message is posted: the webhook's url as configured (a `thread_id` stays), with
 * `with_components=true` when it carries buttons: Discord drops the components of a webhook that no
 * application owns unless asked so.
 */
export const postUrlOf = (url: string, message: Message): string => {
  if ((message.components ?? []).length === 0) return url
  const target = new URL(url)
  target.searchParams.set("with_components", "true")
  return target.toString()
}
