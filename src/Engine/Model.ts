import type { DurationHistory } from "./DurationHistory.js"
import type { Schedule } from "../Monitors/Schedule.js"

/**
 * The incident engine's vocabulary. Decisions are pure functions over these types
 * (`src/Engine/Rules.ts`): `(state, event, now) → (state, effects)`; the monitor actors
 * (`src/Engine/Actors.ts`) hold the state, feed the events and carry out the effects.
 * All times are epoch milliseconds.
 */

export type IncidentType = "MISSED" | "LATE" | "FAIL" | "ANOMALY"
export type Severity = "HIGH" | "MEDIUM" | "LOW"
export type IncidentStatus = "OPEN" | "ACKNOWLEDGED" | "RESOLVED"
export type MonitorStatus = "NEW" | "OK" | "RUNNING" | "LATE" | "MISSED" | "FAILING" | "PAUSED"

export interface Sla {
  readonly durationTarget: "p95" | "p99"
  readonly maxDurationMs: number
}

/** A monitor's settings, as the engine sees them. */
export interface MonitorConfig {
  readonly id: string
  readonly orgId: string
  readonly name: string
  readonly schedule: Schedule
  readonly graceSeconds: number
  readonly maxRuntimeSeconds: number | null
  readonly sla: Sla | null
  readonly autoResolve: boolean
  readonly paused: boolean
  readonly createdAt: number
  /**
   * Consecutive failed runs or missed occurrences before a FAIL or MISSED incident opens, 1 to
   * MAX_THRESHOLD (docs/incident-rules.md#thresholds). Absent: 1, every failure opens one.
   */
  readonly failureThreshold?: number | undefined
  /** Consecutive successful runs before an active FAIL or MISSED incident resolves automatically. Absent: 1. */
  readonly recoveryThreshold?: number | undefined
}

/** The highest failureThreshold and recoveryThreshold; the streak counts stop there (nothing above it is compared). */
export const MAX_THRESHOLD = 100

/**
 * The outcomes in a row that the thresholds compare with (docs/incident-rules.md#thresholds). Failed
 * runs and missed occurrences inside a maintenance window (or while paused) are not counted.
 * Persisted on the monitor row, so a rebuilt actor goes on counting where it stopped.
 */
export interface Streak {
  /** Failed runs and missed occurrences since the last successful run, at most MAX_THRESHOLD. */
  readonly failures: number
  /** Successful runs since the last failed run or missed occurrence, at most MAX_THRESHOLD. */
  readonly successes: number
  /**
   * The newest outcome is a missed occurrence that opened no incident (below failureThreshold): the
   * status is MISSED until a run finishes (a failed run below the threshold shows FAILING by the last run).
   */
  readonly missedBelowThreshold: boolean
}

export const NO_STREAK: Streak = { failures: 0, successes: 0, missedBelowThreshold: false }

export interface OpenRunState {
  readonly id: string
  readonly startedAt: number
  /** A LATE incident was raised for this run already. */
  readonly lateReported: boolean
}

/** An incident that is OPEN or ACKNOWLEDGED (at most one per type per monitor). */
export interface ActiveIncident {
  readonly type: IncidentType
  readonly status: "OPEN" | "ACKNOWLEDGED"
  /** For LATE: the run it is about (it resolves when that run finishes). */
  readonly runId: string | null
}

/** A completed run, as the rules see it. */
export interface FinishedRun {
  readonly id: string
  readonly status: "SUCCESS" | "FAIL"
  readonly startedAt: number
  readonly finishedAt: number
  readonly durationMs: number | null
  readonly exitCode: number | null
  /** Already redacted and truncated. */
  readonly output: string | null
  readonly startInferred: boolean
}

export interface MonitorState {
  readonly config: MonitorConfig
  /** The expected time T of the next occurrence not yet accounted for (null: nothing expected). */
  readonly nextExpectedAt: number | null
  readonly lastPingAt: number | null
  readonly openRuns: ReadonlyArray<OpenRunState>
  readonly activeIncidents: ReadonlyArray<ActiveIncident>
  /**
   * Durations (ms) of the last DURATION_MEMORY successful runs with a duration, oldest first by
   * start (as the database orders them: started_at, then duration; equal ones are interchangeable).
   */
  readonly recentDurations: DurationHistory
  readonly lastRunStatus: "SUCCESS" | "FAIL" | null
  /** Consecutive failures and successes (a new object only when they change: the actor persists it then). */
  readonly streak: Streak
}

export const DURATION_MEMORY = 200
/** ANOMALY and the learned LATE limit need this many successful runs. */
export const MIN_RUNS_FOR_LEARNING = 20

/** Whether a maintenance window suppresses incidents for this monitor at an instant. */
export type MaintenanceCheck = (monitorId: string, at: number) => boolean

export type EngineEvent =
  /** A start ping opened a run. */
  | { readonly _tag: "RunStarted"; readonly runId: string; readonly at: number }
  /**
   * A success or fail ping finished a run (or recorded one whose start is inferred). `history` is
   * set when the actor loaded the recent durations from the database after this run was committed:
   * `"kept"`, the loaded history holds its duration already (judged without it, not added again);
   * `"notKept"`, it does not (the run is older than every run a full history keeps: not added).
   */
  | {
    readonly _tag: "RunFinished"
    readonly run: FinishedRun
    readonly at: number
    readonly history?: "kept" | "notKept" | undefined
    /** Cluster mode: the run has output, stored with it but not carried by the news (the actor reads it). */
    readonly outputStored?: boolean | undefined
  }
  /** The clock reached (or passed) the state's next deadline. */
  | { readonly _tag: "Tick"; readonly at: number }
  /** The user changed the settings (schedule, grace, pause, …). */
  | { readonly _tag: "ConfigChanged"; readonly config: MonitorConfig; readonly at: number }
  /** An incident was acknowledged or resolved by a user. */
  | { readonly _tag: "IncidentChanged"; readonly type: IncidentType; readonly status: IncidentStatus; readonly at: number }

export type EngineEffect =
  /** Open an incident, or count one more occurrence on the active one of that type. */
  | {
    readonly _tag: "RaiseIncident"
    readonly type: IncidentType
    readonly severity: Severity
    readonly at: number
    readonly runId: string | null
    readonly details: Readonly<Record<string, unknown>>
  }
  /** Resolve the active incidents of these types automatically (resolvedBy: system). */
  | { readonly _tag: "ResolveIncidents"; readonly types: ReadonlyArray<IncidentType>; readonly at: number; readonly reason: string }
  /** Persist the derived monitor fields. */
  | { readonly _tag: "UpdateMonitor"; readonly status: MonitorStatus; readonly nextExpectedAt: number | null }
  /** Would have raised an incident, but a maintenance window suppressed it (counted on the window's history). */
  | { readonly _tag: "Suppressed"; readonly type: IncidentType; readonly at: number }

export interface Decision {
  readonly state: MonitorState
  readonly effects: ReadonlyArray<EngineEffect>
}

/** Context the rules need besides the state: maintenance windows. */
export interface RulesContext {
  readonly inMaintenance: MaintenanceCheck
}
