/**
 * The incident rules: the whole judgement of one monitor as pure functions
 * (docs/decisions.md#monitors for statuses, #incident-rules, #time; docs/incident-rules.md explains every rule).
 *
 * `decide(state, event, ctx)` returns the next state and the effects the monitor's actor carries
 * out. Nothing here reads the clock: every instant comes with the event. Before an event is
 * applied, whatever fell due up to its instant is judged first (as if a Tick had come at that
 * instant), so the outcome does not depend on how promptly the actor delivered its Ticks.
 */
import { iso } from "../Domain/Instant.js"
import { nextOccurrence, previousOccurrence, type Schedule } from "../Monitors/Schedule.js"
import { checkSlaOfHistory, type DurationVerdict, judgeDuration, learnHistory, type SlaVerdict } from "./Anomaly.js"
import { DurationHistory } from "./DurationHistory.js"
import {
  type ActiveIncident,
  type Decision,
  DURATION_MEMORY,
  type EngineEffect,
  type EngineEvent,
  type IncidentType,
  MAX_THRESHOLD,
  MIN_RUNS_FOR_LEARNING,
  type MonitorConfig,
  type MonitorState,
  type MonitorStatus,
  NO_STREAK,
  type OpenRunState,
  type RulesContext,
  type Severity,
  type Streak
} from "./Model.js"

// ---------------------------------------------------------------------------
// Constants (each one is explained in docs/incident-rules.md)
// ---------------------------------------------------------------------------

/**
 * A cron job may run a little early (clock skew, a scheduler that rounds): a ping counts for the
 * pending occurrence T from T − min(max(grace, EARLY_FLOOR_MS), half the gap to the previous
 * occurrence) on.
 */
export const EARLY_FLOOR_MS = 60_000
/** The learned LATE limit is LEARNED_LATE_FACTOR × p99 of recent durations … */
export const LEARNED_LATE_FACTOR = 2
/** … but never less than this: ping latency alone must not make a 100 ms job LATE. */
export const LEARNED_LATE_FLOOR_MS = 60_000
/**
 * After downtime, at most this many missed occurrences are enumerated one by one (each checked
 * against maintenance windows); beyond it the rest is counted by extrapolation.
 */
export const MAX_CATCH_UP_STEPS = 1_000

/** What the database holds about a monitor, to rebuild its state at start-up. */
export interface PersistedState {
  readonly nextExpectedAt: number | null
  readonly lastPingAt: number | null
  readonly openRuns: ReadonlyArray<OpenRunState>
  /** OPEN or ACKNOWLEDGED incidents, oldest first (status follows the newest one). */
  readonly activeIncidents: ReadonlyArray<ActiveIncident>
  /** Durations of recent successful runs, oldest first (their starts unknown: older than any later run's). */
  readonly recentDurations: ReadonlyArray<number>
  readonly lastRunStatus: "SUCCESS" | "FAIL" | null
  /** The consecutive failures and successes (the monitor row's columns); absent: none. */
  readonly streak?: Streak | undefined
}

// ---------------------------------------------------------------------------
// Building the state
// ---------------------------------------------------------------------------

const validDuration = (ms: number | null | undefined): ms is number =>
  typeof ms === "number" && Number.isFinite(ms) && ms >= 0

const firstExpectedAfter = (schedule: Schedule, after: number): number | null => nextOccurrence(schedule, after) ?? null

/**
 * The state of a monitor rebuilt from the database at start-up. A paused monitor expects
 * nothing (nextExpectedAt null). When the database has no expected time for an active monitor,
 * the first occurrence after the last ping (or the creation) is expected. At most one active
 * incident per type is kept (the newest).
 */
