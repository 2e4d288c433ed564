import type { ChannelEvent, IncidentFacts } from "./Channel.js"
import { formatDuration } from "./ChatMessage.js"

/**
 * What an alert says, whatever carries it (docs/alerts.md, "What a message says"): the facts of an
 * incident event (opened, acknowledged, resolved, a reminder) or of a test, in one neutral shape.
 * Every alert channel module builds its payload from an `Alert` (Slack blocks, an email's parts,
 * …), so channels agree on what they say and each module only decides how. Pure.
 */

export type AlertKind = "opened" | "acknowledged" | "resolved" | "reminder" | "maintenance" | "test"

/** A maintenance notice's window and period (what a channel keys it by: Opsgenie's alias). */
export interface MaintenanceFacts {
  readonly notice: "upcoming" | "started" | "ended"
  readonly windowId: string
  readonly windowName: string
  /** The period's start, ISO 8601. */
  readonly startsAt: string
}

export interface AlertFact {
  readonly label: string
  readonly value: string
}

export interface Alert {
  readonly kind: AlertKind
  /** `FAIL: nightly backup`, `ACKNOWLEDGED: nightly backup`, `RESOLVED: nightly backup`, `REMINDER 2/3: FAIL: nightly backup`. */
  readonly title: string
  /** One line for notifications and subjects: the title and, resolved, how long it lasted. */
  readonly summary: string
  /** The incident; undefined for a test. */
  readonly incident: IncidentFacts | undefined
  /** When it happened (the event's time), ISO 8601. */
  readonly at: string
  /** Label and value pairs, in order (Monitor, Status, Severity, …). */
  readonly facts: ReadonlyArray<AlertFact>
  /** The run's output, whole: channels keep its end to fit their limits (`tail`). */
  readonly output: string | undefined
  /** The note given with an acknowledgement or a resolution. */
  readonly note: string | null
  /** Links to the dashboard (PUBLIC_URL); undefined for a test. */
  readonly incidentUrl: string | undefined
  readonly monitorUrl: string | undefined
  /** For a test or a maintenance notice: what the message says besides its facts. */
  readonly text: string | undefined
  /** A maintenance notice's window (kind `maintenance`); undefined otherwise. */
  readonly maintenance?: MaintenanceFacts | undefined
  /** A maintenance notice: the dashboard's maintenance page (PUBLIC_URL/maintenance). */
  readonly maintenanceUrl?: string | undefined
}

/** The links an alert's message offers, as (label, url) pairs; urls undefined are left out by each channel. */
export const linksOf = (alert: Alert): ReadonlyArray<readonly [string, string | undefined]> =>
  alert.kind === "maintenance"
    ? [["View maintenance", alert.maintenanceUrl]]
    : [["View incident", alert.incidentUrl], ["View monitor", alert.monitorUrl]]

/** The incident events an alert channel can take (its `rules.events`). */
export const ALERT_EVENTS = ["incident.opened", "incident.acknowledged", "incident.resolved"] as const
export type AlertEvent = (typeof ALERT_EVENTS)[number]

/** Maintenance notices an alert channel can take (its `rules.events`), routed by the window's monitors. */
export const MAINTENANCE_EVENTS = ["maintenance.upcoming", "maintenance.started", "maintenance.ended"] as const

/** A reminder (src/Delivery/Reminders.ts): not a row of `events`, made for one channel when due. */
export const REMINDER_EVENT = "incident.reminder"

export const DASH = "—"
const ELLIPSIS = "…"

/** The end of `text` in at most `room` characters, marked with an ellipsis when cut (the end of an output says most). */
export const tail = (text: string, room: number): string =>
  text.length <= room ? text : ELLIPSIS + text.slice(text.length - (room - ELLIPSIS.length))

/** The start of `text` in at most `room` characters, marked with an ellipsis when cut. */
export const clip = (text: string, room: number): string =>
  text.length <= room ? text : text.slice(0, room - ELLIPSIS.length) + ELLIPSIS

