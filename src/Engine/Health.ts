/**
 * The health score of a monitor (docs/decisions.md#monitors): a number from 0 to 100 over the last 30 days.
 * Pure and deterministic; docs/incident-rules.md ("Health score") has the formula and worked
 * examples. The inputs are counts the database produces with one aggregate query.
 */
import { nextOccurrence, type Schedule } from "../Monitors/Schedule.js"
import type { Severity } from "./Model.js"

export const HEALTH_WINDOW_MS = 30 * 86_400_000

/** Weights of the four shares; they add up to 1. */
export const HEALTH_WEIGHTS = { success: 0.4, arrival: 0.3, onTime: 0.15, sla: 0.15 } as const
/** Points taken off per active (OPEN or ACKNOWLEDGED) incident, by severity. */
export const INCIDENT_PENALTY: Readonly<Record<Severity, number>> = { HIGH: 15, MEDIUM: 8, LOW: 3 }
/** Cron occurrences counted one by one before the rest of a window is extrapolated. */
export const MAX_COUNTED_OCCURRENCES = 2_000

export interface HealthInput {
  /** Occurrences of the schedule in the window (expectedRunCount from max(windowStart, createdAt) to now). */
  readonly expectedRuns: number
  /** Runs that started in the window (any status, RUNNING included). */
  readonly receivedRuns: number
  /** Of those, runs that succeeded. */
  readonly successfulRuns: number
  /** Of those, runs that were not LATE (no LATE incident names them). */
  readonly onTimeRuns: number
  /** Successful runs with a duration, when the monitor has an SLA (0 without one). */
  readonly slaEvaluatedRuns: number
  /** Of those, runs whose duration is within the SLA's maxDurationMs. */
  readonly slaMetRuns: number
  /** Active incidents by severity. */
  readonly openIncidents: Readonly<Record<Severity, number>>
}

const count = (x: number): number => (Number.isFinite(x) && x > 0 ? Math.floor(x) : 0)
const share = (part: number, whole: number): number => (whole <= 0 ? 1 : Math.min(1, count(part) / whole))

/**
 * 100 × (0.40 success + 0.30 arrival + 0.15 on time + 0.15 SLA) − 15 per HIGH, 8 per MEDIUM,
 * 3 per LOW active incident; clamped to 0..100 and rounded to one decimal.
 *
 * The shares are of D = max(expectedRuns, receivedRuns), so runs beyond the schedule never lift
 * a share above 1: success = successful / D, arrival = received / D, on time = onTime / D;
 * SLA = slaMet / slaEvaluated. A share with nothing to measure (denominator 0) counts as 1,
 * which is why a monitor with no runs yet, and nothing expected yet, scores 100.
 */
export const healthScore = (input: HealthInput): number => {
  const expected = count(input.expectedRuns)
  const received = count(input.receivedRuns)
  const d = Math.max(expected, received)
  const base = 100 * (
    HEALTH_WEIGHTS.success * share(input.successfulRuns, d) +
    HEALTH_WEIGHTS.arrival * share(received, d) +
    HEALTH_WEIGHTS.onTime * share(input.onTimeRuns, d) +
    HEALTH_WEIGHTS.sla * share(input.slaMetRuns, count(input.slaEvaluatedRuns))
  )
  const penalty = INCIDENT_PENALTY.HIGH * count(input.openIncidents.HIGH) +
    INCIDENT_PENALTY.MEDIUM * count(input.openIncidents.MEDIUM) +
    INCIDENT_PENALTY.LOW * count(input.openIncidents.LOW)
  const score = Math.min(100, Math.max(0, base - penalty))
  // Round half up on the decimal, away from binary noise (0.15 × 100 is 15.000000000000002).
  return Math.round(Math.round(score * 1e6) / 1e5) / 10
}

/**
 * How many runs a schedule expects in (from, to]. Interval: ⌊(to − from) / interval⌋. Cron: the
 * occurrences, counted one by one up to MAX_COUNTED_OCCURRENCES and extrapolated beyond (an
 * every-minute job has 43,200 in 30 days; the estimate is within a few runs of the truth).
 */
export const expectedRunCount = (schedule: Schedule, from: number, to: number): number => {
  if (!Number.isFinite(from) || !Number.isFinite(to) || to <= from) return 0
  if (schedule.type === "interval") {
    const step = nextOccurrence(schedule, 0)
    return step === undefined || step <= 0 ? 0 : Math.floor((to - from) / step)
  }
  let n = 0
  let cursor = from
  for (;;) {
    const next = nextOccurrence(schedule, cursor)
    if (next === undefined || next <= cursor || next > to) return n
    n++
    cursor = next
    if (n >= MAX_COUNTED_OCCURRENCES) break
  }
  // Extrapolate at the observed rate over the rest of the window.
  return n + Math.floor(((to - cursor) * n) / (cursor - from))
}