export const initialState = (config: MonitorConfig, persisted: PersistedState): MonitorState => {
  const activeIncidents: Array<ActiveIncident> = []
  for (const incident of persisted.activeIncidents) {
    const same = activeIncidents.findIndex((a) => a.type === incident.type)
    if (same >= 0) activeIncidents.splice(same, 1)
    activeIncidents.push({ type: incident.type, status: incident.status, runId: incident.runId })
  }
  const openRuns: Array<OpenRunState> = []
  for (const run of persisted.openRuns) {
    if (!openRuns.some((r) => r.id === run.id)) openRuns.push({ id: run.id, startedAt: run.startedAt, lateReported: run.lateReported })
  }
  return {
    config,
    nextExpectedAt: config.paused
      ? null
      : persisted.nextExpectedAt ?? firstExpectedAfter(config.schedule, persisted.lastPingAt ?? config.createdAt),
    lastPingAt: persisted.lastPingAt,
    openRuns,
    activeIncidents,
    recentDurations: DurationHistory.from(persisted.recentDurations.filter(validDuration), DURATION_MEMORY),
    lastRunStatus: persisted.lastRunStatus,
    streak: persisted.streak === undefined ? NO_STREAK : streakOf(persisted.streak)
  }
}

// ---------------------------------------------------------------------------
// Thresholds (docs/incident-rules.md#thresholds)
// ---------------------------------------------------------------------------

const streakCount = (n: number): number => (Number.isFinite(n) ? Math.min(MAX_THRESHOLD, Math.max(0, Math.floor(n))) : 0)

/** A persisted streak with its counts in [0, MAX_THRESHOLD]. */
const streakOf = (s: Streak): Streak =>
  s.failures === 0 && s.successes === 0 && !s.missedBelowThreshold
    ? NO_STREAK
    : { failures: streakCount(s.failures), successes: streakCount(s.successes), missedBelowThreshold: s.missedBelowThreshold }

const thresholdOf = (n: number | undefined): number =>
  n === undefined || !Number.isFinite(n) ? 1 : Math.min(MAX_THRESHOLD, Math.max(1, Math.floor(n)))

/** Failed runs or missed occurrences in a row before a FAIL or MISSED incident opens (1: the first one). */
export const failureThresholdOf = (config: MonitorConfig): number => thresholdOf(config.failureThreshold)
/** Successful runs in a row before an active FAIL or MISSED incident resolves automatically (1: the first one). */
export const recoveryThresholdOf = (config: MonitorConfig): number => thresholdOf(config.recoveryThreshold)

/**
 * A failed run or a missed occurrence that counts (outside maintenance windows, not paused): one
 * more failure in a row, and the successes start over. A miss that stays below the threshold is
 * remembered for the status. The same object when nothing changes (a job missing every minute for
 * days writes nothing more once the count stops at MAX_THRESHOLD).
 */
export const afterFailure = (streak: Streak, kind: "FAIL" | "MISSED", threshold: number): Streak => {
  const failures = Math.min(MAX_THRESHOLD, streak.failures + 1)
  const missedBelowThreshold = kind === "MISSED" && failures < threshold
  return failures === streak.failures && streak.successes === 0 && missedBelowThreshold === streak.missedBelowThreshold
    ? streak
    : { failures, successes: 0, missedBelowThreshold }
}

/** A successful run: one more success in a row, the failures start over (the same object once the count stops). */
export const afterSuccess = (streak: Streak): Streak =>
  streak.failures === 0 && !streak.missedBelowThreshold && streak.successes >= MAX_THRESHOLD
    ? streak
    : { failures: 0, successes: Math.min(MAX_THRESHOLD, streak.successes + 1), missedBelowThreshold: false }

/** A run finished that is not counted (a failure inside a maintenance window): the newest outcome is no longer a miss. */
const afterUncountedRun = (streak: Streak): Streak =>
  streak.missedBelowThreshold ? { ...streak, missedBelowThreshold: false } : streak

/** After a counted failure: whether it opens an incident (or counts an occurrence on the active one). */
export const reachesFailureThreshold = (streak: Streak, threshold: number): boolean => streak.failures >= threshold

