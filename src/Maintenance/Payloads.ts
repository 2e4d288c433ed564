import type { EventInput } from "../Events/Events.js"

/**
 * The `data` of maintenance.upcoming, maintenance.started and maintenance.ended (ours; decisions §8,
 * docs/maintenance.md#notifications). One shape for the three kinds; fields without a value are null.
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

const iso = (t: number) => new Date(t).toISOString()

const windowOf = (w: WindowFacts) => ({
  id: w.id,
  name: w.name,
  monitorIds: w.monitorIds,
  reason: w.reason,
  timezone: w.timezone
})

export const maintenanceUpcoming = (
  w: WindowFacts,
  period: { readonly start: number; readonly end: number },
  beforeStartSeconds: number,
  at: number
): EventInput => {
  const data: MaintenanceEventData = {
    window: windowOf(w),
    startsAt: iso(period.start),
    endsAt: iso(period.end),
    endedAt: null,
    endReason: null,
    beforeStartSeconds,
    channels: w.channels
  }
  return { orgId: w.orgId, type: "maintenance.upcoming", data, monitorIds: w.monitorIds, at }
}

export const maintenanceStarted = (w: WindowFacts, period: { readonly start: number; readonly end: number }, at: number): EventInput => {
  const data: MaintenanceEventData = {
    window: windowOf(w),
    startsAt: iso(period.start),
    endsAt: iso(period.end),
    endedAt: null,
    endReason: null,
    beforeStartSeconds: null,
    channels: w.channels
  }
  return { orgId: w.orgId, type: "maintenance.started", data, monitorIds: w.monitorIds, at }
}

export const maintenanceEnded = (
  w: WindowFacts,
  period: { readonly start: number; readonly end: number },
  endedAt: number,
  endReason: "completed" | "deleted" | "updated",
  at: number
): EventInput => {
  const data: MaintenanceEventData = {
    window: windowOf(w),
    startsAt: iso(period.start),
    endsAt: iso(period.end),
    endedAt: iso(endedAt),
    endReason,
    beforeStartSeconds: null,
    channels: w.channels
  }
  return { orgId: w.orgId, type: "maintenance.ended", data, monitorIds: w.monitorIds, at }
}
