import { describe, expect, it } from "@effect/vitest"
import { Either, FastCheck } from "effect"
import type { EngineEffect, EngineEvent, MonitorState, RulesContext } from "../../src/Engine/Model.js"
import { decide, EARLY_FLOOR_MS, initialState, nextDeadline } from "../../src/Engine/Rules.js"
import { nextOccurrence, previousOccurrence, type Schedule, validateSchedule } from "../../src/Monitors/Schedule.js"

/**
 * Random monitors (cron in zones around their DST changes, and intervals), random graces and
 * random ping sequences, fed to the rules the way the actor does: a Tick at each deadline (or
 * sparse Ticks, or none until the end), pings in order. The invariants are the rules of
 * docs/incident-rules.md.
 */

const SECOND = 1_000

// [zone, an instant near one of its changes]; UTC and Kolkata have none.
const ZONES_AND_CHANGES: ReadonlyArray<readonly [string, string]> = [
  ["America/New_York", "2026-03-08T07:00:00Z"],
  ["America/New_York", "2026-11-01T06:00:00Z"],
  ["Europe/London", "2026-03-29T01:00:00Z"],
  ["Europe/London", "2026-10-25T01:00:00Z"],
  ["Australia/Sydney", "2026-04-04T16:00:00Z"],
  ["Australia/Sydney", "2026-10-03T16:00:00Z"],
  ["Asia/Kolkata", "2026-03-08T07:00:00Z"],
  ["Pacific/Chatham", "2026-04-04T14:00:00Z"],
  ["Pacific/Chatham", "2026-09-26T14:00:00Z"],
  ["UTC", "2026-06-01T00:00:00Z"]
]
const CRONS = ["*/15 * * * *", "0 * * * *", "0 */6 * * *", "30 2 * * *", "0 3 * * *", "30 1 * * *", "45 2 * * 1-5"]
const INTERVALS = ["45s", "10m", "1h", "1d"]

const scheduleArb = FastCheck.oneof(
  { weight: 3, arbitrary: FastCheck.tuple(FastCheck.constantFrom(...CRONS), FastCheck.constantFrom(...ZONES_AND_CHANGES)) },
  { weight: 1, arbitrary: FastCheck.tuple(FastCheck.constantFrom(...INTERVALS), FastCheck.constantFrom(...ZONES_AND_CHANGES)) }
).map(([expression, [timezone, change]]) => {
  const schedule = Either.getOrThrow(validateSchedule(
    CRONS.includes(expression) ? { type: "cron", expression, timezone } : { type: "interval", expression, timezone }
  ))
  return { schedule, change: Date.parse(change) }
})

type Kind = "success" | "fail" | "startSuccess" | "startFail" | "startOnly"

const occurrenceArb = (kinds: ReadonlyArray<Kind>, presence: number) =>
  FastCheck.record({
    present: FastCheck.double({ min: 0, max: 1, maxExcluded: true, noNaN: true }).map((u) => u < presence),
    kind: FastCheck.constantFrom(...kinds),
    jitter: FastCheck.double({ min: 0, max: 1, maxExcluded: true, noNaN: true }),
    duration: FastCheck.double({ min: 0, max: 1, noNaN: true })
  })

const scenarioArb = (options: { readonly kinds: ReadonlyArray<Kind>; readonly presence: number; readonly windows: boolean }) =>
  FastCheck.record({
    monitor: scheduleArb,
    position: FastCheck.double({ min: 0, max: 1, noNaN: true }),
    graceFraction: FastCheck.double({ min: 0, max: 0.45, noNaN: true }),
    maxRuntime: FastCheck.boolean(),
    occurrences: FastCheck.array(occurrenceArb(options.kinds, options.presence), { minLength: 3, maxLength: 24 }),
    windows: options.windows
      ? FastCheck.array(FastCheck.tuple(FastCheck.double({ min: 0, max: 1, noNaN: true }), FastCheck.double({ min: 0, max: 0.3, noNaN: true })), { maxLength: 2 })
      : FastCheck.constant([] as Array<[number, number]>),
    ticks: FastCheck.constantFrom("every", "every", "sparse", "none") as FastCheck.Arbitrary<"every" | "sparse" | "none">
  })