/**
 * A failure that is not counted (inside a maintenance window) is Suppressed when it would have
 * reached the threshold had it counted: what the window kept from being raised.
 */
export const wouldReachFailureThreshold = (streak: Streak, threshold: number): boolean => streak.failures + 1 >= threshold

/** After a successful run: whether an active FAIL or MISSED incident resolves (with autoResolve, outside maintenance). */
export const reachesRecoveryThreshold = (streak: Streak, threshold: number): boolean => streak.successes >= threshold

/**
 * `count` missed occurrences in a row, none inside a maintenance window (a long outage counted
 * without enumerating it): the streak after them, and how many of them reached the threshold (the
 * occurrences of the MISSED incident).
 */
export const afterMisses = (streak: Streak, count: number, threshold: number): { readonly streak: Streak; readonly reached: number } => {
  if (count <= 0) return { streak, reached: 0 }
  const below = Math.max(0, threshold - 1 - streak.failures)
  const reached = Math.max(0, count - below)
  const failures = Math.min(MAX_THRESHOLD, streak.failures + count)
  return { streak: { failures, successes: 0, missedBelowThreshold: failures < threshold }, reached }
}

/** The details an incident gains from the failure threshold: none at 1 (today's details, unchanged). */
const thresholdDetails = (threshold: number): Readonly<Record<string, unknown>> =>
  threshold > 1 ? { failureThreshold: threshold } : {}

// ---------------------------------------------------------------------------
// Status
// ---------------------------------------------------------------------------

const STATUS_OF_INCIDENT: Readonly<Record<IncidentType, MonitorStatus | null>> = {
  MISSED: "MISSED",
  LATE: "LATE",
  FAIL: "FAILING",
  ANOMALY: null
}

/**
 * docs/decisions.md#monitors: PAUSED when paused; else the newest active incident (ANOMALY has no status of
 * its own and is skipped); else RUNNING while a run is open; else MISSED when the newest outcome is
 * a missed occurrence below the failure threshold; else the last run (OK / FAILING); NEW before
 * the first ping.
 */
export const statusOf = (state: MonitorState): MonitorStatus => {
  if (state.config.paused) return "PAUSED"
  for (let i = state.activeIncidents.length - 1; i >= 0; i--) {
    const status = STATUS_OF_INCIDENT[state.activeIncidents[i]!.type]
    if (status !== null) return status
  }
  if (state.openRuns.length > 0) return "RUNNING"
  if (state.streak.missedBelowThreshold) return "MISSED"
  if (state.lastRunStatus === "SUCCESS") return "OK"
  if (state.lastRunStatus === "FAIL") return "FAILING"
  return state.lastPingAt === null ? "NEW" : "OK"
}

// ---------------------------------------------------------------------------
// Limits and deadlines
// ---------------------------------------------------------------------------

export interface LateLimit {
  readonly limitMs: number
  readonly rule: "maxRuntime" | "learned"
}

/**
 * How long a run may take before it is LATE: maxRuntimeSeconds when set; otherwise, once
 * MIN_RUNS_FOR_LEARNING successful durations are known, max(2 × p99, LEARNED_LATE_FLOOR_MS);
 * otherwise no limit.
 */
export const lateLimit = (config: MonitorConfig, recentDurations: DurationHistory): LateLimit | null => {
  if (config.maxRuntimeSeconds !== null) return { limitMs: config.maxRuntimeSeconds * 1000, rule: "maxRuntime" }
  if (recentDurations.length < MIN_RUNS_FOR_LEARNING) return null
  const p99 = recentDurations.percentile(0.99)!
  return { limitMs: Math.max(LEARNED_LATE_FLOOR_MS, Math.ceil(LEARNED_LATE_FACTOR * p99)), rule: "learned" }
}

