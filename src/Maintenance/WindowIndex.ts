import { Either } from "effect"
import { isUuid } from "../Domain/Ids.js"
import { iso } from "../Domain/Instant.js"
import type { WindowStatus } from "./Api.js"
import type { WindowRow } from "./MaintenanceRepo.js"
import {
  type FieldError,
  nextPeriodAfter,
  overrideCovers,
  type Period,
  periodAt,
  validateWindowSchedule,
  type WindowSchedule
} from "./Model.js"

/**
 * The maintenance windows of every organization in memory, indexed by monitor, so that "is monitor M
 * in maintenance at T" (the engine's MaintenanceCheck) is a map look-up and a period computation,
 * mostly two comparisons against the last period computed. Pure: no I/O, no Effect services; the
 * MaintenanceIndex service holds the one index and loads it, the Maintenance service keeps it current.
 */

export interface Override {
  readonly reason: string
  readonly startedAt: number
  readonly endsAt: number
}

/** A window as the index holds it; one object per window for its life (see WindowIndex.holds). */
export interface IndexedWindow {
  row: WindowRow
  schedule: WindowSchedule
  override: Override | null
  /** The last period computed: most checks fall in it. */
  cached: Period | undefined
}

/** What the monitors API shows of the window suppressing a monitor. */
export interface MonitorMaintenance {
  readonly windowId: string
  readonly name: string
  readonly endsAt: string
  readonly remainingSeconds: number
}

/** A stored window's schedule (a Left only when the stored fields no longer parse). */
export const scheduleOfRow = (row: WindowRow): Either.Either<WindowSchedule, FieldError> =>
  validateWindowSchedule(
    {
      start: iso(row.start_at),
      end: iso(row.end_at),
      rrule: row.rrule,
      duration: row.duration_seconds,
      timezone: row.timezone
    },
    row.created_at.getTime()
  )

const overrideOf = (row: WindowRow): Override | null =>
  row.override_started_at === null || row.override_ends_at === null
    ? null
    : { reason: row.override_reason ?? "", startedAt: row.override_started_at.getTime(), endsAt: row.override_ends_at.getTime() }

/** The window's period covering `at`, if any. */
export const periodOf = (w: IndexedWindow, at: number): Period | undefined => {
  const c = w.cached
  if (c !== undefined && c.start <= at && at < c.end) return c
  const p = periodAt(w.schedule, at)
  if (p !== undefined) w.cached = p
  return p
}

/** The period that suppresses incidents at `at`: a running period not overridden at that instant. */
export const suppressingPeriod = (w: IndexedWindow, at: number): Period | undefined => {
  const p = periodOf(w, at)
  return p === undefined || overrideCovers(w.override, p, at) ? undefined : p
}

/** Whether the override of the running period lets alerts through now. */
export const isOverridden = (w: IndexedWindow, period: Period | undefined, now: number): boolean =>
  period !== undefined && overrideCovers(w.override, period, now)

export const statusOf = (w: IndexedWindow, now: number) => {
  const period = periodOf(w, now)
  const next = nextPeriodAfter(w.schedule, now)
  const overridden = isOverridden(w, period, now)
  const status: WindowStatus = period !== undefined ? (overridden ? "overridden" : "active") : next !== undefined ? "scheduled" : "ended"
  return { status, period, next, overridden }
}

/** Whole seconds from `now` until `end`, rounded up (0 once it has passed). */
export const remainingSeconds = (end: number, now: number) => Math.max(0, Math.ceil((end - now) / 1000))

