import { describe, expect, it } from "@effect/vitest"
import { Either, FastCheck } from "effect"
import type { EngineEffect, EngineEvent, IncidentType, MonitorState, RulesContext } from "../../src/Engine/Model.js"
import { decide, initialState, nextDeadline, statusOf } from "../../src/Engine/Rules.js"
import { nextOccurrence, type Schedule, validateSchedule } from "../../src/Monitors/Schedule.js"

/**
 * failureThreshold and recoveryThreshold (docs/incident-rules.md#thresholds) against a reference
 * written from the page: random schedules (cron in zones around their DST changes, intervals),
 * random thresholds, random outcomes per occurrence (success, failure, no ping at all; lone pings
 * or start and finish), random maintenance windows, fed to the rules the way the actor does (a
 * Tick at each deadline, sparse Ticks, or none until the end).
 */

const SCHEDULES: ReadonlyArray<readonly [Parameters<typeof validateSchedule>[0], string]> = [
  [{ type: "cron", expression: "0 * * * *", timezone: "UTC" }, "2026-06-01T00:00:00Z"],
  [{ type: "cron", expression: "*/15 * * * *", timezone: "America/New_York" }, "2026-03-08T06:00:00Z"],
  [{ type: "cron", expression: "30 1 * * *", timezone: "Europe/London" }, "2026-10-20T00:00:00Z"],
  [{ type: "cron", expression: "0 */6 * * *", timezone: "Australia/Sydney" }, "2026-10-02T00:00:00Z"],
  [{ type: "interval", expression: "10m" }, "2026-06-01T00:00:00Z"],
  [{ type: "interval", expression: "1h" }, "2026-06-01T00:00:00Z"]
]

type Kind = "success" | "fail" | "miss" | "startSuccess" | "startFail"

const scenarioArb = (options: { readonly windows: boolean; readonly autoResolve?: boolean }) =>
  FastCheck.record({
    schedule: FastCheck.constantFrom(...SCHEDULES),
    failureThreshold: FastCheck.oneof(FastCheck.constant(1), FastCheck.integer({ min: 1, max: 6 })),
    recoveryThreshold: FastCheck.oneof(FastCheck.constant(1), FastCheck.integer({ min: 1, max: 6 })),
    autoResolve: options.autoResolve === undefined ? FastCheck.boolean() : FastCheck.constant(options.autoResolve),
    graceFraction: FastCheck.double({ min: 0.05, max: 0.4, noNaN: true }),
    outcomes: FastCheck.array(
      FastCheck.record({
        // failures and misses in runs, so that thresholds are reached and recovered from
        kind: FastCheck.constantFrom<Kind>("success", "fail", "fail", "miss", "miss", "startSuccess", "startFail"),
        jitter: FastCheck.double({ min: 0, max: 1, maxExcluded: true, noNaN: true }),
        duration: FastCheck.double({ min: 0, max: 1, noNaN: true })
      }),
      { minLength: 3, maxLength: 30 }
    ),
    windows: options.windows
      ? FastCheck.array(FastCheck.tuple(FastCheck.double({ min: 0, max: 1, noNaN: true }), FastCheck.double({ min: 0, max: 0.3, noNaN: true })), { maxLength: 2 })
      : FastCheck.constant([] as Array<[number, number]>),
    ticks: FastCheck.constantFrom("every", "every", "sparse", "none") as FastCheck.Arbitrary<"every" | "sparse" | "none">,
    restartAt: FastCheck.double({ min: 0, max: 1, maxExcluded: true, noNaN: true })
  })
type Scenario = ReturnType<typeof scenarioArb> extends FastCheck.Arbitrary<infer S> ? S : never

/** One occurrence's outcome: what happened and when the rules learn it (the finish, or the grace deadline). */
interface Outcome {
  readonly kind: "success" | "fail" | "miss"
  readonly at: number
}

interface Timeline {
  readonly state: MonitorState
  readonly events: ReadonlyArray<EngineEvent>
  readonly outcomes: ReadonlyArray<Outcome>
  readonly end: number
  readonly ctx: RulesContext
  readonly inMaintenance: (t: number) => boolean
}

const period = (schedule: Schedule, from: number): number => {
  const a = nextOccurrence(schedule, from)!
  return nextOccurrence(schedule, a)! - a
}