/**
 * The earliest instant at which a Tick can change something: the grace deadline of the pending
 * occurrence, or the LATE deadline of an open run not yet reported. Null when nothing is pending
 * (paused, or no occurrence and no limited open run).
 */
export const nextDeadline = (state: MonitorState): number | null => {
  if (state.config.paused) return null
  let best: number | null = state.nextExpectedAt === null ? null : state.nextExpectedAt + state.config.graceSeconds * 1000
  // (p99 sorts the durations: only worth it when some open run can still become LATE)
  const limit = state.openRuns.some((r) => !r.lateReported) ? lateLimit(state.config, state.recentDurations) : null
  if (limit !== null) {
    for (const run of state.openRuns) {
      if (run.lateReported) continue
      const deadline = run.startedAt + limit.limitMs
      if (best === null || deadline < best) best = deadline
    }
  }
  return best
}

// ---------------------------------------------------------------------------
// The decision
// ---------------------------------------------------------------------------

/** A mutable copy of the state while one event is decided. */
interface Draft {
  config: MonitorConfig
  nextExpectedAt: number | null
  lastPingAt: number | null
  openRuns: ReadonlyArray<OpenRunState>
  activeIncidents: ReadonlyArray<ActiveIncident>
  recentDurations: DurationHistory
  lastRunStatus: "SUCCESS" | "FAIL" | null
  streak: Streak
}


const raise = (
  d: Draft,
  effects: Array<EngineEffect>,
  ctx: RulesContext,
  incident: {
    readonly type: IncidentType
    readonly severity: Severity
    readonly at: number
    readonly runId: string | null
    readonly details: Readonly<Record<string, unknown>>
  }
): void => {
  if (d.config.paused) return
  if (ctx.inMaintenance(d.config.id, incident.at)) {
    effects.push({ _tag: "Suppressed", type: incident.type, at: incident.at })
    return
  }
  // Always raised: the incidents service opens one, or counts an occurrence on the active one.
  effects.push({ _tag: "RaiseIncident", ...incident })
  if (!d.activeIncidents.some((a) => a.type === incident.type)) {
    d.activeIncidents = [...d.activeIncidents, { type: incident.type, status: "OPEN", runId: incident.runId }]
  }
}

/** Whether one of `types` has an active incident (no allocation: this runs for every finished run). */
const hasActive = (active: ReadonlyArray<ActiveIncident>, types: ReadonlyArray<IncidentType>): boolean => {
  for (const incident of active) if (types.includes(incident.type)) return true
  return false
}

const LATE_ONLY: ReadonlyArray<IncidentType> = ["LATE"]
const MISSED_AND_FAIL: ReadonlyArray<IncidentType> = ["MISSED", "FAIL"]
const ANOMALY_ONLY: ReadonlyArray<IncidentType> = ["ANOMALY"]

const resolve = (
  d: Draft,
  effects: Array<EngineEffect>,
  ctx: RulesContext,
  types: ReadonlyArray<IncidentType>,
  at: number,
  reason: string
): void => {
  if (!d.config.autoResolve || !hasActive(d.activeIncidents, types) || ctx.inMaintenance(d.config.id, at)) return
  const active = types.filter((t) => d.activeIncidents.some((a) => a.type === t))
  effects.push({ _tag: "ResolveIncidents", types: active, at, reason })
  d.activeIncidents = d.activeIncidents.filter((a) => !active.includes(a.type))
}

interface Due {
  readonly moment: number
  readonly apply: () => void
}

/** The missed occurrences up to `at`: Suppressed for each one inside maintenance, one MISSED for the rest. */
/** Whether the pending occurrence's grace has ended by `at` (something for collectMissed). */
const missedDue = (d: Draft, at: number): boolean =>
  d.nextExpectedAt !== null && d.nextExpectedAt + d.config.graceSeconds * 1000 <= at

/** Whether an open run could still become late (something for collectLate). */
const lateCandidates = (d: Draft): boolean => d.openRuns.some((r) => !r.lateReported)

