import { describe, expect, it } from "@effect/vitest"
import { Either } from "effect"
import {
  type EngineEffect,
  type EngineEvent,
  type FinishedRun,
  MAX_THRESHOLD,
  type MonitorConfig,
  type MonitorState,
  NO_STREAK,
  type RulesContext,
  type Streak
} from "../../src/Engine/Model.js"
import {
  afterFailure,
  afterMisses,
  afterSuccess,
  decide,
  initialState,
  nextDeadline,
  type PersistedState,
  statusOf
} from "../../src/Engine/Rules.js"
import { validateSchedule } from "../../src/Monitors/Schedule.js"

// failureThreshold and recoveryThreshold (docs/incident-rules.md#thresholds). Instants written out by hand (UTC).

const MINUTE = 60_000
const HOUR = 60 * MINUTE
const at = (s: string): number => Date.parse(s)

/** An hourly job at :00 with a 5-minute grace: occurrence k of the day is expected at 0k:00, MISSED at 0k:05. */
const config = (over: Partial<MonitorConfig> = {}): MonitorConfig => ({
  id: "mon-t",
  orgId: "org-t",
  name: "hourly export",
  schedule: Either.getOrThrow(validateSchedule({ type: "cron", expression: "0 * * * *", timezone: "UTC" })),
  graceSeconds: 300,
  maxRuntimeSeconds: null,
  sla: null,
  autoResolve: true,
  paused: false,
  createdAt: at("2026-03-10T00:00:00Z"),
  ...over
})

const persisted = (over: Partial<PersistedState> = {}): PersistedState => ({
  nextExpectedAt: at("2026-03-10T01:00:00Z"),
  lastPingAt: null,
  openRuns: [],
  activeIncidents: [],
  recentDurations: [],
  lastRunStatus: null,
  ...over
})

const state = (over: Partial<MonitorConfig> = {}, p: Partial<PersistedState> = {}): MonitorState =>
  initialState(config(over), persisted(p))

const none: RulesContext = { inMaintenance: () => false }
const windows = (...ranges: ReadonlyArray<readonly [string, string]>): RulesContext => ({
  inMaintenance: (_id, t) => ranges.some(([a, b]) => t >= at(a) && t < at(b))
})

/** The hour k of 2026-03-10 (UTC), plus minutes. */
const hour = (k: number, minutes = 0) => at("2026-03-10T00:00:00Z") + k * HOUR + minutes * MINUTE

const run = (id: string, t: number, status: "SUCCESS" | "FAIL", startInferred = true): EngineEvent => {
  const r: FinishedRun = {
    id,
    status,
    startedAt: t - 1_000,
    finishedAt: t,
    durationMs: 1_000,
    exitCode: status === "FAIL" ? 1 : 0,
    output: status === "FAIL" ? "boom" : null,
    startInferred
  }
  return { _tag: "RunFinished", at: t, run: r }
}
/** The job of hour k succeeds (or fails) a minute after its expected time. */
const ok = (k: number) => run(`ok-${k}`, hour(k, 1), "SUCCESS")
const fail = (k: number) => run(`fail-${k}`, hour(k, 1), "FAIL")
/** The job of hour k never pings: the Tick at its deadline. */
const miss = (k: number): EngineEvent => ({ _tag: "Tick", at: hour(k, 5) })

type Raise = Extract<EngineEffect, { _tag: "RaiseIncident" }>
type Resolve = Extract<EngineEffect, { _tag: "ResolveIncidents" }>

/** Feeds the events in order; each step's effects, status and streak. */
const feed = (s0: MonitorState, events: ReadonlyArray<EngineEvent>, ctx: RulesContext = none) => {
  let s = s0
  return events.map((event) => {
    const d = decide(s, event, ctx)
    s = d.state
    return {
      effects: d.effects,
      raised: d.effects.filter((e): e is Raise => e._tag === "RaiseIncident"),
      resolved: d.effects.filter((e): e is Resolve => e._tag === "ResolveIncidents"),
      suppressed: d.effects.filter((e) => e._tag === "Suppressed"),
      state: d.state,
      status: statusOf(d.state)
    }
  })
}