export const makeWindowIndex = () => {
  const windows = new Map<string, IndexedWindow>()
  const byMonitor = new Map<string, Set<string>>()

  const index = (w: IndexedWindow) => {
    for (const m of w.row.monitor_ids) {
      let set = byMonitor.get(m)
      if (set === undefined) byMonitor.set(m, (set = new Set()))
      set.add(w.row.id)
    }
  }
  const unindex = (w: IndexedWindow) => {
    for (const m of w.row.monitor_ids) {
      const set = byMonitor.get(m)
      set?.delete(w.row.id)
      if (set !== undefined && set.size === 0) byMonitor.delete(m)
    }
  }

  const add = (row: WindowRow, schedule: WindowSchedule): IndexedWindow => {
    const w: IndexedWindow = { row, schedule, override: overrideOf(row), cached: undefined }
    windows.set(row.id, w)
    index(w)
    return w
  }

  /** The window was changed (PATCH): its monitors may differ, its periods do. */
  const change = (w: IndexedWindow, row: WindowRow, schedule: WindowSchedule) => {
    unindex(w)
    w.row = row
    w.schedule = schedule
    w.cached = undefined
    index(w)
  }

  /** The window was overridden: the row carries the override. */
  const overridden = (w: IndexedWindow, row: WindowRow) => {
    w.row = row
    w.override = overrideOf(row)
  }

  /**
   * The window as stored now (another instance changed it, or a reload): changed in place when the
   * index holds it (the same object: see `holds`), added otherwise.
   */
  const put = (row: WindowRow, schedule: WindowSchedule): IndexedWindow => {
    const w = windows.get(row.id)
    if (w === undefined) return add(row, schedule)
    change(w, row, schedule)
    w.override = overrideOf(row)
    return w
  }

  const remove = (w: IndexedWindow) => {
    windows.delete(w.row.id)
    unindex(w)
  }

  /** Whether `w` is still the window of its id: not deleted since it was looked up. */
  const holds = (w: IndexedWindow) => windows.get(w.row.id) === w

  const get = (id: string): IndexedWindow | undefined => windows.get(id)

  /** The organization's window of this id (any case), if it exists. */
  const find = (orgId: string, id: string): IndexedWindow | undefined => {
    const w = isUuid(id) ? windows.get(id.toLowerCase()) : undefined
    return w === undefined || w.row.org_id !== orgId ? undefined : w
  }

  const all = (): ReadonlyArray<IndexedWindow> => [...windows.values()]

  const ofOrg = (orgId: string): ReadonlyArray<IndexedWindow> => all().filter((w) => w.row.org_id === orgId)

  /** The windows covering the monitor, with the period of each that suppresses it at `at`. */
  const suppressing = (monitorId: string, at: number): ReadonlyArray<{ readonly w: IndexedWindow; readonly p: Period }> => {
    const ids = byMonitor.get(monitorId)
    if (ids === undefined) return []
    const out: Array<{ w: IndexedWindow; p: Period }> = []
    for (const id of [...ids]) {
      const w = windows.get(id)
      const p = w === undefined ? undefined : suppressingPeriod(w, at)
      if (w !== undefined && p !== undefined) out.push({ w, p })
    }
    return out
  }

  /** The engine's question; allocates nothing on the way to its answer. */
  const inMaintenance = (monitorId: string, at: number): boolean => {
    const ids = byMonitor.get(monitorId)
    if (ids === undefined) return false
    for (const id of ids) {
      const w = windows.get(id)
      if (w !== undefined && suppressingPeriod(w, at) !== undefined) return true
    }
    return false
  }

  /** The suppressing window that ends last, or null. */
  const monitorInfo = (monitorId: string, now: number): MonitorMaintenance | null => {
    let best: { w: IndexedWindow; p: Period } | undefined
    for (const s of suppressing(monitorId, now)) {
      if (best === undefined || s.p.end > best.p.end) best = s
    }
    if (best === undefined) return null
    return { windowId: best.w.row.id, name: best.w.row.name, endsAt: iso(best.p.end), remainingSeconds: remainingSeconds(best.p.end, now) }
  }

  return {
    add,
    change,
    overridden,
    put,
    remove,
    holds,
    get,
    find,
    all,
    ofOrg,
    suppressing,
    inMaintenance,
    monitorInfo,
    size: () => windows.size
  } as const
}

export type WindowIndex = ReturnType<typeof makeWindowIndex>