const collectMissed = (d: Draft, effects: Array<EngineEffect>, at: number, ctx: RulesContext, floor: number, due: Array<Due>) => {
  if (!missedDue(d, at)) return
  const graceMs = d.config.graceSeconds * 1000
  const schedule = d.config.schedule
  let pending = d.nextExpectedAt
  const missed: Array<number> = []
  let beyond: { readonly count: number; readonly newest: number } | null = null
  while (pending !== null && pending + graceMs <= at) {
    if (missed.length >= MAX_CATCH_UP_STEPS) {
      const jump = jumpPast(schedule, pending, at - graceMs, missed)
      beyond = jump.beyond
      pending = jump.next
      break
    }
    missed.push(pending)
    const next = nextOccurrence(schedule, pending)
    pending = next === undefined || next <= pending ? null : next
  }
  d.nextExpectedAt = pending

  const lastPingAt = d.lastPingAt
  // Each missed occurrence outside maintenance counts toward the failure threshold; those that
  // reach it are the MISSED incident's occurrences. One inside a window is not counted, and is
  // suppressed when it would have reached the threshold.
  const threshold = failureThresholdOf(d.config)
  let streak = d.streak
  let reportedCount = 0
  let newestReported: number | null = null
  for (const expectedAt of missed) {
    const moment = Math.max(expectedAt + graceMs, floor)
    if (ctx.inMaintenance(d.config.id, moment)) {
      if (wouldReachFailureThreshold(streak, threshold)) {
        due.push({ moment, apply: () => effects.push({ _tag: "Suppressed", type: "MISSED", at: moment }) })
      }
    } else {
      streak = afterFailure(streak, "MISSED", threshold)
      if (reachesFailureThreshold(streak, threshold)) {
        reportedCount++
        newestReported = expectedAt
      }
    }
  }
  if (beyond !== null) {
    const moment = Math.max(beyond.newest + graceMs, floor)
    // Beyond the enumeration limit, the newest occurrence stands for all of them.
    if (ctx.inMaintenance(d.config.id, moment)) {
      if (wouldReachFailureThreshold(streak, threshold)) {
        due.push({ moment, apply: () => effects.push({ _tag: "Suppressed", type: "MISSED", at: moment }) })
      }
    } else {
      const after = afterMisses(streak, beyond.count, threshold)
      streak = after.streak
      if (after.reached > 0) {
        reportedCount += after.reached
        newestReported = beyond.newest
      }
    }
  }
  d.streak = streak
  if (newestReported !== null) {
    const expectedAt = newestReported
    const count = reportedCount
    due.push({
      moment: Math.max(expectedAt + graceMs, floor),
      apply: () =>
        raise(d, effects, ctx, {
          type: "MISSED",
          severity: "HIGH",
          at: Math.max(expectedAt + graceMs, floor),
          runId: null,
          details: {
            expectedAt: iso(expectedAt),
            graceSeconds: d.config.graceSeconds,
            lastPingAt: iso(lastPingAt),
            missedOccurrences: count,
            ...thresholdDetails(threshold)
          }
        })
    })
  }
}

/**
 * Skips the rest of a long outage without enumerating it: the occurrences from `from` to the
 * newest one at or before `lastDeadline` are counted (exactly for intervals, by the spacing of
 * the enumerated ones for cron), and the first one after it is returned.
 */
const jumpPast = (
  schedule: Schedule,
  from: number,
  lastDeadline: number,
  enumerated: ReadonlyArray<number>
): { readonly next: number | null; readonly beyond: { readonly count: number; readonly newest: number } } => {
  if (schedule.type === "interval") {
    const step = schedule.intervalMs
    const count = Math.floor((lastDeadline - from) / step) + 1
    return { next: from + count * step, beyond: { count, newest: from + (count - 1) * step } }
  }
  const newest = previousOccurrence(schedule, lastDeadline) ?? from
  const first = enumerated[0]!
  const last = enumerated[enumerated.length - 1]!
  const spacing = enumerated.length > 1 ? (last - first) / (enumerated.length - 1) : Math.max(1, newest - from)
  const count = 1 + Math.max(0, Math.round((newest - from) / spacing))
  return { next: nextOccurrence(schedule, lastDeadline) ?? null, beyond: { count, newest } }
}