describe("failureThreshold", () => {
  it("with 3, FAIL opens on the third failed run in a row, not before; the status is FAILING from the first", () => {
    const steps = feed(state({ failureThreshold: 3 }), [fail(1), fail(2), fail(3), fail(4)])
    expect(steps.map((s) => s.raised.length)).toEqual([0, 0, 1, 1])
    expect(steps.map((s) => s.status)).toEqual(["FAILING", "FAILING", "FAILING", "FAILING"])
    expect(steps.map((s) => s.state.streak.failures)).toEqual([1, 2, 3, 4])
    expect(steps[1]!.state.activeIncidents).toEqual([])
    const opened = steps[2]!.raised[0]!
    expect(opened).toMatchObject({ type: "FAIL", severity: "HIGH", at: hour(3, 1), runId: "fail-3" })
    // The details name the threshold (only when it is above 1: today's details are unchanged).
    expect(opened.details).toEqual({ exitCode: 1, durationMs: 1_000, output: "boom", expectedDurationMs: null, failureThreshold: 3 })
    // The fourth is one more occurrence of the same incident (the service counts it).
    expect(steps[3]!.raised[0]!.type).toBe("FAIL")
  })

  it("with the default (absent) or 1, the first failure opens FAIL with today's details exactly", () => {
    for (const threshold of [undefined, 1]) {
      const [first] = feed(state(threshold === undefined ? {} : { failureThreshold: threshold }), [fail(1)])
      expect(first!.raised.map((r) => r.details)).toEqual([{ exitCode: 1, durationMs: 1_000, output: "boom", expectedDurationMs: null }])
    }
  })

  it("a successful run starts the count over", () => {
    const steps = feed(state({ failureThreshold: 3 }), [fail(1), fail(2), ok(3), fail(4), fail(5), fail(6)])
    expect(steps.map((s) => s.raised.length)).toEqual([0, 0, 0, 0, 0, 1])
    expect(steps[2]!.status).toBe("OK")
  })

  it("failed runs and missed occurrences count together; the incident is of the kind that reached the threshold", () => {
    const steps = feed(state({ failureThreshold: 3 }), [miss(1), fail(2), miss(3), fail(4)])
    expect(steps.map((s) => s.raised.map((r) => r.type))).toEqual([[], [], ["MISSED"], ["FAIL"]])
    // Below the threshold the status still tells what happened: MISSED, then FAILING (the last run).
    expect(steps.map((s) => s.status)).toEqual(["MISSED", "FAILING", "MISSED", "FAILING"])
    expect(steps[2]!.raised[0]!.details).toEqual({
      expectedAt: "2026-03-10T03:00:00.000Z",
      graceSeconds: 300,
      lastPingAt: "2026-03-10T02:01:00.000Z",
      missedOccurrences: 1,
      failureThreshold: 3
    })
    expect(steps[0]!.effects).toEqual([{ _tag: "UpdateMonitor", status: "MISSED", nextExpectedAt: hour(2) }])
  })

  it("a missed occurrence below the threshold shows MISSED until a run starts or finishes", () => {
    const s1 = feed(state({ failureThreshold: 2 }), [miss(1)])[0]!.state
    expect(statusOf(s1)).toBe("MISSED")
    expect(s1.activeIncidents).toEqual([])
    const started = decide(s1, { _tag: "RunStarted", runId: "r", at: hour(2) }, none)
    expect(statusOf(started.state)).toBe("RUNNING")
    const done = decide(started.state, run("r", hour(2, 3), "SUCCESS", false), none)
    expect(statusOf(done.state)).toBe("OK")
    expect(done.state.streak).toEqual({ failures: 0, successes: 1, missedBelowThreshold: false })
  })

  it("after a long outage, one MISSED stands for the occurrences from the threshold on", () => {
    // Last seen at 00:01; the next Tick comes at 11:30: 01:00 … 11:00 are missed (11 occurrences).
    const s0 = state({ failureThreshold: 3 }, { lastPingAt: hour(0, 1) })
    const [d] = feed(s0, [{ _tag: "Tick", at: hour(11, 30) }])
    expect(d!.raised).toHaveLength(1)
    expect(d!.raised[0]!.details).toMatchObject({ expectedAt: "2026-03-10T11:00:00.000Z", missedOccurrences: 9, failureThreshold: 3 })
    expect(d!.raised[0]!.at).toBe(hour(11, 5))
    expect(d!.state.streak).toEqual({ failures: 11, successes: 0, missedBelowThreshold: false })
  })

  it("a long outage shorter than the threshold opens nothing and shows MISSED", () => {
    const [d] = feed(state({ failureThreshold: 5 }), [{ _tag: "Tick", at: hour(4, 30) }])
    expect(d!.raised).toEqual([])
    expect(d!.status).toBe("MISSED")
    expect(d!.state.streak.failures).toBe(4)
    // The fifth opens it.
    const [next] = feed(d!.state, [miss(5)])
    expect(next!.raised.map((r) => [r.type, r.details.missedOccurrences])).toEqual([["MISSED", 1]])
  })

  it("inside a maintenance window failures are not counted; only one that would have reached the threshold is Suppressed", () => {
    // Window 02:30–05:30: the failures of 03:01 and 04:01 and the miss of 05:05 are inside it.
    const ctx = windows(["2026-03-10T02:30:00Z", "2026-03-10T05:30:00Z"])
    const steps = feed(state({ failureThreshold: 3 }), [fail(1), fail(2), fail(3), fail(4), miss(5), fail(6)], ctx)
    expect(steps.map((s) => s.raised.length)).toEqual([0, 0, 0, 0, 0, 1])
    expect(steps.map((s) => s.suppressed.map((e: any) => e.type))).toEqual([[], [], ["FAIL"], ["FAIL"], ["MISSED"], []])
    expect(steps.map((s) => s.state.streak.failures)).toEqual([1, 2, 2, 2, 2, 3])
    // Below the threshold, a failure inside the window is neither counted nor suppressed.
    const quiet = feed(state({ failureThreshold: 3 }, { nextExpectedAt: hour(3) }), [fail(3)], ctx)
    expect(quiet[0]!.effects.filter((e) => e._tag !== "UpdateMonitor")).toEqual([])
    expect(quiet[0]!.state.streak).toEqual(NO_STREAK)
  })

  it("resumed, a miss from before the pause no longer decides the status", () => {
    const missed = feed(state({ failureThreshold: 3 }, { lastRunStatus: "SUCCESS", lastPingAt: hour(0, 1) }), [miss(1)])[0]!.state
    expect(statusOf(missed)).toBe("MISSED")
    const paused = decide(missed, { _tag: "ConfigChanged", config: config({ failureThreshold: 3, paused: true }), at: hour(1, 10) }, none)
    const resumed = decide(paused.state, { _tag: "ConfigChanged", config: config({ failureThreshold: 3 }), at: hour(1, 20) }, none)
    expect(statusOf(resumed.state)).toBe("OK")
    // The count goes on: two more misses open MISSED.
    const steps = feed(resumed.state, [miss(2), miss(3)])
    expect(steps.map((s) => s.raised.map((r) => r.type))).toEqual([[], ["MISSED"]])
  })

  it("paused: failures are not counted", () => {
    const steps = feed(state({ failureThreshold: 2, paused: true }), [fail(1), fail(2)])
    expect(steps.map((s) => s.raised.length)).toEqual([0, 0])
    expect(steps[1]!.state.streak).toEqual(NO_STREAK)
  })

  it("a lower threshold applies from the next failure; a user's resolve does not reset the count", () => {
    const s2 = feed(state({ failureThreshold: 5 }), [fail(1), fail(2)])[1]!.state
    const changed = decide(s2, { _tag: "ConfigChanged", config: config({ failureThreshold: 2 }), at: hour(2, 30) }, none)
    expect(changed.effects.filter((e) => e._tag === "RaiseIncident")).toEqual([])
    const [third] = feed(changed.state, [fail(3)])
    expect(third!.raised.map((r) => r.type)).toEqual(["FAIL"])
    const resolved = decide(third!.state, { _tag: "IncidentChanged", type: "FAIL", status: "RESOLVED", at: hour(3, 30) }, none)
    const [fourth] = feed(resolved.state, [fail(4)])
    expect(fourth!.raised.map((r) => r.type)).toEqual(["FAIL"])
  })
})

