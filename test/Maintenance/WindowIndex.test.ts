import { describe, expect, it } from "@effect/vitest"
import { Either } from "effect"
import type { WindowRow } from "../../src/Maintenance/MaintenanceRepo.js"
import { DEFAULT_NOTIFICATIONS, validateWindowSchedule, type WindowSchedule } from "../../src/Maintenance/Model.js"
import { makeWindowIndex } from "../../src/Maintenance/WindowIndex.js"

// The index alone, without a database: what the engine's MaintenanceCheck and the monitors API
// read. Instants are hand-written UTC; periods are half-open [start, end).

const T0 = Date.parse("2026-05-01T10:00:00Z")
const MIN = 60_000
const ORG = "00000000-0000-4000-8000-0000000000aa"
const M1 = "00000000-0000-4000-8000-000000000001"
const M2 = "00000000-0000-4000-8000-000000000002"
const W1 = "00000000-0000-4000-8000-0000000000f1"
const W2 = "00000000-0000-4000-8000-0000000000f2"

const oneTime = (start: number, end: number): WindowSchedule =>
  Either.getOrThrow(validateWindowSchedule({ start: new Date(start).toISOString(), end: new Date(end).toISOString() }, T0))

const rowOf = (id: string, monitorIds: ReadonlyArray<string>, start: number, end: number, more: Partial<WindowRow> = {}): WindowRow => ({
  id,
  org_id: ORG,
  name: `window ${id.slice(-2)}`,
  monitor_ids: monitorIds,
  start_at: new Date(start),
  end_at: new Date(end),
  rrule: null,
  duration_seconds: null,
  timezone: "UTC",
  reason: null,
  notifications: DEFAULT_NOTIFICATIONS,
  override_reason: null,
  override_started_at: null,
  override_ends_at: null,
  created_at: new Date(T0),
  updated_at: new Date(T0),
  ...more
})

describe("WindowIndex", () => {
  it("a monitor is in maintenance from the window's start up to (not at) its end; other monitors never", () => {
    const index = makeWindowIndex()
    index.add(rowOf(W1, [M1], T0, T0 + 30 * MIN), oneTime(T0, T0 + 30 * MIN))
    expect(index.inMaintenance(M1, T0 - 1)).toBe(false)
    expect(index.inMaintenance(M1, T0)).toBe(true)
    expect(index.inMaintenance(M1, T0 + 30 * MIN - 1)).toBe(true)
    expect(index.inMaintenance(M1, T0 + 30 * MIN)).toBe(false)
    expect(index.inMaintenance(M2, T0 + MIN)).toBe(false)
  })

  it("an override of the running period lets alerts through until it ends, then the window suppresses again", () => {
    const index = makeWindowIndex()
    const w = index.add(rowOf(W1, [M1], T0, T0 + 60 * MIN), oneTime(T0, T0 + 60 * MIN))
    index.overridden(
      w,
      rowOf(W1, [M1], T0, T0 + 60 * MIN, {
        override_reason: "need alerts",
        override_started_at: new Date(T0 + 10 * MIN),
        override_ends_at: new Date(T0 + 20 * MIN)
      })
    )
    expect(index.inMaintenance(M1, T0 + 5 * MIN)).toBe(true)
    expect(index.inMaintenance(M1, T0 + 15 * MIN)).toBe(false)
    expect(index.monitorInfo(M1, T0 + 15 * MIN)).toBeNull()
    expect(index.inMaintenance(M1, T0 + 20 * MIN)).toBe(true)
  })

  it("a changed window moves to its new monitors and periods; a removed one suppresses nothing", () => {
    const index = makeWindowIndex()
    const w = index.add(rowOf(W1, [M1], T0, T0 + 30 * MIN), oneTime(T0, T0 + 30 * MIN))
    expect(index.inMaintenance(M1, T0 + MIN)).toBe(true)
    index.change(w, rowOf(W1, [M2], T0 + 60 * MIN, T0 + 90 * MIN), oneTime(T0 + 60 * MIN, T0 + 90 * MIN))
    expect(index.inMaintenance(M1, T0 + MIN)).toBe(false)
    expect(index.inMaintenance(M2, T0 + MIN)).toBe(false)
    expect(index.inMaintenance(M2, T0 + 61 * MIN)).toBe(true)
    expect(index.inMaintenance(M1, T0 + 61 * MIN)).toBe(false)
    expect(index.holds(w)).toBe(true)
    index.remove(w)
    expect(index.inMaintenance(M2, T0 + 61 * MIN)).toBe(false)
    expect(index.holds(w)).toBe(false)
    expect(index.size()).toBe(0)
  })

  it("the monitors API shows the suppressing window that ends last, with whole seconds left rounded up", () => {
    const index = makeWindowIndex()
    index.add(rowOf(W1, [M1], T0, T0 + 30 * MIN), oneTime(T0, T0 + 30 * MIN))
    index.add(rowOf(W2, [M1, M2], T0, T0 + 45 * MIN), oneTime(T0, T0 + 45 * MIN))
    expect(index.monitorInfo(M1, T0 + 500)).toEqual({
      windowId: W2,
      name: "window f2",
      endsAt: "2026-05-01T10:45:00.000Z",
      remainingSeconds: 2700
    })
    expect(index.suppressing(M1, T0 + MIN).map((s) => s.w.row.id)).toEqual([W1, W2])
  })

  it("finds a window by its id in any case, only within its organization", () => {
    const index = makeWindowIndex()
    const w = index.add(rowOf(W1, [M1], T0, T0 + 30 * MIN), oneTime(T0, T0 + 30 * MIN))
    expect(index.find(ORG, W1.toUpperCase())).toBe(w)
    expect(index.find("00000000-0000-4000-8000-0000000000bb", W1)).toBeUndefined()
    expect(index.find(ORG, "not-a-uuid")).toBeUndefined()
  })
})