/** Open runs past their LATE deadline: one LATE (or Suppressed) each, once. */
const collectLate = (d: Draft, effects: Array<EngineEffect>, at: number, ctx: RulesContext, floor: number, due: Array<Due>) => {
  if (!lateCandidates(d)) return
  const limit = lateLimit(d.config, d.recentDurations)
  if (limit === null) return
  d.openRuns = d.openRuns.map((run) => {
    if (run.lateReported || run.startedAt + limit.limitMs > at) return run
    const moment = Math.max(run.startedAt + limit.limitMs, floor)
    due.push({
      moment,
      apply: () =>
        raise(d, effects, ctx, {
          type: "LATE",
          severity: "MEDIUM",
          at: moment,
          runId: run.id,
          details: { runId: run.id, startedAt: iso(run.startedAt), limitMs: limit.limitMs, rule: limit.rule }
        })
    })
    return { ...run, lateReported: true }
  })
}

/**
 * Judges everything that fell due up to `at`. `floor` is the earliest instant an incident may
 * carry: a deadline that became past because the settings changed is judged at the change.
 */
const advance = (d: Draft, effects: Array<EngineEffect>, at: number, ctx: RulesContext, floor: number): void => {
  if (d.config.paused) return
  // The common case, nothing due, allocates nothing.
  if (!missedDue(d, at) && !lateCandidates(d)) return
  const due: Array<Due> = []
  collectMissed(d, effects, at, ctx, floor, due)
  collectLate(d, effects, at, ctx, floor, due)
  // Stable: equal moments keep MISSED before LATE.
  due.sort((a, b) => a.moment - b.moment)
  for (const item of due) item.apply()
}

/**
 * A ping at `at` accounts for the pending occurrence T when it arrives in [T − early, T + grace)
 * (advance has already moved T past every occurrence whose grace ended). An interval job's timer
 * restarts at every ping. `kind: "end"` is the finish of a run whose start ping was seen: it never
 * counts early, or one run would account for two occurrences.
 */
const satisfy = (d: Draft, at: number, kind: "begin" | "end"): void => {
  if (d.config.paused) return
  const schedule = d.config.schedule
  if (schedule.type === "interval") {
    d.nextExpectedAt = firstExpectedAfter(schedule, at)
    return
  }
  const pending = d.nextExpectedAt
  if (pending === null) return
  if (at >= pending) {
    d.nextExpectedAt = firstExpectedAfter(schedule, at)
    return
  }
  if (kind === "end") return
  const cap = Math.max(d.config.graceSeconds * 1000, EARLY_FLOOR_MS)
  if (at < pending - cap) return
  // Only now is the gap needed: previousOccurrence is the costly call here (docs/performance.md#time-zones).
  const previous = previousOccurrence(schedule, pending - 1)
  const window = previous === undefined ? cap : Math.min(cap, (pending - previous) / 2)
  if (at >= pending - window) d.nextExpectedAt = firstExpectedAfter(schedule, pending)
}

const onRunStarted = (d: Draft, event: Extract<EngineEvent, { _tag: "RunStarted" }>): void => {
  d.lastPingAt = d.lastPingAt === null ? event.at : Math.max(d.lastPingAt, event.at)
  if (d.openRuns.some((r) => r.id === event.runId)) return // delivered twice
  d.openRuns = [...d.openRuns, { id: event.runId, startedAt: event.at, lateReported: false }]
  satisfy(d, event.at, "begin")
}

const round2 = (x: number): number => Math.round(x * 100) / 100

