import { describe, expect, it } from "@effect/vitest"
import { Either } from "effect"
import { DurationHistory } from "../../src/Engine/DurationHistory.js"
import {
  type ActiveIncident,
  DURATION_MEMORY,
  type EngineEffect,
  type EngineEvent,
  type FinishedRun,
  type MonitorConfig,
  type MonitorState,
  type RulesContext
} from "../../src/Engine/Model.js"
import {
  decide,
  initialState,
  lateLimit,
  nextDeadline,
  type PersistedState,
  statusOf
} from "../../src/Engine/Rules.js"
import { type Schedule, validateSchedule } from "../../src/Monitors/Schedule.js"

// Every instant below is written out by hand (UTC), never computed with the module under test.

const SECOND = 1_000
const MINUTE = 60 * SECOND
const HOUR = 60 * MINUTE
const DAY = 24 * HOUR

const at = (s: string): number => {
  const t = Date.parse(s)
  if (Number.isNaN(t)) throw new Error(`bad ISO string in test: ${s}`)
  return t
}
const iso = (t: number): string => new Date(t).toISOString()

const cron = (expression: string, timezone = "UTC"): Schedule =>
  Either.getOrThrow(validateSchedule({ type: "cron", expression, timezone }))
const every = (expression: string): Schedule => Either.getOrThrow(validateSchedule({ type: "interval", expression }))

const config = (over: Partial<MonitorConfig> = {}): MonitorConfig => ({
  id: "mon-1",
  orgId: "org-1",
  name: "nightly backup",
  schedule: cron("0 2 * * *"),
  graceSeconds: 300,
  maxRuntimeSeconds: null,
  sla: null,
  autoResolve: true,
  paused: false,
  createdAt: at("2026-01-01T00:00:00Z"),
  ...over
})

const state = (over: Partial<MonitorConfig> = {}, persisted: Partial<PersistedState> = {}): MonitorState =>
  initialState(config(over), {
    nextExpectedAt: null,
    lastPingAt: null,
    openRuns: [],
    activeIncidents: [],
    recentDurations: [],
    lastRunStatus: null,
    ...persisted
  })

const noMaintenance: RulesContext = { inMaintenance: () => false }
/** Maintenance windows [start, end) for mon-1. */
const windows = (...ranges: ReadonlyArray<readonly [number, number]>): RulesContext => ({
  inMaintenance: (id, t) => id === "mon-1" && ranges.some(([a, b]) => t >= a && t < b)
})

const tick = (t: number): EngineEvent => ({ _tag: "Tick", at: t })
const started = (runId: string, t: number): EngineEvent => ({ _tag: "RunStarted", runId, at: t })
const finished = (t: number, run: Partial<FinishedRun> & { readonly id: string }): EngineEvent => ({
  _tag: "RunFinished",
  at: t,
  run: {
    status: "SUCCESS",
    startedAt: t - (run.durationMs ?? 0),
    finishedAt: t,
    durationMs: 1_000,
    exitCode: null,
    output: null,
    startInferred: true,
    ...run
  }
})
/** A lone success ping (start inferred). */
const success = (id: string, t: number, durationMs: number | null = 1_000): EngineEvent =>
  finished(t, { id, status: "SUCCESS", durationMs, exitCode: 0 })
const failure = (id: string, t: number, extra: Partial<FinishedRun> = {}): EngineEvent =>
  finished(t, { id, status: "FAIL", durationMs: 2_000, exitCode: 1, output: "boom", ...extra })

type Raise = Extract<EngineEffect, { _tag: "RaiseIncident" }>
type Resolve = Extract<EngineEffect, { _tag: "ResolveIncidents" }>
type Update = Extract<EngineEffect, { _tag: "UpdateMonitor" }>
type Suppress = Extract<EngineEffect, { _tag: "Suppressed" }>

const raises = (effects: ReadonlyArray<EngineEffect>, type?: string): Array<Raise> =>
  effects.filter((e): e is Raise => e._tag === "RaiseIncident" && (type === undefined || e.type === type))
const resolves = (effects: ReadonlyArray<EngineEffect>): Array<Resolve> =>
  effects.filter((e): e is Resolve => e._tag === "ResolveIncidents")
const updates = (effects: ReadonlyArray<EngineEffect>): Array<Update> =>
  effects.filter((e): e is Update => e._tag === "UpdateMonitor")
const suppressed = (effects: ReadonlyArray<EngineEffect>, type?: string): Array<Suppress> =>
  effects.filter((e): e is Suppress => e._tag === "Suppressed" && (type === undefined || e.type === type))

/** One decision, with the invariants every decision keeps. */
const step = (s: MonitorState, event: EngineEvent, ctx: RulesContext = noMaintenance) => {
  const d = decide(s, event, ctx)
  const u = updates(d.effects)
  expect(u.length).toBeLessThanOrEqual(1)
  if (u.length === 1) expect(d.effects[d.effects.length - 1]!._tag).toBe("UpdateMonitor")
  const types = d.state.activeIncidents.map((a) => a.type)
  expect(new Set(types).size).toBe(types.length)
  return d
}

/**
 * Feeds events in order, with a Tick at every deadline that falls due before each of them (as the
 * actor would), then Ticks up to `until`. Returns every effect and the final state.
 */
const simulate = (
  s0: MonitorState,
  events: ReadonlyArray<EngineEvent>,
  until: number,
  ctx: RulesContext = noMaintenance
) => {
  let s = s0
  const effects: Array<EngineEffect> = []
  const drain = (t: number) => {
    for (let guard = 0; guard < 10_000; guard++) {
      const deadline = nextDeadline(s)
      if (deadline === null || deadline > t) return
      const d = step(s, tick(deadline), ctx)
      effects.push(...d.effects)
      s = d.state
      const after = nextDeadline(s)
      expect(after === null || after > deadline).toBe(true)
    }
    throw new Error("deadline loop")
  }
  for (const event of events) {
    drain(event.at)
    const d = step(s, event, ctx)
    effects.push(...d.effects)
    s = d.state
  }
  drain(until)
  return { state: s, effects }
}

// A daily 02:00 UTC job, grace 5 minutes, expected on 10 March 2026.
const T = at("2026-03-10T02:00:00Z")
const GRACE = 5 * MINUTE
const daily = (over: Partial<MonitorConfig> = {}, persisted: Partial<PersistedState> = {}) =>
  state(over, { nextExpectedAt: T, lastPingAt: at("2026-03-09T02:00:10Z"), lastRunStatus: "SUCCESS", ...persisted })

