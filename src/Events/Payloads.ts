import { iso } from "../Domain/Instant.js"
import type { Incident } from "../Incidents/Api.js"
import type { Monitor } from "../Monitors/Api.js"
import type { EventInput } from "./Events.js"

/**
 * The `data` of the incident and monitor event kinds, in one place (docs/events.md). The
 * incident.opened, incident.acknowledged and incident.resolved shapes are the interface spec's; the
 * others are ours. Each builder answers a whole EventInput for Events.record. (ping.received's data
 * is built by the database, sql/0011_ping_events.sql; maintenance.*'s by src/Maintenance/Payloads.ts.)
 */

/** Who acted: the token's owner (docs/decisions.md#tokens-and-scopes). */
export type Actor = {
  readonly userId: string | null
  readonly name: string
  readonly email: string | null
}

/** Automatic changes (auto-resolve) are made by this actor. */
export const SYSTEM: Actor = { userId: null, name: "system", email: null }

export type MonitorSummary = {
  readonly id: string
  readonly name: string
  readonly schedule: { readonly type: string; readonly expression: string }
}

export type IncidentOpenedData = {
  readonly incident: {
    readonly id: string
    readonly type: Incident["type"]
    readonly severity: Incident["severity"]
    readonly status: Incident["status"]
    readonly monitorId: string
    readonly monitor: MonitorSummary
    readonly orgId: string
    readonly createdAt: string
    readonly details: Record<string, unknown>
  }
}

/**
 * Which monitor an incident is about, on every incident.* event (beyond the spec's fields for
 * acknowledged and resolved: additive, so a receiver can act without calling back).
 */
export type IncidentMonitor = {
  readonly monitorId: string
  readonly monitor: MonitorSummary
}

export type IncidentAcknowledgedData = {
  readonly incident: { readonly id: string; readonly status: Incident["status"] } & IncidentMonitor
  readonly acknowledgedBy: { readonly userId: string | null; readonly name: string; readonly email: string | null }
  readonly note: string | null
}

export type IncidentResolvedData = {
  readonly incident: { readonly id: string; readonly status: Incident["status"]; readonly mttrSeconds: number } & IncidentMonitor
  readonly resolvedBy: { readonly userId: string | null; readonly name: string }
  readonly note: string | null
}

export type IncidentNoteAddedData = {
  readonly incident: { readonly id: string; readonly status: Incident["status"] } & IncidentMonitor
  readonly note: { readonly at: string; readonly text: string; readonly by: string }
  readonly addedBy: { readonly userId: string | null; readonly name: string; readonly email: string | null }
}

export type MonitorCreatedData = { readonly monitor: Monitor }
export type MonitorUpdatedData = { readonly monitor: Monitor; readonly changes: ReadonlyArray<string> }
export type MonitorDeletedData = { readonly monitor: Monitor; readonly deletedAt: string }

/** An incident.* event: about the incident's monitor, with its severity, at an instant of the incident. */
const incidentEvent = (
  orgId: string,
  type: "incident.opened" | "incident.acknowledged" | "incident.resolved" | "incident.note_added",
  incident: Incident,
  data: Record<string, unknown>,
  at: string
): EventInput => ({ orgId, type, data, monitorIds: [incident.monitorId], severity: incident.severity, at: new Date(at) })

export const incidentOpened = (orgId: string, incident: Incident, monitor: MonitorSummary): EventInput => {
  const data: IncidentOpenedData = {
    incident: {
      id: incident.id,
      type: incident.type,
      severity: incident.severity,
      status: incident.status,
      monitorId: incident.monitorId,
      monitor,
      orgId,
      createdAt: incident.createdAt,
      details: incident.details
    }
  }
  return incidentEvent(orgId, "incident.opened", incident, data, incident.createdAt)
}

export const incidentAcknowledged = (
  orgId: string,
  incident: Incident,
  monitor: MonitorSummary,
  by: Actor,
  note: string | null
): EventInput => {
  const data: IncidentAcknowledgedData = {
    incident: { id: incident.id, status: incident.status, monitorId: incident.monitorId, monitor },
    acknowledgedBy: { userId: by.userId, name: by.name, email: by.email },
    note
  }
  return incidentEvent(orgId, "incident.acknowledged", incident, data, incident.acknowledgedAt!)
}

export const incidentResolved = (
  orgId: string,
  incident: Incident,
  monitor: MonitorSummary,
  by: Actor,
  note: string | null
): EventInput => {
  const data: IncidentResolvedData = {
    incident: {
      id: incident.id,
      status: incident.status,
      mttrSeconds: incident.mttrSeconds ?? 0,
      monitorId: incident.monitorId,
      monitor
    },
    resolvedBy: { userId: by.userId, name: by.name },
    note
  }
  return incidentEvent(orgId, "incident.resolved", incident, data, incident.resolvedAt!)
}

export const incidentNoteAdded = (
  orgId: string,
  incident: Incident,
  monitor: MonitorSummary,
  note: { readonly at: string; readonly text: string; readonly by: string },
  by: Actor
): EventInput => {
  const data: IncidentNoteAddedData = {
    incident: { id: incident.id, status: incident.status, monitorId: incident.monitorId, monitor },
    note,
    addedBy: { userId: by.userId, name: by.name, email: by.email }
  }
  return incidentEvent(orgId, "incident.note_added", incident, data, note.at)
}

export const monitorCreated = (orgId: string, monitor: Monitor, at: number | Date): EventInput => {
  const data: MonitorCreatedData = { monitor }
  return { orgId, type: "monitor.created", data, monitorIds: [monitor.id], at }
}

export const monitorUpdated = (orgId: string, monitor: Monitor, changes: ReadonlyArray<string>, at: number | Date): EventInput => {
  const data: MonitorUpdatedData = { monitor, changes }
  return { orgId, type: "monitor.updated", data, monitorIds: [monitor.id], at }
}

export const monitorDeleted = (orgId: string, monitor: Monitor, at: number | Date): EventInput => {
  const data: MonitorDeletedData = { monitor, deletedAt: iso(at) }
  return { orgId, type: "monitor.deleted", data, monitorIds: [monitor.id], at }
}

/** The settings a user changes; `changes` of monitor.updated names those that differ. */
export const MONITOR_SETTING_FIELDS = [
  "name",
  "slug",
  "schedule",
  "graceSeconds",
  "maxRuntimeSeconds",
  "maxOutputSizeKb",
  "captureOutput",
  "sla",
  "tags",
  "autoResolve",
  "failureThreshold",
  "recoveryThreshold",
  "paused"
] as const

export const changedMonitorFields = (before: Monitor, after: Monitor): ReadonlyArray<string> =>
  MONITOR_SETTING_FIELDS.filter((field) => JSON.stringify(before[field]) !== JSON.stringify(after[field]))