type AnomalyCandidate = { readonly severity: "LOW" | "MEDIUM"; readonly details: Readonly<Record<string, unknown>> }

/** One ANOMALY per run: the duration rule or the SLA, the more severe one (the SLA on a tie). */
const anomalyOf = (
  durationMs: number,
  verdict: DurationVerdict | null,
  medianMs: number | null,
  sla: SlaVerdict,
  config: MonitorConfig
): AnomalyCandidate | null => {
  const byDuration: AnomalyCandidate | null = verdict !== null && verdict._tag === "Anomalous"
    ? {
      severity: verdict.severity,
      details: { rule: verdict.direction, durationMs, medianMs: Math.round(medianMs!), z: round2(verdict.z) }
    }
    : null
  const bySla: AnomalyCandidate | null = sla._tag === "Breached" && config.sla !== null
    ? {
      severity: sla.severity,
      details: {
        rule: "sla",
        durationTarget: config.sla.durationTarget,
        maxDurationMs: config.sla.maxDurationMs,
        observedMs: sla.observedMs
      }
    }
    : null
  if (byDuration === null) return bySla
  if (bySla === null) return byDuration
  return byDuration.severity === "MEDIUM" && bySla.severity === "LOW" ? byDuration : bySla
}

const onRunFinished = (d: Draft, effects: Array<EngineEffect>, event: Extract<EngineEvent, { _tag: "RunFinished" }>, ctx: RulesContext) => {
  const { at, run } = event
  d.lastPingAt = d.lastPingAt === null ? at : Math.max(d.lastPingAt, at)
  if (d.openRuns.length > 0) d.openRuns = d.openRuns.filter((r) => r.id !== run.id)
  satisfy(d, at, run.startInferred ? "begin" : "end")
  d.lastRunStatus = run.status

  // LATE resolves when its run finishes, success or fail (and no other late run is still open).
  if (!d.openRuns.some((r) => r.lateReported)) resolve(d, effects, ctx, LATE_ONLY, at, "the late run finished")

  const history = d.recentDurations
  if (run.status === "FAIL") {
    // Counted toward the failure threshold unless paused or inside a maintenance window (where
    // raise suppresses what would have reached it).
    const threshold = failureThresholdOf(d.config)
    const counted = !d.config.paused && !ctx.inMaintenance(d.config.id, at)
    d.streak = counted ? afterFailure(d.streak, "FAIL", threshold) : afterUncountedRun(d.streak)
    if (counted ? !reachesFailureThreshold(d.streak, threshold) : !wouldReachFailureThreshold(d.streak, threshold)) return
    const expected = history.percentile(0.5)
    raise(d, effects, ctx, {
      type: "FAIL",
      severity: "HIGH",
      at,
      runId: run.id,
      details: {
        exitCode: run.exitCode,
        durationMs: run.durationMs,
        output: run.output,
        expectedDurationMs: expected === null ? null : Math.round(expected),
        ...thresholdDetails(threshold)
      }
    })
    return
  }

  // Every success counts toward the recovery threshold (inside a window too: resolve waits for its end).
  d.streak = afterSuccess(d.streak)
  const recovery = recoveryThresholdOf(d.config)
  if (reachesRecoveryThreshold(d.streak, recovery)) {
    resolve(d, effects, ctx, MISSED_AND_FAIL, at, recovery === 1 ? "a successful run" : `${recovery} successful runs in a row`)
  }
  if (!validDuration(run.durationMs)) return // nothing to judge, and nothing learned
  const durationMs = run.durationMs
  // A run never judges itself: one the history holds already (loaded from the database after the
  // run was committed) is judged without it, and neither it nor a run too old for the history is added.
  const model = learnHistory(event.history === "kept" ? history.without(durationMs) : history)
  const verdict = model === null ? null : judgeDuration(model, durationMs)
  const withThis = event.history === undefined ? history.insert(durationMs, run.startedAt) : history
  d.recentDurations = withThis
  const sla = checkSlaOfHistory(withThis, d.config.sla)
  const anomaly = anomalyOf(durationMs, verdict, model?.medianMs ?? null, sla, d.config)
  if (anomaly !== null) {
    raise(d, effects, ctx, { type: "ANOMALY", severity: anomaly.severity, at, runId: run.id, details: anomaly.details })
  } else if (verdict !== null) {
    resolve(d, effects, ctx, ANOMALY_ONLY, at, "a run within the expected duration")
  }
}