describe("Rules: MISSED", () => {
  it("raises MISSED exactly at T + grace, not one millisecond before", () => {
    const s = daily()
    expect(nextDeadline(s)).toBe(T + GRACE)
    const early = step(s, tick(T + GRACE - 1))
    expect(early.effects).toEqual([])
    expect(early.state).toEqual(s)
    expect(nextDeadline(early.state)).toBe(T + GRACE)

    const due = step(s, tick(T + GRACE))
    expect(due.effects).toEqual([
      {
        _tag: "RaiseIncident",
        type: "MISSED",
        severity: "HIGH",
        at: T + GRACE,
        runId: null,
        details: {
          expectedAt: "2026-03-10T02:00:00.000Z",
          graceSeconds: 300,
          lastPingAt: "2026-03-09T02:00:10.000Z",
          missedOccurrences: 1
        }
      },
      { _tag: "UpdateMonitor", status: "MISSED", nextExpectedAt: at("2026-03-11T02:00:00Z") }
    ])
    expect(due.state.activeIncidents).toEqual([{ type: "MISSED", status: "OPEN", runId: null }])
    expect(statusOf(due.state)).toBe("MISSED")
    // Nothing more until the next occurrence's grace ends.
    expect(step(due.state, tick(T + GRACE + HOUR)).effects).toEqual([])
    expect(nextDeadline(due.state)).toBe(at("2026-03-11T02:05:00Z"))
  })

  it("a Tick long after the deadline carries the deadline as the incident's instant", () => {
    const d = step(daily(), tick(T + GRACE + 17 * MINUTE))
    expect(raises(d.effects, "MISSED").map((e) => e.at)).toEqual([T + GRACE])
  })

  it.each([
    ["on time", T, false],
    ["late inside the grace", T + GRACE - 1, false],
    ["exactly at the end of the grace", T + GRACE, true],
    ["30 s early", T - 30 * SECOND, false],
    ["60 s early (the window for a 5-minute grace is 5 minutes)", T - 60 * SECOND, false],
    ["exactly 5 minutes early", T - 5 * MINUTE, false],
    ["5 minutes and 1 ms early", T - 5 * MINUTE - 1, true]
  ] as const)("a ping %s (at %i) → MISSED: %s", (_label, pingAt, missed) => {
    const r = simulate(daily(), [success("r1", pingAt)], T + GRACE + HOUR)
    expect(raises(r.effects, "MISSED").length).toBe(missed ? 1 : 0)
    if (!missed) expect(r.state.nextExpectedAt).toBe(at("2026-03-11T02:00:00Z"))
  })

  it("the early window has a floor of 60 s when the grace is shorter", () => {
    const zeroGrace = daily({ graceSeconds: 0 })
    expect(raises(simulate(zeroGrace, [success("r", T - 60 * SECOND)], T + HOUR).effects).length).toBe(0)
    expect(raises(simulate(zeroGrace, [success("r", T - 60 * SECOND - 1)], T + HOUR).effects, "MISSED").length).toBe(1)
    // grace 0: the ping must come before T itself
    expect(raises(simulate(zeroGrace, [success("r", T)], T + HOUR).effects, "MISSED").length).toBe(1)
    expect(raises(simulate(zeroGrace, [success("r", T - 1)], T + HOUR).effects, "MISSED").length).toBe(0)
  })

  it("the early window is at most half the gap to the previous occurrence", () => {
    // Every 5 minutes with a 10-minute grace: early by at most 2.5 minutes.
    const T5 = at("2026-03-10T02:05:00Z")
    const s = state({ schedule: cron("*/5 * * * *"), graceSeconds: 600 }, { nextExpectedAt: T5, lastPingAt: at("2026-03-10T02:00:05Z") })
    expect(simulate(s, [success("r", T5 - 150 * SECOND)], T5).state.nextExpectedAt).toBe(at("2026-03-10T02:10:00Z"))
    expect(simulate(s, [success("r", T5 - 150 * SECOND - 1)], T5).state.nextExpectedAt).toBe(T5)
  })

  it("any kind of ping counts: a start ping satisfies the occurrence", () => {
    const r = simulate(daily(), [started("r1", T + 10 * SECOND)], T + GRACE + HOUR)
    expect(raises(r.effects, "MISSED")).toEqual([])
    expect(r.state.nextExpectedAt).toBe(at("2026-03-11T02:00:00Z"))
    expect(statusOf(r.state)).toBe("RUNNING")
  })

  it("the finish of a run whose start was seen never counts early for the next occurrence", () => {
    const T5 = at("2026-03-10T02:05:00Z")
    const s = state({ schedule: cron("*/5 * * * *"), graceSeconds: 60 }, { nextExpectedAt: at("2026-03-10T02:00:00Z") })
    // start at 02:00:10 accounts for 02:00; its success at 02:04:40 is within 02:05's early window
    const seen = simulate(s, [
      started("r1", at("2026-03-10T02:00:10Z")),
      finished(at("2026-03-10T02:04:40Z"), { id: "r1", startInferred: false, durationMs: 270_000 })
    ], T5 + MINUTE)
    expect(raises(seen.effects, "MISSED").map((e) => e.details.expectedAt)).toEqual(["2026-03-10T02:05:00.000Z"])
    // a lone success ping at the same instant is a run of its own and accounts for 02:05
    const lone = simulate(s, [started("r1", at("2026-03-10T02:00:10Z")), success("r2", at("2026-03-10T02:04:40Z"))], T5 + MINUTE)
    expect(raises(lone.effects, "MISSED")).toEqual([])
  })

  it("a ping far before the occurrence accounts for nothing", () => {
    const r = simulate(daily(), [success("manual", at("2026-03-09T14:00:00Z"))], T + GRACE)
    expect(raises(r.effects, "MISSED").length).toBe(1)
    expect(r.state.lastPingAt).toBe(at("2026-03-09T14:00:00Z"))
  })

  it("interval: each ping of any kind restarts the timer; MISSED at last ping + interval + grace", () => {
    const created = at("2026-03-10T00:00:00Z")
    const s = state({ schedule: every("10m"), graceSeconds: 60, createdAt: created }, { nextExpectedAt: created + 10 * MINUTE })
    const a = step(s, started("r1", created + 3 * MINUTE))
    expect(a.state.nextExpectedAt).toBe(created + 13 * MINUTE)
    expect(updates(a.effects)).toEqual([{ _tag: "UpdateMonitor", status: "RUNNING", nextExpectedAt: created + 13 * MINUTE }])
    const b = step(a.state, finished(created + 5 * MINUTE, { id: "r1", startInferred: false, durationMs: 2 * MINUTE }))
    expect(b.state.nextExpectedAt).toBe(created + 15 * MINUTE)
    expect(step(b.state, tick(created + 16 * MINUTE - 1)).effects).toEqual([])
    const c = step(b.state, tick(created + 16 * MINUTE))
    expect(raises(c.effects, "MISSED").map((e) => [e.at, e.details.expectedAt])).toEqual([
      [created + 16 * MINUTE, iso(created + 15 * MINUTE)]
    ])
    // the expected grid goes on while no ping comes
    expect(c.state.nextExpectedAt).toBe(created + 25 * MINUTE)
  })

  it("the first expected time comes from the monitors API (nextExpectedAt at creation)", () => {
    const created = at("2026-03-10T00:00:00Z")
    const s = state({ schedule: every("1h"), graceSeconds: 0, createdAt: created }, { nextExpectedAt: created + HOUR })
    expect(statusOf(s)).toBe("NEW")
    expect(nextDeadline(s)).toBe(created + HOUR)
    expect(raises(step(s, tick(created + HOUR)).effects, "MISSED").length).toBe(1)
  })
})