const stringField = (data: unknown, ...path: ReadonlyArray<string>): string | undefined => {
  let value: unknown = data
  for (const key of path) value = typeof value === "object" && value !== null ? (value as Record<string, unknown>)[key] : undefined
  return typeof value === "string" ? value : undefined
}

const numberField = (data: unknown, ...path: ReadonlyArray<string>): number | undefined => {
  let value: unknown = data
  for (const key of path) value = typeof value === "object" && value !== null ? (value as Record<string, unknown>)[key] : undefined
  return typeof value === "number" && Number.isFinite(value) ? value : undefined
}

const exitCodeOf = (details: Record<string, unknown>) => (typeof details["exitCode"] === "number" ? String(details["exitCode"]) : DASH)

/** How long an incident lasted, from a resolution's `mttrSeconds`: `1h 5m`, `2m 5s`, `45.0 s`. */
export const lasted = (mttrSeconds: number | undefined): string => formatDuration(mttrSeconds === undefined ? undefined : mttrSeconds * 1000)

/**
 * The alert for an incident event (incident.opened, .acknowledged, .resolved, and reminders), or
 * undefined for any other event or when its incident is gone. Dashboard links start at `publicUrl`.
 */
export const alertOf = (event: ChannelEvent, publicUrl: string): Alert | undefined => {
  if ((MAINTENANCE_EVENTS as ReadonlyArray<string>).includes(event.event)) return maintenanceAlertOf(event, publicUrl)
  const incident = event.incident
  if (incident === undefined) return undefined
  const d = incident.details
  const name = incident.monitorName
  const base = {
    incident,
    at: event.createdAt,
    incidentUrl: `${publicUrl}/incidents/${incident.id}`,
    monitorUrl: `${publicUrl}/monitors/${incident.monitorId}`,
    text: undefined
  }
  const output = typeof d["output"] === "string" && d["output"] !== "" ? d["output"] : undefined
  const runFacts: ReadonlyArray<AlertFact> = [
    { label: "Exit code", value: exitCodeOf(d) },
    { label: "Duration", value: formatDuration(d["durationMs"]) },
    { label: "Expected", value: formatDuration(d["expectedDurationMs"]) }
  ]
  switch (event.event) {
    case "incident.opened": {
      const title = `${incident.type}: ${name}`
      return {
        ...base,
        kind: "opened",
        title,
        summary: title,
        facts: [
          { label: "Monitor", value: name },
          { label: "Status", value: "OPEN" },
          { label: "Severity", value: incident.severity },
          ...runFacts
        ],
        output,
        note: null
      }
    }
    case REMINDER_EVENT: {
      const n = numberField(event.data, "reminder", "n") ?? 1
      const max = numberField(event.data, "reminder", "max") ?? n
      const title = `REMINDER ${n}/${max}: ${incident.type}: ${name}`
      return {
        ...base,
        kind: "reminder",
        title,
        summary: `${title} (still open)`,
        facts: [
          { label: "Monitor", value: name },
          { label: "Status", value: "OPEN" },
          { label: "Severity", value: incident.severity },
          { label: "Opened", value: incident.openedAt },
          { label: "Reminder", value: `${n} of ${max}` },
          ...runFacts
        ],
        output,
        note: null
      }
    }
    case "incident.acknowledged": {
      const by = stringField(event.data, "acknowledgedBy", "name") ?? DASH
      const title = `ACKNOWLEDGED: ${name}`
      return {
        ...base,
        kind: "acknowledged",
        title,
        summary: `${title} (${incident.type}, by ${by})`,
        facts: [
          { label: "Monitor", value: name },
          { label: "Incident", value: incident.type },
          { label: "Severity", value: incident.severity },
          { label: "Acknowledged by", value: by },
          { label: "Opened", value: incident.openedAt }
        ],
        output: undefined,
        note: stringField(event.data, "note") ?? null
      }
    }
    case "incident.resolved": {
      const howLong = lasted(numberField(event.data, "incident", "mttrSeconds"))
      const title = `RESOLVED: ${name}`
      return {
        ...base,
        kind: "resolved",
        title,
        summary: `${title} (${incident.type}, lasted ${howLong})`,
        facts: [
          { label: "Monitor", value: name },
          { label: "Incident", value: incident.type },
          { label: "Severity", value: incident.severity },
          { label: "Lasted", value: howLong },
          { label: "Resolved by", value: stringField(event.data, "resolvedBy", "name") ?? DASH },
          { label: "Opened", value: incident.openedAt }
        ],
        output: undefined,
        note: stringField(event.data, "note") ?? null
      }
    }
    default:
      return undefined
  }
}