describe("recoveryThreshold", () => {
  const failing = (over: Partial<MonitorConfig>) => feed(state(over), [fail(1)])[0]!.state

  it("with 3, an open FAIL resolves on the third successful run in a row, not before", () => {
    const steps = feed(failing({ recoveryThreshold: 3 }), [ok(2), ok(3), ok(4), ok(5)])
    expect(steps.map((s) => s.resolved.length)).toEqual([0, 0, 1, 0])
    expect(steps[2]!.resolved[0]).toEqual({ _tag: "ResolveIncidents", types: ["FAIL"], at: hour(4, 1), reason: "3 successful runs in a row" })
    // The incident decides the status until it resolves.
    expect(steps.map((s) => s.status)).toEqual(["FAILING", "FAILING", "OK", "OK"])
  })

  it("with 1 (the default), the first success resolves with today's reason", () => {
    const [d] = feed(failing({}), [ok(2)])
    expect(d!.resolved).toEqual([{ _tag: "ResolveIncidents", types: ["FAIL"], at: hour(2, 1), reason: "a successful run" }])
  })

  it("a failed run or a missed occurrence in between starts the count over", () => {
    const steps = feed(failing({ recoveryThreshold: 2 }), [ok(2), fail(3), ok(4), miss(5), ok(6), ok(7)])
    expect(steps.map((s) => s.resolved.length)).toEqual([0, 0, 0, 0, 0, 1])
    // MISSED (opened at 05:05) and FAIL resolve together.
    expect(steps[5]!.resolved[0]!.types).toEqual(["MISSED", "FAIL"])
  })

  it("successes inside a maintenance window count, but the incident resolves at the first success after it", () => {
    const ctx = windows(["2026-03-10T01:30:00Z", "2026-03-10T03:30:00Z"])
    const steps = feed(failing({ recoveryThreshold: 2 }), [ok(2), ok(3), ok(4)], ctx)
    expect(steps.map((s) => s.resolved.length)).toEqual([0, 0, 1])
    expect(steps.map((s) => s.state.streak.successes)).toEqual([1, 2, 3])
  })

  it("without autoResolve nothing resolves, whatever the count", () => {
    const steps = feed(failing({ recoveryThreshold: 2, autoResolve: false }), [ok(2), ok(3), ok(4)])
    expect(steps.flatMap((s) => s.resolved)).toEqual([])
  })
})