describe("Rules: catch-up after downtime", () => {
  const hourly = (persisted: Partial<PersistedState> = {}) =>
    state({ schedule: cron("0 * * * *") }, { nextExpectedAt: T, lastPingAt: T - HOUR + 10 * SECOND, ...persisted })

  it("raises MISSED once, for the newest occurrence whose grace ended, counting the others", () => {
    // down from 02:00 to 12:30: occurrences 02:00 … 12:00 (11) have all passed their grace
    const d = step(hourly(), tick(at("2026-03-10T12:30:00Z")))
    expect(raises(d.effects)).toEqual([{
      _tag: "RaiseIncident",
      type: "MISSED",
      severity: "HIGH",
      at: at("2026-03-10T12:05:00Z"),
      runId: null,
      details: {
        expectedAt: "2026-03-10T12:00:00.000Z",
        graceSeconds: 300,
        lastPingAt: "2026-03-10T01:00:10.000Z",
        missedOccurrences: 11
      }
    }])
    expect(d.state.nextExpectedAt).toBe(at("2026-03-10T13:00:00Z"))
    expect(updates(d.effects)).toEqual([{ _tag: "UpdateMonitor", status: "MISSED", nextExpectedAt: at("2026-03-10T13:00:00Z") }])
  })

  it("an occurrence still inside its grace is not counted", () => {
    const d = step(hourly(), tick(at("2026-03-10T12:03:00Z")))
    expect(raises(d.effects)[0]!.details).toMatchObject({ expectedAt: "2026-03-10T11:00:00.000Z", missedOccurrences: 10 })
    expect(d.state.nextExpectedAt).toBe(at("2026-03-10T12:00:00Z"))
  })

  it("a ping that arrives after the outage first settles what fell due, then counts", () => {
    const d = step(hourly(), success("r1", at("2026-03-10T12:00:30Z")))
    expect(raises(d.effects)[0]!.details).toMatchObject({ expectedAt: "2026-03-10T11:00:00.000Z", missedOccurrences: 10 })
    // …and being a success it resolves that MISSED at once; it accounted for 12:00
    expect(resolves(d.effects)).toEqual([{ _tag: "ResolveIncidents", types: ["MISSED"], at: at("2026-03-10T12:00:30Z"), reason: "a successful run" }])
    expect(d.state.nextExpectedAt).toBe(at("2026-03-10T13:00:00Z"))
    expect(statusOf(d.state)).toBe("OK")
  })

  it("occurrences whose grace ended inside a maintenance window are suppressed, one by one", () => {
    const ctx = windows([at("2026-03-10T03:00:00Z"), at("2026-03-10T06:00:00Z")])
    const d = step(hourly(), tick(at("2026-03-10T08:30:00Z")), ctx)
    // deadlines 02:05 … 08:05; 03:05, 04:05, 05:05 are inside the window
    expect(suppressed(d.effects, "MISSED").map((e) => iso(e.at))).toEqual([
      "2026-03-10T03:05:00.000Z",
      "2026-03-10T04:05:00.000Z",
      "2026-03-10T05:05:00.000Z"
    ])
    expect(raises(d.effects)[0]!.details).toMatchObject({ expectedAt: "2026-03-10T08:00:00.000Z", missedOccurrences: 4 })
  })

  it("a long outage is counted without enumerating every occurrence (cron and interval)", () => {
    const minutely = state({ schedule: cron("* * * * *"), graceSeconds: 30 }, { nextExpectedAt: T })
    const m = step(minutely, tick(T + 2 * DAY))
    // occurrences T … T + 2 days − 1 min have ended their grace: 2880
    expect(raises(m.effects)[0]!.details).toMatchObject({ expectedAt: iso(T + 2 * DAY - MINUTE), missedOccurrences: 2880 })
    expect(m.state.nextExpectedAt).toBe(T + 2 * DAY)

    const tenSeconds = state({ schedule: every("10s"), graceSeconds: 5 }, { nextExpectedAt: T })
    const i = step(tenSeconds, tick(T + DAY + 5 * SECOND))
    expect(raises(i.effects)[0]!.details).toMatchObject({ expectedAt: iso(T + DAY), missedOccurrences: 8641 })
    expect(i.state.nextExpectedAt).toBe(T + DAY + 10 * SECOND)
  })

  it("a restart with a deadline in the past fires at once (the deadline is before now)", () => {
    const s = hourly()
    expect(nextDeadline(s)).toBe(T + GRACE)
    expect(raises(step(s, tick(T + 3 * HOUR)).effects).length).toBe(1)
  })
})

