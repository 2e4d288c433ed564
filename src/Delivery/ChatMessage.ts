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