const timeline = (s: Scenario): Timeline => {
  const schedule = Either.getOrThrow(validateSchedule(s.schedule[0]))
  const base = Date.parse(s.schedule[1])
  const isInterval = schedule.type === "interval"
  const n = s.outcomes.length
  // Cron: the occurrences and their smallest gap (DST days included).
  const cronTimes: Array<number> = []
  let minGap = period(schedule, base)
  if (!isInterval) {
    let t = nextOccurrence(schedule, base)!
    for (let i = 0; i <= n; i++) {
      if (i > 0) minGap = Math.min(minGap, t - cronTimes[i - 1]!)
      cronTimes.push(t)
      t = nextOccurrence(schedule, t)!
    }
  }
  const graceSeconds = Math.max(60, Math.floor((s.graceFraction * minGap) / 1000))
  const graceMs = graceSeconds * 1000
  const maxDurationMs = Math.floor(0.3 * minGap)

  const events: Array<EngineEvent> = []
  const outcomes: Array<Outcome> = []
  let T = isInterval ? base + minGap : cronTimes[0]!
  for (let i = 0; i < n; i++) {
    const o = s.outcomes[i]!
    if (!isInterval) T = cronTimes[i]!
    if (o.kind === "miss") {
      outcomes.push({ kind: "miss", at: T + graceMs })
      if (isInterval) T += minGap
      continue
    }
    // A ping inside [T, T + grace): it accounts for T.
    const pingAt = T + Math.floor(o.jitter * graceMs)
    const d = Math.floor(o.duration * maxDurationMs)
    const id = `run-${i}`
    const status = o.kind === "success" || o.kind === "startSuccess" ? "SUCCESS" : "FAIL"
    const startInferred = o.kind === "success" || o.kind === "fail"
    const finishedAt = startInferred ? pingAt : pingAt + d
    if (!startInferred) events.push({ _tag: "RunStarted", runId: id, at: pingAt })
    events.push({
      _tag: "RunFinished",
      at: finishedAt,
      run: {
        id,
        status,
        startedAt: finishedAt - d,
        finishedAt,
        durationMs: d,
        exitCode: status === "FAIL" ? 1 : 0,
        output: null,
        startInferred
      }
    })
    outcomes.push({ kind: status === "SUCCESS" ? "success" : "fail", at: finishedAt })
    if (isInterval) T = finishedAt + minGap
  }
  const first = isInterval ? base + minGap : cronTimes[0]!
  const end = Math.max(outcomes[n - 1]!.at, T - 1)
  const windows = s.windows.map(([a, len]) => [first + a * (end - first), first + (a + len) * (end - first)] as const)
  const inMaintenance = (t: number) => windows.some(([a, b]) => t >= a && t < b)
  const state = initialState({
    id: "mon-th",
    orgId: "org-th",
    name: "thresholds",
    schedule,
    graceSeconds,
    // Runs never become LATE here: these properties are about FAIL and MISSED.
    maxRuntimeSeconds: 86_400,
    sla: null,
    autoResolve: s.autoResolve,
    paused: false,
    createdAt: base,
    failureThreshold: s.failureThreshold,
    recoveryThreshold: s.recoveryThreshold
  }, {
    nextExpectedAt: first,
    lastPingAt: null,
    openRuns: [],
    activeIncidents: [],
    recentDurations: [],
    lastRunStatus: null
  })
  return { state, events, outcomes, end, ctx: { inMaintenance: (_id, t) => inMaintenance(t) }, inMaintenance }
}

/** What the rules should do about FAIL and MISSED, outcome by outcome (docs/incident-rules.md#thresholds). */
type Expected =
  | { readonly _tag: "Raise"; readonly type: IncidentType; readonly at: number; readonly streak: number; readonly opens: boolean }
  | { readonly _tag: "Suppressed"; readonly type: IncidentType; readonly at: number }
  | { readonly _tag: "Resolve"; readonly types: ReadonlyArray<IncidentType>; readonly at: number }

interface Reference {
  readonly expected: ReadonlyArray<Expected>
  /** After each outcome: whether the status should be MISSED without an incident. */
  readonly missedBelow: ReadonlyArray<boolean>
}

const reference = (s: Scenario, tl: Timeline): Reference => {
  const N = s.failureThreshold
  const R = s.recoveryThreshold
  let failures = 0
  let successes = 0
  let missedBelow = false
  const active = new Set<IncidentType>()
  const expected: Array<Expected> = []
  const below: Array<boolean> = []
  for (const o of tl.outcomes) {
    const inWindow = tl.inMaintenance(o.at)
    if (o.kind === "success") {
      successes++
      failures = 0
      missedBelow = false
      const types = (["MISSED", "FAIL"] as const).filter((t) => active.has(t))
      if (successes >= R && s.autoResolve && !inWindow && types.length > 0) {
        expected.push({ _tag: "Resolve", types, at: o.at })
        for (const t of types) active.delete(t)
      }
    } else {
      const type: IncidentType = o.kind === "fail" ? "FAIL" : "MISSED"
      if (inWindow) {
        // not counted; suppressed when it would have reached the threshold
        if (failures + 1 >= N) expected.push({ _tag: "Suppressed", type, at: o.at })
        if (o.kind === "fail") missedBelow = false
      } else {
        failures++
        successes = 0
        missedBelow = o.kind === "miss" && failures < N
        if (failures >= N) {
          expected.push({ _tag: "Raise", type, at: o.at, streak: failures, opens: !active.has(type) })
          active.add(type)
        }
      }
    }
    below.push(missedBelow)
  }
  return { expected, missedBelow: below }
}