describe("Rules: LATE", () => {
  const start = at("2026-03-10T02:00:05Z")

  it("maxRuntime: LATE exactly at start + maxRuntimeSeconds, once per run", () => {
    const s0 = step(daily({ maxRuntimeSeconds: 600 }), started("r1", start)).state
    expect(nextDeadline(s0)).toBe(start + 10 * MINUTE)
    expect(step(s0, tick(start + 10 * MINUTE - 1)).effects).toEqual([])
    const d = step(s0, tick(start + 10 * MINUTE))
    expect(d.effects).toEqual([
      {
        _tag: "RaiseIncident",
        type: "LATE",
        severity: "MEDIUM",
        at: start + 10 * MINUTE,
        runId: "r1",
        details: { runId: "r1", startedAt: "2026-03-10T02:00:05.000Z", limitMs: 600_000, rule: "maxRuntime" }
      },
      { _tag: "UpdateMonitor", status: "LATE", nextExpectedAt: at("2026-03-11T02:00:00Z") }
    ])
    expect(d.state.openRuns).toEqual([{ id: "r1", startedAt: start, lateReported: true }])
    expect(d.state.activeIncidents).toEqual([{ type: "LATE", status: "OPEN", runId: "r1" }])
    // once per run: the next deadline is the next occurrence's
    expect(nextDeadline(d.state)).toBe(at("2026-03-11T02:05:00Z"))
    expect(raises(step(d.state, tick(start + 5 * HOUR)).effects)).toEqual([])
  })

  it.each(["SUCCESS", "FAIL"] as const)("LATE resolves when its run finishes (%s)", (status) => {
    const s = simulate(daily({ maxRuntimeSeconds: 600 }), [started("r1", start)], start + HOUR).state
    const d = step(s, finished(start + 2 * HOUR, { id: "r1", status, startInferred: false, durationMs: 2 * HOUR }))
    expect(resolves(d.effects)[0]).toEqual({
      _tag: "ResolveIncidents",
      types: ["LATE"],
      at: start + 2 * HOUR,
      reason: "the late run finished"
    })
    expect(d.state.activeIncidents.some((a) => a.type === "LATE")).toBe(false)
    if (status === "FAIL") expect(raises(d.effects, "FAIL").length).toBe(1)
  })

  it("learned: with 20 durations and no maxRuntime, LATE at start + 2 × p99", () => {
    // 10 s, 20 s, … 200 s: p99 = 190 s + 0.81 × 10 s = 198.1 s; limit 396.2 s
    const durations = Array.from({ length: 20 }, (_, i) => (i + 1) * 10_000)
    const s = daily({}, { recentDurations: durations })
    expect(lateLimit(s.config, s.recentDurations)).toEqual({ limitMs: 396_200, rule: "learned" })
    const s0 = step(s, started("r1", start)).state
    expect(nextDeadline(s0)).toBe(start + 396_200)
    expect(step(s0, tick(start + 396_199)).effects).toEqual([])
    expect(raises(step(s0, tick(start + 396_200)).effects)).toEqual([{
      _tag: "RaiseIncident",
      type: "LATE",
      severity: "MEDIUM",
      at: start + 396_200,
      runId: "r1",
      details: { runId: "r1", startedAt: "2026-03-10T02:00:05.000Z", limitMs: 396_200, rule: "learned" }
    }])
  })

  it("learned: nothing before 20 durations; never below 60 s", () => {
    expect(lateLimit(config(), DurationHistory.from(Array.from({ length: 19 }, () => 1_000), DURATION_MEMORY))).toBeNull()
    const s = step(daily({}, { recentDurations: Array.from({ length: 19 }, () => 1_000) }), started("r1", start)).state
    expect(nextDeadline(s)).toBe(T + GRACE + DAY)
    expect(lateLimit(config(), DurationHistory.from(Array.from({ length: 20 }, () => 100), DURATION_MEMORY))).toEqual({ limitMs: 60_000, rule: "learned" })
  })

  it("two late runs: two occurrences of one LATE incident, resolved when neither is still open", () => {
    const s = simulate(daily({ maxRuntimeSeconds: 60 }), [started("r1", start), started("r2", start + 10 * SECOND)], start + HOUR)
    expect(raises(s.effects, "LATE").map((e) => e.runId)).toEqual(["r1", "r2"])
    expect(s.state.activeIncidents).toEqual([{ type: "LATE", status: "OPEN", runId: "r1" }])
    const one = step(s.state, finished(start + 2 * HOUR, { id: "r1", startInferred: false }))
    expect(resolves(one.effects)).toEqual([])
    const two = step(one.state, finished(start + 2 * HOUR + 1, { id: "r2", startInferred: false }))
    expect(resolves(two.effects).map((e) => e.types)).toEqual([["LATE"]])
  })
})

describe("Rules: FAIL", () => {
  it("raises FAIL with exactly exitCode, durationMs, output and expectedDurationMs (median)", () => {
    const s = daily({}, { recentDurations: [4_000, 1_000, 3_000, 2_000] })
    const d = step(s, failure("r1", T + 20 * SECOND, { exitCode: 127, durationMs: 9_000, output: "not found" }))
    expect(raises(d.effects)).toEqual([{
      _tag: "RaiseIncident",
      type: "FAIL",
      severity: "HIGH",
      at: T + 20 * SECOND,
      runId: "r1",
      details: { exitCode: 127, durationMs: 9_000, output: "not found", expectedDurationMs: 2_500 }
    }])
    expect(statusOf(d.state)).toBe("FAILING")
    expect(d.state.lastRunStatus).toBe("FAIL")
    // a failed run's duration is not learned
    expect(d.state.recentDurations.toArray()).toEqual([4_000, 1_000, 3_000, 2_000])
    // and the fail ping still accounts for the occurrence
    expect(d.state.nextExpectedAt).toBe(at("2026-03-11T02:00:00Z"))
  })

  it("expectedDurationMs is null without successful durations; missing fields are null", () => {
    const d = step(daily(), failure("r1", T, { exitCode: null, durationMs: null, output: null }))
    expect(raises(d.effects)[0]!.details).toEqual({ exitCode: null, durationMs: null, output: null, expectedDurationMs: null })
  })
})