type Scenario = ReturnType<typeof scenarioArb> extends FastCheck.Arbitrary<infer S> ? S : never

interface Timeline {
  readonly state: MonitorState
  readonly events: ReadonlyArray<EngineEvent>
  /** Expected instants, and whether a ping came for each. */
  readonly expected: ReadonlyArray<{ readonly at: number; readonly pinged: boolean }>
  readonly graceMs: number
  readonly end: number
  readonly ctx: RulesContext
  readonly inMaintenance: (t: number) => boolean
}

const period = (schedule: Schedule): number => {
  const a = nextOccurrence(schedule, Date.UTC(2026, 0, 14))!
  return nextOccurrence(schedule, a)! - a
}

/** Builds the monitor, its expected instants and its pings from a scenario. */
const timeline = (s: Scenario): Timeline => {
  const schedule = s.monitor.schedule
  const n = s.occurrences.length
  const base = Math.floor(s.monitor.change - s.position * n * period(schedule))
  const isInterval = schedule.type === "interval"

  // Cron: the real occurrences and their smallest gap (DST days included).
  const cronTimes: Array<number> = []
  let minGap = period(schedule)
  if (!isInterval) {
    let t = nextOccurrence(schedule, base)!
    let previous = previousOccurrence(schedule, t - 1)!
    for (let i = 0; i < n; i++) {
      cronTimes.push(t)
      minGap = Math.min(minGap, t - previous)
      previous = t
      t = nextOccurrence(schedule, t)!
    }
    minGap = Math.min(minGap, t - previous)
  }
  const graceSeconds = Math.floor((s.graceFraction * minGap) / 1000)
  const graceMs = graceSeconds * 1000
  const maxDurationMs = Math.min(0.4 * minGap, 50 * SECOND)
  const maxRuntimeSeconds = s.maxRuntime ? Math.ceil(maxDurationMs / 1000) + 1 : null

  const events: Array<EngineEvent> = []
  const expected: Array<{ at: number; pinged: boolean }> = []
  let intervalNext = base + period(schedule)
  let lastEvent = base
  for (let i = 0; i < n; i++) {
    const o = s.occurrences[i]!
    const T = isInterval ? intervalNext : cronTimes[i]!
    expected.push({ at: T, pinged: o.present })
    if (!o.present) {
      intervalNext = T + period(schedule)
      continue
    }
    // A ping inside [T − early, T + grace): the early window of the rules for cron; for an
    // interval any ping before the deadline restarts the timer (up to half a period early here).
    const early = isInterval
      ? Math.floor(period(schedule) / 2)
      : Math.floor(Math.min(Math.max(graceMs, EARLY_FLOOR_MS), (T - (i === 0 ? previousOccurrence(schedule, T - 1)! : cronTimes[i - 1]!)) / 2))
    const pingAt = T + Math.min(Math.floor(-early + o.jitter * (early + graceMs)), graceMs - 1)
    const d = Math.floor(o.duration * maxDurationMs)
    const id = `run-${i}`
    const finish = (at: number, status: "SUCCESS" | "FAIL", startInferred: boolean): EngineEvent => ({
      _tag: "RunFinished",
      at,
      run: {
        id,
        status,
        startedAt: startInferred ? at - d : pingAt,
        finishedAt: at,
        durationMs: d,
        exitCode: status === "FAIL" ? 1 : 0,
        output: null,
        startInferred
      }
    })
    let last = pingAt
    switch (o.kind) {
      case "success":
        events.push(finish(pingAt, "SUCCESS", true))
        break
      case "fail":
        events.push(finish(pingAt, "FAIL", true))
        break
      case "startSuccess":
      case "startFail":
        events.push({ _tag: "RunStarted", runId: id, at: pingAt })
        events.push(finish(pingAt + d, o.kind === "startSuccess" ? "SUCCESS" : "FAIL", false))
        last = pingAt + d
        break
      case "startOnly":
        events.push({ _tag: "RunStarted", runId: id, at: pingAt })
        break
    }
    lastEvent = Math.max(lastEvent, last)
    intervalNext = last + period(schedule)
  }
  events.sort((a, b) => a.at - b.at)

  const first = expected[0]!.at
  const end = Math.max(expected[n - 1]!.at + graceMs, lastEvent)
  const windows = s.windows.map(([a, len]) => [first + a * (end - first), first + (a + len) * (end - first)] as const)
  const inMaintenance = (t: number) => windows.some(([a, b]) => t >= a && t < b)

  const state = initialState({
    id: "mon-p",
    orgId: "org-p",
    name: "property",
    schedule,
    graceSeconds,
    maxRuntimeSeconds,
    sla: null,
    autoResolve: true,
    paused: false,
    createdAt: base
  }, {
    nextExpectedAt: first,
    lastPingAt: null,
    openRuns: [],
    activeIncidents: [],
    recentDurations: [],
    lastRunStatus: null
  })
  return { state, events, expected, graceMs, end, ctx: { inMaintenance: (_id, t) => inMaintenance(t) }, inMaintenance }
}