interface Step {
  readonly before: MonitorState
  readonly event: EngineEvent
  readonly effects: ReadonlyArray<EngineEffect>
  readonly after: MonitorState
}

/**
 * Runs a timeline like the actor: Ticks at deadlines (every one, every third event, or only at the
 * end), events in order. `restartAt`: before that step, the state is rebuilt from what the
 * database holds (the monitor row's columns, the active incidents, the open runs), as after a restart.
 */
const run = (tl: Timeline, ticks: "every" | "sparse" | "none", restartAt?: number): ReadonlyArray<Step> => {
  const steps: Array<Step> = []
  let s = tl.state
  const apply = (event: EngineEvent) => {
    if (steps.length === restartAt) {
      s = initialState(s.config, {
        nextExpectedAt: s.nextExpectedAt,
        lastPingAt: s.lastPingAt,
        openRuns: s.openRuns,
        activeIncidents: s.activeIncidents,
        recentDurations: s.recentDurations.toArray(),
        lastRunStatus: s.lastRunStatus,
        streak: { ...s.streak }
      })
    }
    const d = decide(s, event, tl.ctx)
    steps.push({ before: s, event, effects: d.effects, after: d.state })
    s = d.state
  }
  const drain = (t: number) => {
    for (let guard = 0; guard < 5_000; guard++) {
      const deadline = nextDeadline(s)
      if (deadline === null || deadline > t) return
      apply({ _tag: "Tick", at: deadline })
    }
    throw new Error("no progress")
  }
  tl.events.forEach((event, i) => {
    if (ticks === "every" || (ticks === "sparse" && i % 3 === 0)) drain(event.at)
    apply(event)
  })
  if (ticks === "none") apply({ _tag: "Tick", at: tl.end })
  drain(tl.end)
  return steps
}

type Raise = Extract<EngineEffect, { _tag: "RaiseIncident" }>
const FAIL_OR_MISSED = (t: IncidentType) => t === "FAIL" || t === "MISSED"

/** The FAIL and MISSED effects of a run, in order, in the reference's terms (a MISSED raise once per occurrence it stands for). */
const observed = (steps: ReadonlyArray<Step>) =>
  steps.flatMap((step) =>
    step.effects.flatMap((e): Array<{ readonly _tag: string; readonly type?: IncidentType; readonly types?: ReadonlyArray<IncidentType>; readonly at: number }> => {
      if (e._tag === "RaiseIncident" && FAIL_OR_MISSED(e.type)) return [{ _tag: "Raise", type: e.type, at: e.at }]
      if (e._tag === "Suppressed" && FAIL_OR_MISSED(e.type)) return [{ _tag: "Suppressed", type: e.type, at: e.at }]
      if (e._tag === "ResolveIncidents" && e.types.some(FAIL_OR_MISSED)) return [{ _tag: "Resolve", types: e.types, at: e.at }]
      return []
    })
  )

const strip = (e: Expected) =>
  e._tag === "Raise" ? { _tag: e._tag, type: e.type, at: e.at } : e

const RUNS = Number(process.env.RULES_PROPERTY_RUNS ?? 120)
const PROPERTY_RUNS = { fastCheck: { numRuns: RUNS } }

