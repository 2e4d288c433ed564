import type { OpenHistoryRow, WindowRow } from "./MaintenanceRepo.js"
import { nextPeriodAfter, overrideCovers } from "./Model.js"
import type { WindowFacts } from "./Payloads.js"
import { type IndexedWindow, periodOf } from "./WindowIndex.js"

/**
 * Pure: what the maintenance scheduler (src/Maintenance/Scheduler.ts) believes was recorded of a
 * window, and what follows from it: the window's next transition, and whether reconciling it now
 * would write anything.
 */

/** The history row of a window's running period, as stored (ended_at null). */
export interface OpenPeriod {
  readonly startedAt: number
  endsAt: number
  name: string
  monitorIds: ReadonlyArray<string>
}

/** What has been recorded of a window. */
export interface Recorded {
  open: OpenPeriod | undefined
  /** The period start for which maintenance.upcoming was recorded. */
  upcomingFor: number | undefined
}

export const openOf = (h: OpenHistoryRow): OpenPeriod => ({
  startedAt: h.started_at.getTime(),
  endsAt: h.ends_at.getTime(),
  name: h.name,
  monitorIds: h.monitor_ids
})

export const sameIds = (a: ReadonlyArray<string>, b: ReadonlyArray<string>) => a.length === b.length && a.every((x, i) => x === b[i])

export const factsOf = (row: WindowRow): WindowFacts => ({
  id: row.id,
  orgId: row.org_id,
  name: row.name,
  monitorIds: row.monitor_ids,
  reason: row.reason,
  timezone: row.timezone,
  channels: row.notifications.channels
})

export const periodRecord = (row: WindowRow, p: { readonly start: number; readonly end: number }) => ({
  windowId: row.id,
  startedAt: new Date(p.start),
  endsAt: new Date(p.end),
  name: row.name,
  monitorIds: row.monitor_ids
})

/** The next instant at which something about this window changes. */
export const nextTransition = (w: IndexedWindow, upcomingFor: number | undefined, now: number): number | undefined => {
  let next: number | undefined
  const consider = (t: number) => {
    if (t > now && (next === undefined || t < next)) next = t
  }
  const p = periodOf(w, now)
  if (p !== undefined) {
    consider(p.end)
    if (w.override !== null && overrideCovers(w.override, p, now)) consider(w.override.endsAt)
  }
  const n = nextPeriodAfter(w.schedule, now)
  if (n !== undefined) {
    consider(n.start)
    const before = w.row.notifications.beforeStart
    if (before !== null && before > 0 && upcomingFor !== n.start) consider(n.start - before * 1000)
  }
  return next
}

/**
 * Whether `reconcile` would write anything for this window at `now`, given what this instance
 * believes was recorded (its conditions, without the writes). Cluster mode: only then is the window
 * reloaded from the database before the pass reconciles it.
 */
export const due = (w: IndexedWindow, r: Recorded | undefined, now: number): boolean => {
  const p = periodOf(w, now)
  const open = r?.open
  if (open !== undefined && (p === undefined || p.start !== open.startedAt)) return true
  if (p !== undefined && (open === undefined || open.endsAt !== p.end || open.name !== w.row.name || !sameIds(open.monitorIds, w.row.monitor_ids))) {
    return true
  }
  const before = w.row.notifications.beforeStart
  if (before === null || before <= 0) return false
  const next = nextPeriodAfter(w.schedule, now)
  return next !== undefined && r?.upcomingFor !== next.start && next.start - before * 1000 <= now
}