interface Step {
  readonly before: MonitorState
  readonly event: EngineEvent
  readonly effects: ReadonlyArray<EngineEffect>
  readonly after: MonitorState
}

/** Runs a timeline like the actor: Ticks at deadlines (every one, every third, or only at the end), events in order. */
const run = (tl: Timeline, ticks: "every" | "sparse" | "none"): ReadonlyArray<Step> => {
  const steps: Array<Step> = []
  let s = tl.state
  const apply = (event: EngineEvent) => {
    const d = decide(s, event, tl.ctx)
    // invariants of every decision
    const types = d.state.activeIncidents.map((a) => a.type)
    expect(new Set(types).size).toBe(types.length)
    expect(d.effects.filter((e) => e._tag === "UpdateMonitor").length).toBeLessThanOrEqual(1)
    steps.push({ before: s, event, effects: d.effects, after: d.state })
    s = d.state
  }
  const drain = (t: number) => {
    for (let guard = 0; guard < 5_000; guard++) {
      const deadline = nextDeadline(s)
      if (deadline === null || deadline > t) return
      // an early Tick is harmless
      const early = decide(s, { _tag: "Tick", at: deadline - 1 }, tl.ctx)
      expect(early.effects).toEqual([])
      expect(nextDeadline(early.state)).toBe(deadline)
      apply({ _tag: "Tick", at: deadline })
      expect(nextDeadline(s) === null || nextDeadline(s)! > deadline).toBe(true)
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

const allEffects = (steps: ReadonlyArray<Step>) => steps.flatMap((s) => s.effects)
type Raise = Extract<EngineEffect, { _tag: "RaiseIncident" }>
const missedRaises = (effects: ReadonlyArray<EngineEffect>) =>
  effects.filter((e): e is Raise => e._tag === "RaiseIncident" && e.type === "MISSED")
type Suppress = Extract<EngineEffect, { _tag: "Suppressed" }>
const missedSuppressed = (effects: ReadonlyArray<EngineEffect>) =>
  effects.filter((e): e is Suppress => e._tag === "Suppressed" && e.type === "MISSED")

// Each property stays well under 5 s; RULES_PROPERTY_RUNS=5000 runs a deeper search locally.
const RUNS = Number(process.env.RULES_PROPERTY_RUNS ?? 120)
const PROPERTY_RUNS = { fastCheck: { numRuns: RUNS } }

describe("Rules: properties", () => {
  it.prop(
    "an on-time job (a ping per occurrence inside its window, runs shorter than the limit) never gets MISSED or LATE",
    [scenarioArb({ kinds: ["success", "fail", "startSuccess", "startFail"], presence: 1, windows: false })],
    ([scenario]) => {
      const tl = timeline(scenario)
      const effects = allEffects(run(tl, scenario.ticks))
      const bad = effects.filter((e) =>
        (e._tag === "RaiseIncident" || e._tag === "Suppressed") && (e.type === "MISSED" || e.type === "LATE")
      )
      expect(bad).toEqual([])
    },
    PROPERTY_RUNS
  )

  it.prop(
    "every occurrence without a ping yields exactly one MISSED (raised or suppressed) once its grace ends",
    [scenarioArb({ kinds: ["success", "fail", "startSuccess", "startFail", "startOnly"], presence: 0.6, windows: true })],
    ([scenario]) => {
      const tl = timeline(scenario)
      const effects = allEffects(run(tl, scenario.ticks))
      const unpinged = tl.expected.filter((o) => !o.pinged)
      const raised = missedRaises(effects)
      const suppressed = missedSuppressed(effects)
      const counted = raised.reduce((n, e) => n + (e.details.missedOccurrences as number), 0) + suppressed.length
      expect(counted).toBe(unpinged.length)
      if (scenario.ticks === "every") {
        // one decision per deadline: each occurrence on its own, at its own deadline
        const reported = [
          ...raised.map((e) => Date.parse(e.details.expectedAt as string)),
          ...suppressed.map((e) => e.at - tl.graceMs)
        ].sort((a, b) => a - b)
        expect(reported).toEqual(unpinged.map((o) => o.at))
        for (const e of raised) expect(tl.inMaintenance(e.at)).toBe(false)
        for (const e of suppressed) expect(tl.inMaintenance(e.at)).toBe(true)
      }
    },
    PROPERTY_RUNS
  )

  it.prop(
    "FAIL resolves exactly on the next successful run (outside maintenance), never otherwise",
    [scenarioArb({ kinds: ["success", "fail", "startSuccess", "startFail"], presence: 0.9, windows: true })],
    ([scenario]) => {
      const tl = timeline(scenario)
      for (const step of run(tl, scenario.ticks)) {
        const resolvedFail = step.effects.some((e) => e._tag === "ResolveIncidents" && e.types.includes("FAIL"))
        const failWasActive = step.before.activeIncidents.some((a) => a.type === "FAIL")
        const isSuccess = step.event._tag === "RunFinished" && step.event.run.status === "SUCCESS"
        expect(resolvedFail).toBe(isSuccess && failWasActive && !tl.inMaintenance(step.event.at))
        if (step.event._tag === "RunFinished" && step.event.run.status === "FAIL" && !tl.inMaintenance(step.event.at)) {
          expect(step.after.activeIncidents.some((a) => a.type === "FAIL")).toBe(true)
        }
      }
    },
    PROPERTY_RUNS
  )

  it.prop(
    "a Tick's outcome does not depend on when it is delivered: the same incidents with every, sparse or no Ticks",
    [scenarioArb({ kinds: ["success", "fail", "startSuccess", "startFail", "startOnly"], presence: 0.7, windows: true })],
    ([scenario]) => {
      const tl = timeline(scenario)
      const summary = (ticks: "every" | "sparse" | "none") => {
        const steps = run(tl, ticks)
        const effects = allEffects(steps)
        const last = steps[steps.length - 1]!.after
        return {
          missed: missedRaises(effects).reduce((n, e) => n + (e.details.missedOccurrences as number), 0) +
            missedSuppressed(effects).length,
          late: effects.filter((e) => (e._tag === "RaiseIncident" || e._tag === "Suppressed") && e.type === "LATE").length,
          fail: effects.filter((e) => e._tag === "RaiseIncident" && e.type === "FAIL").length,
          nextExpectedAt: last.nextExpectedAt,
          openRuns: last.openRuns
        }
      }
      const every = summary("every")
      expect(summary("sparse")).toEqual(every)
      expect(summary("none")).toEqual(every)
    },
    { fastCheck: { numRuns: Math.ceil(RUNS / 2) } }
  )
})
