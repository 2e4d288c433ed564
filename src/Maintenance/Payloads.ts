import type { EventInput } from "../Events/Events.js"
import { iso } from "../Domain/Instant.js"

/**
 * The `data` of maintenance.upcoming, maintenance.started and maintenance.ended (ours;
 * docs/decisions.md#maintenance-windows, docs/maintenance.md#notifications). One shape for the three kinds; fields without a value are null.
 * `channels` is the window's notifications.channels at the time (`chat:<name>`, `webhook:<id>`), for the
 * delivery work to route the notice; `monitor_ids` of the row carries the window's monitors for
 * webhook `filters.monitorIds`.
 */
export type MaintenanceEventData = {
  readonly window: {
    readonly id: string
    readonly name: string
    readonly monitorIds: ReadonlyArray<string>
    readonly reason: string | null
    readonly timezone: string
  }
  /** The period's start. */
  readonly startsAt: string
  /** The period's scheduled end. */
  readonly endsAt: string
  /** maintenance.ended: when it really ended (earlier than endsAt when deleted or changed); else null. */
  readonly endedAt: string | null
  /** maintenance.ended: completed, deleted or updated; else null. */
  readonly endReason: "completed" | "deleted" | "updated" | null
  /** maintenance.upcoming: the window's beforeStart (seconds); else null. */
  readonly beforeStartSeconds: number | null
  readonly channels: ReadonlyArray<string>
}

export interface WindowFacts {
  readonly id: string
  readonly orgId: string
  readonly name: string
  readonly monitorIds: ReadonlyArray<string>
  readonly reason: string | null
  readonly timezone: string
  readonly channels: ReadonlyArray<string>
}

type PeriodBounds = { readonly start: number; readonly end: number }

/** The event of one of the three kinds; `facts` are what only some kinds carry. */
const maintenanceEvent = (
  type: "maintenance.upcoming" | "maintenance.started" | "maintenance.ended",
  w: WindowFacts,
  period: PeriodBounds,
  facts: Pick<MaintenanceEventData, "endedAt" | "endReason" | "beforeStartSeconds">,
  at: number
): EventInput => {
  const data: MaintenanceEventData = {
    window: { id: w.id, name: w.name, monitorIds: w.monitorIds, reason: w.reason, timezone: w.timezone },
    startsAt: iso(period.start),
    endsAt: iso(period.end),
    endedAt: facts.endedAt,
    endReason: facts.endReason,
    beforeStartSeconds: facts.beforeStartSeconds,
    channels: w.channels
  }
  return { orgId: w.orgId, type, data, monitorIds: w.monitorIds, at }
}

export const maintenanceUpcoming = (w: WindowFacts, period: PeriodBounds, beforeStartSeconds: number, at: number): EventInput =>
  maintenanceEvent("maintenance.upcoming", w, period, { endedAt: null, endReason: null, beforeStartSeconds }, at)

export const maintenanceStarted = (w: WindowFacts, period: PeriodBounds, at: number): EventInput =>
  maintenanceEvent("maintenance.started", w, period, { endedAt: null, endReason: null, beforeStartSeconds: null }, at)

export const maintenanceEnded = (
  w: WindowFacts,
  period: PeriodBounds,
  endedAt: number,
  endReason: "completed" | "deleted" | "updated",
  at: number
): EventInput => maintenanceEvent("maintenance.ended", w, period, { endedAt: iso(endedAt), endReason, beforeStartSeconds: null }, at)