describe("the streak", () => {
  it("stops at MAX_THRESHOLD and is then the same object (nothing to write)", () => {
    let s: Streak = NO_STREAK
    for (let i = 0; i < MAX_THRESHOLD + 5; i++) s = afterSuccess(s)
    expect(s).toEqual({ failures: 0, successes: MAX_THRESHOLD, missedBelowThreshold: false })
    expect(afterSuccess(s)).toBe(s)
    let f: Streak = NO_STREAK
    for (let i = 0; i < MAX_THRESHOLD + 5; i++) f = afterFailure(f, "MISSED", 3)
    expect(f).toEqual({ failures: MAX_THRESHOLD, successes: 0, missedBelowThreshold: false })
    expect(afterFailure(f, "MISSED", 3)).toBe(f)
  })

  it("counts a long run of misses like one by one", () => {
    for (const threshold of [1, 2, 5, 100]) {
      for (const start of [NO_STREAK, { failures: 3, successes: 0, missedBelowThreshold: false }]) {
        for (const count of [1, 2, 4, 7, 150]) {
          let s = start
          let reached = 0
          for (let i = 0; i < count; i++) {
            s = afterFailure(s, "MISSED", threshold)
            if (s.failures >= threshold) reached++
          }
          expect(afterMisses(start, count, threshold)).toEqual({ streak: s, reached })
        }
      }
    }
  })

  it("rebuilt from the database, the state goes on counting and keeps its status", () => {
    const s = state({ failureThreshold: 3, recoveryThreshold: 2 }, { streak: { failures: 2, successes: 0, missedBelowThreshold: true } })
    expect(statusOf(s)).toBe("MISSED")
    expect(nextDeadline(s)).toBe(hour(1, 5))
    const [third] = feed(s, [miss(1)])
    expect(third!.raised.map((r) => r.type)).toEqual(["MISSED"])
    // Out-of-range counts from the database are clamped.
    expect(state({}, { streak: { failures: 5_000, successes: -3, missedBelowThreshold: false } }).streak)
      .toEqual({ failures: MAX_THRESHOLD, successes: 0, missedBelowThreshold: false })
  })
})