const sameSchedule = (a: Schedule, b: Schedule): boolean =>
  a.type === b.type && a.expression === b.expression && a.timezone === b.timezone &&
  (a.type !== "interval" || b.type !== "interval" || a.intervalMs === b.intervalMs)

const onConfigChanged = (d: Draft, event: Extract<EngineEvent, { _tag: "ConfigChanged" }>): void => {
  const previous = d.config
  const config = event.config
  d.config = config
  if (config.paused) {
    d.nextExpectedAt = null
    return
  }
  if (previous.paused) {
    // Resumed: what fell due while paused is not held against the job, and the status is the last
    // run's (as the monitors API shows it at once), not a miss from before the pause.
    d.nextExpectedAt = firstExpectedAfter(config.schedule, event.at)
    d.streak = afterUncountedRun(d.streak)
  } else if (!sameSchedule(previous.schedule, config.schedule)) {
    d.nextExpectedAt = firstExpectedAfter(
      config.schedule,
      config.schedule.type === "interval" ? (d.lastPingAt ?? event.at) : event.at
    )
  } else if (d.nextExpectedAt === null) {
    d.nextExpectedAt = firstExpectedAfter(config.schedule, event.at)
  }
}

const onIncidentChanged = (d: Draft, event: Extract<EngineEvent, { _tag: "IncidentChanged" }>): void => {
  if (event.status === "RESOLVED") {
    d.activeIncidents = d.activeIncidents.filter((a) => a.type !== event.type)
    return
  }
  const status = event.status
  if (d.activeIncidents.some((a) => a.type === event.type)) {
    d.activeIncidents = d.activeIncidents.map((a) => (a.type === event.type ? { ...a, status } : a))
  } else {
    d.activeIncidents = [...d.activeIncidents, { type: event.type, status, runId: null }]
  }
}

/**
 * The whole judgement: the next state and the effects, for one event. At most one UpdateMonitor,
 * last, when the status or nextExpectedAt changed.
 */
export const decide = (state: MonitorState, event: EngineEvent, ctx: RulesContext): Decision => {
  const d: Draft = { ...state }
  const effects: Array<EngineEffect> = []
  advance(d, effects, event.at, ctx, Number.NEGATIVE_INFINITY)
  switch (event._tag) {
    case "Tick":
      break
    case "RunStarted":
      onRunStarted(d, event)
      break
    case "RunFinished":
      onRunFinished(d, effects, event, ctx)
      break
    case "ConfigChanged":
      onConfigChanged(d, event)
      // Deadlines that the new settings put in the past are judged now, at the change.
      advance(d, effects, event.at, ctx, event.at)
      break
    case "IncidentChanged":
      onIncidentChanged(d, event)
      break
  }
  const next: MonitorState = {
    config: d.config,
    nextExpectedAt: d.nextExpectedAt,
    lastPingAt: d.lastPingAt,
    openRuns: d.openRuns,
    activeIncidents: d.activeIncidents,
    recentDurations: d.recentDurations,
    lastRunStatus: d.lastRunStatus,
    streak: d.streak
  }
  const status = statusOf(next)
  if (status !== statusOf(state) || next.nextExpectedAt !== state.nextExpectedAt) {
    effects.push({ _tag: "UpdateMonitor", status, nextExpectedAt: next.nextExpectedAt })
  }
  return { state: next, effects }
}