describe("Thresholds: properties", () => {
  it.prop(
    "with failureThreshold N, an incident opens exactly on the Nth consecutive failed or missed run and never before",
    [scenarioArb({ windows: false })],
    ([scenario]) => {
      const tl = timeline(scenario)
      const ref = reference(scenario, tl)
      const steps = run(tl, "every")
      // Each outcome on its own, at its own instant: exactly the reference's effects.
      expect(observed(steps)).toEqual(ref.expected.map(strip))
      for (const e of ref.expected) {
        if (e._tag !== "Raise") continue
        expect(e.streak).toBeGreaterThanOrEqual(scenario.failureThreshold)
      }
      // The first incident of a streak of failures opens on its Nth failure exactly.
      let previous: Expected | undefined
      for (const e of ref.expected) {
        if (e._tag === "Raise" && (previous === undefined || previous._tag === "Resolve") && e.opens) {
          expect(e.streak).toBe(scenario.failureThreshold)
        }
        previous = e
      }
      // A MISSED raise stands for one occurrence when every deadline gets its Tick.
      for (const step of steps) {
        for (const e of step.effects) {
          if (e._tag === "RaiseIncident" && e.type === "MISSED") expect(e.details.missedOccurrences).toBe(1)
        }
      }
    },
    PROPERTY_RUNS
  )

  it.prop(
    "with recoveryThreshold N, an open FAIL or MISSED resolves exactly on the Nth consecutive success (with autoResolve), never otherwise",
    [scenarioArb({ windows: false, autoResolve: true })],
    ([scenario]) => {
      const tl = timeline(scenario)
      const steps = run(tl, "every")
      // Counted from the events alone: a success adds one, a failed run or a Tick (with a Tick at
      // every deadline and no run ever LATE, each Tick is one missed occurrence) starts over.
      let successes = 0
      for (const step of steps) {
        const resolved = step.effects.some((e) => e._tag === "ResolveIncidents" && e.types.some(FAIL_OR_MISSED))
        const wasActive = step.before.activeIncidents.some((a) => FAIL_OR_MISSED(a.type))
        const success = step.event._tag === "RunFinished" && step.event.run.status === "SUCCESS"
        successes = success ? successes + 1 : step.event._tag === "RunStarted" ? successes : 0
        expect(resolved).toBe(success && wasActive && successes >= scenario.recoveryThreshold)
        // An incident opens on a failure (the count is 0 then): it resolves on the Nth success exactly.
        if (resolved) expect(successes).toBe(scenario.recoveryThreshold)
        if (wasActive && !resolved && step.event._tag !== "IncidentChanged") {
          expect(step.after.activeIncidents.some((a) => FAIL_OR_MISSED(a.type))).toBe(true)
        }
      }
    },
    PROPERTY_RUNS
  )

  it.prop(
    "maintenance windows: failures inside are not counted and suppressed only at the threshold; successes inside count but resolve after",
    [scenarioArb({ windows: true })],
    ([scenario]) => {
      const tl = timeline(scenario)
      expect(observed(run(tl, "every"))).toEqual(reference(scenario, tl).expected.map(strip))
    },
    PROPERTY_RUNS
  )

  it.prop(
    "below the threshold the status tells the newest outcome: MISSED after a miss, FAILING after a failed run, without an incident",
    [scenarioArb({ windows: true })],
    ([scenario]) => {
      const tl = timeline(scenario)
      const ref = reference(scenario, tl)
      // With a Tick at every deadline (and no run ever LATE), each Tick judges one missed
      // occurrence and each finish one run: the steps follow the outcomes one by one.
      let outcome = -1
      for (const step of run(tl, "every")) {
        if (step.event._tag === "RunStarted") continue
        outcome++
        expect(step.after.streak.missedBelowThreshold).toBe(ref.missedBelow[outcome])
        if (step.after.activeIncidents.length === 0 && step.after.openRuns.length === 0) {
          const status = statusOf(step.after)
          if (ref.missedBelow[outcome]) expect(status).toBe("MISSED")
          else expect(status).toBe(step.after.lastRunStatus === "FAIL" ? "FAILING" : step.after.lastRunStatus === "SUCCESS" ? "OK" : "NEW")
        }
      }
      expect(outcome).toBe(tl.outcomes.length - 1)
    },
    PROPERTY_RUNS
  )

  it.prop(
    "a Tick's outcome does not depend on when it is delivered: the same FAIL, MISSED, suppressions and resolutions with every, sparse or no Ticks",
    [scenarioArb({ windows: true })],
    ([scenario]) => {
      const tl = timeline(scenario)
      const summary = (ticks: "every" | "sparse" | "none") => {
        const steps = run(tl, ticks)
        const effects = steps.flatMap((s) => s.effects)
        const missed = effects.filter((e): e is Raise => e._tag === "RaiseIncident" && e.type === "MISSED")
        return {
          missedOccurrences: missed.reduce((n, e) => n + (e.details.missedOccurrences as number), 0),
          others: observed(steps).filter((e) => !(e._tag === "Raise" && e.type === "MISSED")),
          streak: steps[steps.length - 1]!.after.streak
        }
      }
      const every = summary("every")
      expect(every.missedOccurrences).toBe(reference(scenario, tl).expected.filter((e) => e._tag === "Raise" && e.type === "MISSED").length)
      expect(summary(scenario.ticks)).toEqual(every)
      expect(summary("none")).toEqual(every)
    },
    { fastCheck: { numRuns: Math.ceil(RUNS / 2) } }
  )

  it.prop(
    "a state rebuilt from the database at any step (the streak on the monitor row) judges the rest exactly as the uninterrupted one",
    [scenarioArb({ windows: true })],
    ([scenario]) => {
      const tl = timeline(scenario)
      const whole = run(tl, "every")
      const restartAt = Math.floor(scenario.restartAt * whole.length)
      expect(observed(run(tl, "every", restartAt))).toEqual(observed(whole))
    },
    PROPERTY_RUNS
  )
})