describe("Rules: ANOMALY", () => {
  const steady = Array.from({ length: 20 }, () => 60_000)
  const judged = (durations: ReadonlyArray<number>, durationMs: number | null, over: Partial<MonitorConfig> = {}) =>
    step(daily(over, { recentDurations: durations }), success("r1", T + 10 * SECOND, durationMs))

  // spread = ln 1.25 (floor) for a constant job: z = ln(d / 60 s) / ln 1.25
  it.each([
    [150_000, "slow", "LOW", 4.11],
    [600_000, "slow", "MEDIUM", 10.32],
    [20_000, "fast", "LOW", -4.92],
    [0, "fast", "MEDIUM", -49.31]
  ] as const)("a run of %i ms after 20 runs of 60 s: %s, %s (z %d)", (durationMs, rule, severity, z) => {
    const d = judged(steady, durationMs)
    expect(raises(d.effects)).toEqual([{
      _tag: "RaiseIncident",
      type: "ANOMALY",
      severity,
      at: T + 10 * SECOND,
      runId: "r1",
      details: { rule, durationMs, medianMs: 60_000, z }
    }])
    // ANOMALY has no status of its own
    expect(statusOf(d.state)).toBe("OK")
  })

  it("inside the range: no ANOMALY (140 s is z 3.80; 25 s is z −3.92)", () => {
    expect(raises(judged(steady, 140_000).effects)).toEqual([])
    expect(raises(judged(steady, 25_000).effects)).toEqual([])
  })

  it("not judged before 20 successful durations; the run is judged against the durations before it", () => {
    expect(raises(judged(steady.slice(1), 600_000).effects)).toEqual([])
    const d = judged(steady.slice(1), 600_000)
    expect(d.state.recentDurations.length).toBe(20)
    expect(raises(step(d.state, success("r2", T + DAY, 600_000)).effects, "ANOMALY").length).toBe(1)
  })

  it("a run the loaded history holds already (kept) is judged without itself and not added again", () => {
    // 19 runs of 60 s and this run's own 600 s, loaded from the database after it was committed
    const loaded = daily({}, { recentDurations: [...steady.slice(1), 600_000] })
    const event = success("r1", T + 10 * SECOND, 600_000)
    const kept = step(loaded, { ...event, history: "kept" } as EngineEvent)
    // 19 earlier durations: not judged yet (counted twice, it would have been judged and flagged)
    expect(raises(kept.effects, "ANOMALY")).toEqual([])
    expect(kept.state.recentDurations.toArray()).toEqual([...steady.slice(1), 600_000])
    // too old for a full history: judged against it, not added
    const notKept = step(daily({}, { recentDurations: steady }), { ...event, history: "notKept" } as EngineEvent)
    expect(raises(notKept.effects, "ANOMALY").length).toBe(1)
    expect(notKept.state.recentDurations.toArray()).toEqual(steady)
  })

  it("durations are kept by the runs' start: a run that outlives a later started one takes its place", () => {
    let s = daily({}, { recentDurations: [1_000] })
    s = step(s, finished(T + 3 * MINUTE, { id: "b", startedAt: T + 2 * MINUTE, durationMs: 2_000 })).state
    s = step(s, finished(T + 4 * MINUTE, { id: "a", startedAt: T + MINUTE, durationMs: 3_000, startInferred: false })).state
    expect(s.recentDurations.toArray()).toEqual([1_000, 3_000, 2_000])
  })

  it("a constant job does not flag on millisecond jitter, and tiny jobs not on tens of ms", () => {
    expect(raises(judged(steady, 60_001).effects)).toEqual([])
    const tiny = Array.from({ length: 20 }, () => 5)
    expect(raises(judged(tiny, 90).effects)).toEqual([])
    expect(raises(judged(tiny, 120).effects, "ANOMALY").length).toBe(1)
  })

  it("SLA: the target percentile of recent durations including this run above maxDurationMs", () => {
    const history = [...Array.from({ length: 17 }, () => 60_000), 120_000, 120_000, 120_000]
    const sla = { durationTarget: "p95", maxDurationMs: 100_000 } as const
    // with 130 s: 21 values, p95 at rank 19 = 120 s > 100 s; the duration rule sees z 3.46 only
    const d = judged(history, 130_000, { sla })
    expect(raises(d.effects)).toEqual([{
      _tag: "RaiseIncident",
      type: "ANOMALY",
      severity: "LOW",
      at: T + 10 * SECOND,
      runId: "r1",
      details: { rule: "sla", durationTarget: "p95", maxDurationMs: 100_000, observedMs: 120_000 }
    }])
    // MEDIUM once the percentile is 1.5 × the limit
    expect(raises(judged(history, 130_000, { sla: { durationTarget: "p95", maxDurationMs: 80_000 } }).effects)[0]!.severity).toBe("MEDIUM")
    // met
    expect(raises(judged(history, 130_000, { sla: { durationTarget: "p95", maxDurationMs: 120_000 } }).effects)).toEqual([])
  })

  it("SLA: judged from 20 durations including this run", () => {
    const sla = { durationTarget: "p99", maxDurationMs: 1_000 } as const
    const nineteen = Array.from({ length: 18 }, () => 5_000)
    expect(raises(judged(nineteen, 5_000, { sla }).effects)).toEqual([])
    expect(raises(judged([...nineteen, 5_000], 5_000, { sla }).effects)[0]!.details).toEqual({
      rule: "sla",
      durationTarget: "p99",
      maxDurationMs: 1_000,
      observedMs: 5_000
    })
  })

  it("both rules: one ANOMALY, the more severe (the SLA on a tie)", () => {
    const sla = { durationTarget: "p95", maxDurationMs: 100_000 } as const
    const history = [...Array.from({ length: 17 }, () => 60_000), 120_000, 120_000, 120_000]
    const both = judged(history, 600_000, { sla })
    // duration rule MEDIUM (z 10.3) beats an SLA breach of 120 s (LOW)
    expect(raises(both.effects).map((e) => [e.severity, e.details.rule])).toEqual([["MEDIUM", "slow"]])
    const tie = judged(history, 150_000, { sla })
    expect(raises(tie.effects).map((e) => [e.severity, e.details.rule])).toEqual([["LOW", "sla"]])
  })

  it("resolves on the next successful run that is judged and not anomalous", () => {
    const a = judged(steady, 600_000).state
    expect(a.activeIncidents.map((i) => i.type)).toEqual(["ANOMALY"])
    // still anomalous: counted again, not resolved
    const again = step(a, success("r2", T + DAY, 600_000))
    expect(raises(again.effects, "ANOMALY").length).toBe(1)
    expect(resolves(again.effects)).toEqual([])
    // a success without duration cannot be judged: no resolution
    expect(resolves(step(a, success("r3", T + DAY, null)).effects)).toEqual([])
    // a normal one resolves it
    expect(resolves(step(a, success("r4", T + DAY, 61_000)).effects)).toEqual([{
      _tag: "ResolveIncidents",
      types: ["ANOMALY"],
      at: T + DAY,
      reason: "a run within the expected duration"
    }])
  })

  it("a failed run is never an ANOMALY", () => {
    expect(raises(step(daily({}, { recentDurations: steady }), failure("r1", T, { durationMs: 600_000 })).effects, "ANOMALY")).toEqual([])
  })
})

describe("Rules: dedup and auto-resolve", () => {
  it("a second occurrence raises again (the service counts it) but one incident stays active", () => {
    const r = simulate(daily(), [], T + DAY + GRACE)
    expect(raises(r.effects, "MISSED").map((e) => e.details.expectedAt)).toEqual([
      "2026-03-10T02:00:00.000Z",
      "2026-03-11T02:00:00.000Z"
    ])
    expect(r.state.activeIncidents).toEqual([{ type: "MISSED", status: "OPEN", runId: null }])

    const f = simulate(daily(), [failure("r1", T), failure("r2", T + DAY)], T + DAY)
    expect(raises(f.effects, "FAIL").length).toBe(2)
    expect(f.state.activeIncidents).toEqual([{ type: "FAIL", status: "OPEN", runId: "r1" }])
  })

  it("FAIL resolves exactly on the next successful run, not on a start ping or another failure", () => {
    let s = daily()
    const events = [
      failure("r1", T),
      failure("r2", T + DAY),
      started("r3", T + 2 * DAY),
      finished(T + 2 * DAY + MINUTE, { id: "r3", status: "SUCCESS", startInferred: false, durationMs: MINUTE })
    ]
    const resolvedAt: Array<number> = []
    for (const e of events) {
      const d = step(s, e)
      resolvedAt.push(...resolves(d.effects).map((r) => r.at))
      s = d.state
    }
    expect(resolvedAt).toEqual([T + 2 * DAY + MINUTE])
    expect(s.activeIncidents).toEqual([])
    expect(statusOf(s)).toBe("OK")
  })

  it("MISSED and FAIL resolve together; nothing resolves without autoResolve", () => {
    const both = daily({}, {
      activeIncidents: [{ type: "MISSED", status: "OPEN", runId: null }, { type: "FAIL", status: "ACKNOWLEDGED", runId: "r0" }]
    })
    expect(resolves(step(both, success("r1", T)).effects)).toEqual([
      { _tag: "ResolveIncidents", types: ["MISSED", "FAIL"], at: T, reason: "a successful run" }
    ])
    const manual = daily({ autoResolve: false }, { activeIncidents: [{ type: "FAIL", status: "OPEN", runId: "r0" }] })
    const d = step(manual, success("r1", T))
    expect(resolves(d.effects)).toEqual([])
    expect(statusOf(d.state)).toBe("FAILING")
  })

  it("a resolved incident never reopens: the next failure raises for a new one", () => {
    const r = simulate(daily(), [failure("r1", T), success("r2", T + HOUR), failure("r3", T + DAY)], T + DAY)
    expect(r.effects.filter((e) => e._tag !== "UpdateMonitor").map((e) => e._tag)).toEqual([
      "RaiseIncident",
      "ResolveIncidents",
      "RaiseIncident"
    ])
    expect(r.state.activeIncidents).toEqual([{ type: "FAIL", status: "OPEN", runId: "r3" }])
  })

  it("IncidentChanged: acknowledged stays active; resolved by a user leaves the state", () => {
    const s = step(daily(), failure("r1", T)).state
    const ack = step(s, { _tag: "IncidentChanged", type: "FAIL", status: "ACKNOWLEDGED", at: T + MINUTE })
    expect(ack.state.activeIncidents).toEqual([{ type: "FAIL", status: "ACKNOWLEDGED", runId: "r1" }])
    expect(ack.effects).toEqual([])
    const res = step(ack.state, { _tag: "IncidentChanged", type: "FAIL", status: "RESOLVED", at: T + 2 * MINUTE })
    expect(res.state.activeIncidents).toEqual([])
    // the last run failed: FAILING by the last run, no longer by the incident
    expect(res.effects).toEqual([])
    const missed = step(daily(), tick(T + GRACE)).state
    const gone = step(missed, { _tag: "IncidentChanged", type: "MISSED", status: "RESOLVED", at: T + HOUR })
    expect(gone.effects).toEqual([{ _tag: "UpdateMonitor", status: "OK", nextExpectedAt: at("2026-03-11T02:00:00Z") }])
  })
})

