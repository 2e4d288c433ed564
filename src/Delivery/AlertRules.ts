import { ALERT_EVENTS, MAINTENANCE_EVENTS, REMINDER_EVENT } from "./Alert.js"
import type { IncidentFacts, MonitorFacts } from "./Channel.js"

/**
 * Routing rules of an alert channel (docs/alerts.md#routing-rules), applied by the fan-out
 * (FanOut.ts) before the channel builds its message, and by the reminders (Reminders.ts). Pure.
 *
 * Every list empty or omitted matches everything; the lists combine with AND, the values of one
 * list with OR: an incident passes when its monitor is one of `monitorIds`, carries one of `tags`,
 * its type is one of `types`, its severity one of `severity`, and the event is one of `events`.
 *
 * Maintenance notices (maintenance.upcoming, .started, .ended) pass when the event is one of
 * `events` and one of the window's monitors is one of `monitorIds` and carries one of `tags`;
 * `types` and `severity` are about incidents and do not apply to them.
 */
export interface AlertRules {
  readonly monitorIds: ReadonlyArray<string>
  readonly tags: ReadonlyArray<string>
  readonly types: ReadonlyArray<string>
  readonly severity: ReadonlyArray<string>
  /** incident.opened, incident.acknowledged, incident.resolved, maintenance.upcoming, maintenance.started, maintenance.ended. */
  readonly events: ReadonlyArray<string>
}

/** An event the rules judge: its kind, and its incident as the fan-out read it. */
export interface RoutedEvent {
  readonly event: string
  readonly incident: IncidentFacts | undefined
  /** A maintenance notice's monitors. */
  readonly monitors?: ReadonlyArray<MonitorFacts> | undefined
}

const monitorMatches = (rules: AlertRules, id: string, tags: ReadonlyArray<string>) =>
  (rules.monitorIds.length === 0 || rules.monitorIds.some((m) => m.toLowerCase() === id.toLowerCase())) &&
  (rules.tags.length === 0 || rules.tags.some((tag) => tags.includes(tag)))

const anyOrIncludes = (list: ReadonlyArray<string>, value: string) => list.length === 0 || list.includes(value)

/**
 * Whether the channel takes the event. Only incident events pass (and reminders, which go where
 * incident.opened goes: a channel that does not take incident.opened gets no reminders).
 */
export const alertRulesMatch = (rules: AlertRules, event: RoutedEvent): boolean => {
  if ((MAINTENANCE_EVENTS as ReadonlyArray<string>).includes(event.event)) {
    return anyOrIncludes(rules.events, event.event) &&
      (event.monitors ?? []).some((m) => monitorMatches(rules, m.id, m.tags))
  }
  const incident = event.incident
  if (incident === undefined) return false
  const kind = event.event === REMINDER_EVENT ? "incident.opened" : event.event
  if (!(ALERT_EVENTS as ReadonlyArray<string>).includes(kind)) return false
  return anyOrIncludes(rules.events, kind) &&
    monitorMatches(rules, incident.monitorId, incident.monitorTags) &&
    anyOrIncludes(rules.types, incident.type) &&
    anyOrIncludes(rules.severity, incident.severity)
}