const NOTICE_TITLE = { upcoming: "Maintenance upcoming", started: "Maintenance started", ended: "Maintenance ended" } as const
const NOTICE_TEXT = {
  upcoming: "Alerts for these monitors will be suppressed while it lasts.",
  started: "Alerts for these monitors are suppressed until it ends.",
  ended: "Alerts for these monitors are on again."
} as const
const END_REASON: Record<string, string> = { completed: "as planned", deleted: "the window was deleted", updated: "the window was changed" }

/** The most monitor names a maintenance notice lists (then "and N more"). */
const NOTICE_MONITORS = 20

/**
 * A maintenance notice (maintenance.upcoming, .started, .ended; the `data` of
 * src/Maintenance/Payloads.ts) for an alert channel, or undefined when the fan-out gave it no
 * monitors (it routes these to alert channels only). Pure.
 */
export const maintenanceAlertOf = (event: ChannelEvent, publicUrl: string): Alert | undefined => {
  if (event.monitors === undefined) return undefined
  const notice = event.event.slice("maintenance.".length) as MaintenanceFacts["notice"]
  const windowName = stringField(event.data, "window", "name") ?? DASH
  const startsAt = stringField(event.data, "startsAt") ?? DASH
  const names = event.monitors.map((m) => m.name)
  const monitorList = names.length <= NOTICE_MONITORS
    ? names.join(", ")
    : `${names.slice(0, NOTICE_MONITORS).join(", ")} and ${names.length - NOTICE_MONITORS} more`
  const endedAt = stringField(event.data, "endedAt")
  const endReason = stringField(event.data, "endReason")
  const title = `${NOTICE_TITLE[notice]}: ${windowName}`
  return {
    kind: "maintenance",
    title,
    summary: title,
    incident: undefined,
    at: event.createdAt,
    facts: [
      { label: "Window", value: windowName },
      { label: "Monitors", value: monitorList || DASH },
      { label: "Starts", value: startsAt },
      { label: "Ends", value: stringField(event.data, "endsAt") ?? DASH },
      ...(notice === "ended" && endedAt !== undefined ? [{ label: "Ended", value: `${endedAt} (${END_REASON[endReason ?? ""] ?? endReason ?? DASH})` }] : []),
      { label: "Reason", value: stringField(event.data, "window", "reason") ?? DASH }
    ],
    output: undefined,
    note: null,
    incidentUrl: undefined,
    monitorUrl: undefined,
    text: NOTICE_TEXT[notice],
    maintenance: { notice, windowId: stringField(event.data, "window", "id") ?? "", windowName, startsAt },
    maintenanceUrl: `${publicUrl}/maintenance`
  }
}

/** The test endpoint's message for a channel named `name`, at `at` (epoch ms). */
export const testAlertOf = (name: string, at: number): Alert => ({
  kind: "test",
  title: `Test message: ${name}`,
  summary: `Test message: ${name}`,
  incident: undefined,
  at: new Date(at).toISOString(),
  facts: [],
  output: undefined,
  note: null,
  incidentUrl: undefined,
  monitorUrl: undefined,
  text: "This channel is set up: jobmon alerts will arrive here."
})