describe("Rules: paused monitors", () => {
  it("expects nothing, raises nothing, records pings", () => {
    const s = daily({ paused: true })
    expect(s.nextExpectedAt).toBeNull()
    expect(nextDeadline(s)).toBeNull()
    expect(statusOf(s)).toBe("PAUSED")
    const r = simulate(s, [failure("r1", T), started("r2", T + HOUR)], T + 3 * DAY)
    expect(r.effects.filter((e) => e._tag !== "UpdateMonitor")).toEqual([])
    expect(r.state.lastPingAt).toBe(T + HOUR)
    expect(r.state.lastRunStatus).toBe("FAIL")
    expect(statusOf(r.state)).toBe("PAUSED")
  })

  it("pause and resume through ConfigChanged: nothing that fell due while paused is held against the job", () => {
    const pausedAt = T - HOUR
    const p = step(daily(), { _tag: "ConfigChanged", config: config({ paused: true }), at: pausedAt })
    expect(p.effects).toEqual([{ _tag: "UpdateMonitor", status: "PAUSED", nextExpectedAt: null }])
    const resumedAt = at("2026-03-12T15:00:00Z")
    const r = step(p.state, { _tag: "ConfigChanged", config: config(), at: resumedAt })
    expect(r.effects).toEqual([{ _tag: "UpdateMonitor", status: "OK", nextExpectedAt: at("2026-03-13T02:00:00Z") }])
  })

  it("an open run past its limit at resume is LATE at the resume instant", () => {
    const s = simulate(daily({ paused: true, maxRuntimeSeconds: 60 }), [started("r1", T)], T + HOUR).state
    const r = step(s, { _tag: "ConfigChanged", config: config({ maxRuntimeSeconds: 60 }), at: T + HOUR })
    expect(raises(r.effects, "LATE").map((e) => e.at)).toEqual([T + HOUR])
  })
})

describe("Rules: maintenance windows", () => {
  const W = [T, T + HOUR] as const

  it("MISSED inside a window is Suppressed, the occurrence is consumed and not reported afterwards", () => {
    const r = simulate(daily(), [], T + 2 * HOUR, windows(W))
    expect(r.effects).toEqual([
      { _tag: "Suppressed", type: "MISSED", at: T + GRACE },
      { _tag: "UpdateMonitor", status: "OK", nextExpectedAt: at("2026-03-11T02:00:00Z") }
    ])
    expect(r.state.activeIncidents).toEqual([])
    expect(r.state.nextExpectedAt).toBe(at("2026-03-11T02:00:00Z"))
    // after the window: the next occurrence is judged normally
    const next = simulate(r.state, [], T + DAY + GRACE, windows(W))
    expect(raises(next.effects, "MISSED").length).toBe(1)
  })

  it("the moment that counts is the deadline, not when the Tick is handled", () => {
    // deadline 1 ms before the window starts, Tick handled inside it: reported
    const before = step(daily(), tick(T + GRACE + 10 * MINUTE), windows([T + GRACE + 1, T + HOUR]))
    expect(raises(before.effects, "MISSED").length).toBe(1)
    // deadline inside the window, Tick handled after it: suppressed
    const inside = step(daily(), tick(T + 2 * HOUR), windows(W))
    expect(suppressed(inside.effects, "MISSED").length).toBe(1)
    expect(raises(inside.effects)).toEqual([])
  })

  it("FAIL, LATE and ANOMALY inside a window are Suppressed", () => {
    const steady = Array.from({ length: 20 }, () => 60_000)
    const s = daily({ maxRuntimeSeconds: 60 }, { recentDurations: steady })
    const r = simulate(s, [
      failure("r1", T + MINUTE),
      started("r2", T + 2 * MINUTE),
      success("r3", T + 10 * MINUTE, 600_000)
    ], T + 2 * HOUR, windows(W))
    expect(r.effects.filter((e) => e._tag !== "UpdateMonitor").map((e) => e._tag === "Suppressed" ? e.type : e._tag)).toEqual([
      "FAIL",
      "LATE",
      "ANOMALY"
    ])
    expect(r.state.activeIncidents).toEqual([])
    // the late run is not reported after the window either
    expect(r.state.openRuns).toEqual([{ id: "r2", startedAt: T + 2 * MINUTE, lateReported: true }])
  })

  it("no auto-resolve inside a window; the first success after it resolves", () => {
    const s = step(daily(), failure("r1", T - 2 * MINUTE)).state
    const inside = step(s, success("r2", T + 30 * MINUTE), windows(W))
    expect(resolves(inside.effects)).toEqual([])
    expect(inside.state.activeIncidents.map((a) => a.type)).toEqual(["FAIL"])
    const after = step(inside.state, success("r3", T + 2 * HOUR), windows(W))
    expect(resolves(after.effects).map((e) => e.types)).toEqual([["FAIL"]])
  })

  it("a LATE whose run finishes inside a window stays open until a run finishes after it", () => {
    const s = simulate(daily({ maxRuntimeSeconds: 60 }), [started("r1", T - HOUR)], T - 50 * MINUTE).state
    expect(s.activeIncidents.map((a) => a.type)).toEqual(["LATE"])
    const inside = step(s, finished(T + MINUTE, { id: "r1", startInferred: false }), windows(W))
    expect(resolves(inside.effects)).toEqual([])
    const after = step(inside.state, success("r2", T + 2 * HOUR), windows(W))
    expect(resolves(after.effects).map((e) => e.types)).toEqual([["LATE"]])
  })
})

describe("Rules: ConfigChanged", () => {
  const change = (s: MonitorState, over: Partial<MonitorConfig>, t: number) =>
    step(s, { _tag: "ConfigChanged", config: { ...s.config, ...over }, at: t })

  it("a new cron schedule is expected afresh from the change", () => {
    const d = change(daily(), { schedule: cron("30 6 * * *", "Europe/London") }, at("2026-03-09T12:00:00Z"))
    // 10 March 06:30 GMT
    expect(d.state.nextExpectedAt).toBe(at("2026-03-10T06:30:00Z"))
    expect(updates(d.effects)).toEqual([{ _tag: "UpdateMonitor", status: "OK", nextExpectedAt: at("2026-03-10T06:30:00Z") }])
  })

  it("a new interval counts from the last ping, or from the change without one", () => {
    const s = daily({}, { lastPingAt: at("2026-03-09T11:00:00Z") })
    expect(change(s, { schedule: every("2h") }, at("2026-03-09T12:00:00Z")).state.nextExpectedAt).toBe(at("2026-03-09T13:00:00Z"))
    const fresh = daily({}, { lastPingAt: null, lastRunStatus: null })
    expect(change(fresh, { schedule: every("2h") }, at("2026-03-09T12:00:00Z")).state.nextExpectedAt).toBe(at("2026-03-09T14:00:00Z"))
  })

  it("a longer grace moves the pending deadline; a shorter one already past raises at the change", () => {
    const longer = change(daily(), { graceSeconds: 3_600 }, T - HOUR)
    expect(longer.effects).toEqual([])
    expect(nextDeadline(longer.state)).toBe(T + HOUR)
    expect(step(longer.state, tick(T + GRACE)).effects).toEqual([])

    const shorter = change(daily({ graceSeconds: 3_600 }), { graceSeconds: 60 }, T + 10 * MINUTE)
    expect(raises(shorter.effects, "MISSED").map((e) => e.at)).toEqual([T + 10 * MINUTE])
  })

  it("maxRuntime applies to open runs", () => {
    const s = step(daily(), started("r1", T)).state
    expect(nextDeadline(s)).toBe(at("2026-03-11T02:05:00Z"))
    const set = change(s, { maxRuntimeSeconds: 1_800 }, T + 10 * MINUTE)
    expect(nextDeadline(set.state)).toBe(T + 30 * MINUTE)
    const past = change(s, { maxRuntimeSeconds: 300 }, T + 10 * MINUTE)
    expect(raises(past.effects, "LATE").map((e) => e.at)).toEqual([T + 10 * MINUTE])
  })

  it("other settings change nothing that is pending", () => {
    const d = change(daily(), { name: "renamed", sla: { durationTarget: "p99", maxDurationMs: 5_000 } }, T - HOUR)
    expect(d.effects).toEqual([])
    expect(d.state.nextExpectedAt).toBe(T)
  })
})

describe("Rules: status and state", () => {
  const inc = (type: ActiveIncident["type"], status: ActiveIncident["status"] = "OPEN"): ActiveIncident => ({ type, status, runId: null })

  it.each([
    ["paused", { paused: true }, { activeIncidents: [inc("FAIL")] }, "PAUSED"],
    ["no ping yet", {}, {}, "NEW"],
    ["last run succeeded", {}, { lastPingAt: T, lastRunStatus: "SUCCESS" }, "OK"],
    ["last run failed", {}, { lastPingAt: T, lastRunStatus: "FAIL" }, "FAILING"],
    ["a run is open", {}, { lastPingAt: T, lastRunStatus: "FAIL", openRuns: [{ id: "r", startedAt: T, lateReported: false }] }, "RUNNING"],
    ["MISSED then FAIL: the newest", {}, { activeIncidents: [inc("MISSED"), inc("FAIL")] }, "FAILING"],
    ["FAIL then MISSED: the newest", {}, { activeIncidents: [inc("FAIL"), inc("MISSED", "ACKNOWLEDGED")] }, "MISSED"],
    ["LATE", {}, { activeIncidents: [inc("LATE")] }, "LATE"],
    ["ANOMALY falls through to the older incident", {}, { lastPingAt: T, lastRunStatus: "SUCCESS", activeIncidents: [inc("LATE"), inc("ANOMALY")] }, "LATE"],
    ["ANOMALY alone", {}, { lastPingAt: T, lastRunStatus: "SUCCESS", activeIncidents: [inc("ANOMALY")] }, "OK"]
  ] as const)("statusOf: %s", (_label, over, persisted, expected) => {
    expect(statusOf(state(over, persisted as Partial<PersistedState>))).toBe(expected)
  })

  it("initialState: one active incident per type; expected time from the database, else after the last ping", () => {
    const s = state({}, {
      nextExpectedAt: null,
      lastPingAt: at("2026-03-09T02:00:10Z"),
      activeIncidents: [inc("FAIL"), inc("MISSED"), { type: "FAIL", status: "ACKNOWLEDGED", runId: "x" }],
      recentDurations: [1, Number.NaN, -5, 3]
    })
    expect(s.activeIncidents).toEqual([inc("MISSED"), { type: "FAIL", status: "ACKNOWLEDGED", runId: "x" }])
    expect(s.nextExpectedAt).toBe(at("2026-03-10T02:00:00Z"))
    expect(s.recentDurations.toArray()).toEqual([1, 3])
  })

  it("recentDurations keeps the last 200 successful durations", () => {
    let s = daily({}, { recentDurations: Array.from({ length: 200 }, (_, i) => 1_000 + i) })
    s = step(s, success("a", T, 5_000)).state
    expect(s.recentDurations.length).toBe(200)
    expect(s.recentDurations.toArray()[0]).toBe(1_001)
    expect(s.recentDurations.toArray()[199]).toBe(5_000)
    s = step(s, success("b", T + DAY, null)).state
    expect(s.recentDurations.toArray()[199]).toBe(5_000)
  })

  it("nextDeadline: the earliest of the occurrence and the unreported LATE deadlines", () => {
    const s = daily({ maxRuntimeSeconds: 60 }, {
      openRuns: [
        { id: "a", startedAt: T - 10 * MINUTE, lateReported: true },
        { id: "b", startedAt: T - 3 * MINUTE, lateReported: false }
      ]
    })
    expect(nextDeadline(s)).toBe(T - 2 * MINUTE)
    expect(nextDeadline(state({ schedule: cron("0 0 29 2 *") }, { nextExpectedAt: null }))).toBe(at("2028-02-29T00:05:00Z"))
  })

  it("an early Tick is harmless: no effects, same state, same deadline", () => {
    const s = step(daily({ maxRuntimeSeconds: 600 }), started("r1", T - HOUR)).state
    const deadline = nextDeadline(s)!
    const d = step(s, tick(deadline - 1))
    expect(d.effects).toEqual([])
    expect(d.state).toEqual(s)
    expect(nextDeadline(d.state)).toBe(deadline)
  })
})

// ---------------------------------------------------------------------------
// Cron across DST changes. Offsets: New York EST −5 / EDT −4 (8 Mar, 1 Nov 2026); London GMT 0 /
// BST +1 (29 Mar, 25 Oct 2026); Sydney AEST +10 / AEDT +11 (5 Apr back, 4 Oct forward 2026);
// Kolkata IST +5:30, no DST; Chatham +12:45 / +13:45 (5 Apr back at 03:45, 27 Sep forward at
// 02:45 2026). Each case lists the expected instants of three consecutive days, the middle one
// being the change; `skipped` is the second pass of a repeated local time, never expected.
// ---------------------------------------------------------------------------

const DST_CASES: ReadonlyArray<{
  readonly name: string
  readonly zone: string
  readonly expression: string
  readonly expected: readonly [string, string, string]
  readonly secondPass?: string
}> = [
  {
    name: "New York spring forward: 02:30 → 03:00 EDT",
    zone: "America/New_York",
    expression: "30 2 * * *",
    expected: ["2026-03-07T07:30:00Z", "2026-03-08T07:00:00Z", "2026-03-09T06:30:00Z"]
  },
  {
    name: "New York fall back: 01:30 once, EDT",
    zone: "America/New_York",
    expression: "30 1 * * *",
    expected: ["2026-10-31T05:30:00Z", "2026-11-01T05:30:00Z", "2026-11-02T06:30:00Z"],
    secondPass: "2026-11-01T06:30:00Z"
  },
  {
    name: "London spring forward: 01:30 → 02:00 BST",
    zone: "Europe/London",
    expression: "30 1 * * *",
    expected: ["2026-03-28T01:30:00Z", "2026-03-29T01:00:00Z", "2026-03-30T00:30:00Z"]
  },
  {
    name: "London fall back: 01:30 once, BST",
    zone: "Europe/London",
    expression: "30 1 * * *",
    expected: ["2026-10-24T00:30:00Z", "2026-10-25T00:30:00Z", "2026-10-26T01:30:00Z"],
    secondPass: "2026-10-25T01:30:00Z"
  },
  {
    name: "Sydney spring forward: 02:30 → 03:00 AEDT",
    zone: "Australia/Sydney",
    expression: "30 2 * * *",
    expected: ["2026-10-02T16:30:00Z", "2026-10-03T16:00:00Z", "2026-10-04T15:30:00Z"]
  },
  {
    name: "Sydney fall back: 02:30 once, AEDT",
    zone: "Australia/Sydney",
    expression: "30 2 * * *",
    expected: ["2026-04-03T15:30:00Z", "2026-04-04T15:30:00Z", "2026-04-05T16:30:00Z"],
    secondPass: "2026-04-04T16:30:00Z"
  },
  {
    name: "Kolkata, no DST, on New York's change day",
    zone: "Asia/Kolkata",
    expression: "30 2 * * *",
    expected: ["2026-03-06T21:00:00Z", "2026-03-07T21:00:00Z", "2026-03-08T21:00:00Z"]
  },
  {
    name: "Chatham spring forward: 03:00 → 03:45 CHADT",
    zone: "Pacific/Chatham",
    expression: "0 3 * * *",
    expected: ["2026-09-25T14:15:00Z", "2026-09-26T14:00:00Z", "2026-09-27T13:15:00Z"]
  },
  {
    name: "Chatham fall back: 03:00 once, CHADT",
    zone: "Pacific/Chatham",
    expression: "0 3 * * *",
    expected: ["2026-04-03T13:15:00Z", "2026-04-04T13:15:00Z", "2026-04-05T14:15:00Z"],
    secondPass: "2026-04-04T14:15:00Z"
  }
]

describe("Rules: cron across DST changes", () => {
  const grace = 10 * MINUTE
  const dstState = (c: (typeof DST_CASES)[number]) =>
    state({ schedule: cron(c.expression, c.zone), graceSeconds: 600 }, { nextExpectedAt: at(c.expected[0]), lastPingAt: at(c.expected[0]) - DAY })

  it.each(DST_CASES)("$name: pings at the expected instants, no MISSED", (c) => {
    const [a, b, cc] = c.expected.map(at) as [number, number, number]
    let s = dstState(c)
    const effects: Array<EngineEffect> = []
    const seen: Array<number | null> = []
    for (const [i, t] of [a, b, cc].entries()) {
      const r = simulate(s, [started(`r${i}`, t + 5 * SECOND), finished(t + 40 * SECOND, { id: `r${i}`, startInferred: false })], t + 40 * SECOND)
      effects.push(...r.effects)
      s = r.state
      seen.push(s.nextExpectedAt)
    }
    // each day's run accounted for exactly that day's expected instant
    expect(seen.slice(0, 2)).toEqual([b, cc])
    // tick well past the second pass of a repeated hour (and its grace)
    const tail = simulate(s, [], cc + 12 * HOUR)
    effects.push(...tail.effects)
    expect(raises(effects)).toEqual([])
  })

  it.each(DST_CASES)("$name: no ping on the change day, exactly one MISSED at expected + grace", (c) => {
    const [a, b, cc] = c.expected.map(at) as [number, number, number]
    const r = simulate(dstState(c), [success("r0", a + 20 * SECOND), success("r2", cc + 20 * SECOND)], cc + 12 * HOUR)
    const missed = raises(r.effects, "MISSED")
    expect(missed.map((e) => [e.at, e.details.expectedAt])).toEqual([[b + grace, iso(b)]])
    // and the next day's success resolved it
    expect(resolves(r.effects).map((e) => [e.at, e.types])).toEqual([[cc + 20 * SECOND, ["MISSED"]]])
  })

  it.each(DST_CASES.filter((c) => c.secondPass !== undefined))("$name: the second pass is not expected", (c) => {
    const b = at(c.expected[1])
    const s = simulate(dstState(c), [success("r0", at(c.expected[0])), success("r1", b + 30 * SECOND)], b + 30 * SECOND).state
    // after the first pass the next expected instant is the next day, not the second pass
    expect(s.nextExpectedAt).toBe(at(c.expected[2]))
    expect(raises(simulate(s, [], at(c.secondPass!) + 2 * HOUR).effects)).toEqual([])
  })
})
