import { Effect } from "effect"
import { scheduleOf } from "../Monitors/StoredSchedule.js"
import type { MonitorRow } from "../Monitors/MonitorsRepo.js"
import { DurationHistory } from "./DurationHistory.js"
import { type ActiveIncidentRow, EngineRepo, type EngineMonitorRow, type OpenRunRow, type RunSinceRow } from "./EngineRepo.js"
import { type ActiveIncident, DURATION_MEMORY, type EngineEvent, type MonitorConfig, type MonitorState, type OpenRunState } from "./Model.js"
import { initialState } from "./Rules.js"

/**
 * What a monitor actor starts from: its state rebuilt from the database, built by one function
 * whether the monitor is loaded alone (a monitor created or changed, an actor rebuilt by
 * supervision, a ping for a monitor this instance had not loaded) or with many (the start-up;
 * later, the monitors of the shards an instance acquires).
 */

/** A monitor's settings as the engine sees them, from its row. */
export const configOf = (row: MonitorRow): MonitorConfig => ({
  id: row.id,
  orgId: row.org_id,
  name: row.name,
  schedule: scheduleOf(row),
  graceSeconds: row.grace_seconds,
  maxRuntimeSeconds: row.max_runtime_seconds,
  sla: row.sla,
  autoResolve: row.auto_resolve,
  paused: row.paused,
  createdAt: row.created_at.getTime(),
  failureThreshold: row.failure_threshold,
  recoveryThreshold: row.recovery_threshold
})

/** A monitor's recent successful durations (oldest first by start) with their runs' starts, epoch ms. */
export interface LoadedDurations {
  readonly values: ReadonlyArray<number>
  readonly starts: ReadonlyArray<number>
  /** Of the runs the caller asked about, those the history holds. */
  readonly held: ReadonlySet<string>
}

export interface LoadedMonitors {
  readonly states: ReadonlyArray<MonitorState>
  /**
   * The monitors whose state holds the database's history of durations already; the others load
   * it at their first event that needs it. (A set of the few, not a wrapper per monitor: the
   * start-up's garbage stays in the idle process's RSS.)
   */
  readonly durationsLoaded: ReadonlySet<string>
  /** Monitors whose rows cannot be judged (their schedule does not parse): logged, no actor. */
  readonly invalid: ReadonlyArray<{ readonly id: string; readonly reason: string }>
}

const NO_RUNS: ReadonlySet<string> = new Set()
const NO_DURATIONS: LoadedDurations = { values: [], starts: [], held: NO_RUNS }

/** A run in progress whose LATE limit is learned from past durations needs them at once, not at the actor's next event. */
const learnsLateLimit = (state: MonitorState) => state.openRuns.length > 0 && state.config.maxRuntimeSeconds === null

const groupBy = <Row extends { readonly monitor_id: string }, A>(rows: ReadonlyArray<Row>, f: (row: Row) => A) => {
  const byMonitor = new Map<string, Array<A>>()
  for (const row of rows) {
    const list = byMonitor.get(row.monitor_id)
    if (list === undefined) byMonitor.set(row.monitor_id, [f(row)])
    else list.push(f(row))
  }
  return byMonitor
}

/** Runs as the events an actor would have had of them after `since` (a failed run's output is fetched when it is judged). */
const eventsOf = (rows: ReadonlyArray<RunSinceRow>, since: number, withoutOutput = false): Array<EngineEvent> => {
  const events: Array<EngineEvent> = []
  for (const r of rows) {
    const startedAt = r.started_at.getTime()
    if (r.status === "RUNNING" || (r.finished_at !== null && startedAt > since && !r.start_inferred)) {
      events.push({ _tag: "RunStarted", runId: r.id, at: startedAt })
    }
    if (r.status !== "RUNNING" && r.finished_at !== null) {
      const finishedAt = r.finished_at.getTime()
      events.push({
        _tag: "RunFinished",
        at: finishedAt,
        run: {
          id: r.id,
          status: r.status,
          startedAt,
          finishedAt,
          durationMs: r.duration_ms === null ? null : Number(r.duration_ms),
          exitCode: r.exit_code,
          output: r.output,
          startInferred: r.start_inferred
        },
        ...(withoutOutput && r.status === "FAIL" ? { outputStored: true } : {})
      })
    }
  }
  return events
}

const openRunOf = (r: OpenRunRow): OpenRunState => ({ id: r.id, startedAt: r.started_at.getTime(), lateReported: r.late })
const activeIncidentOf = (a: ActiveIncidentRow): ActiveIncident => ({ type: a.type, status: a.status, runId: a.run_id })

/** The state of one monitor from its row, its runs in progress and its active incidents (oldest first). */
const stateOf = (row: EngineMonitorRow, openRuns: ReadonlyArray<OpenRunState>, active: ReadonlyArray<ActiveIncident>) =>
  initialState(configOf(row), {
    nextExpectedAt: row.next_expected_at?.getTime() ?? null,
    lastPingAt: row.last_ping_at?.getTime() ?? null,
    openRuns,
    activeIncidents: active,
    recentDurations: [],
    lastRunStatus: row.last_run_status,
    streak: {
      failures: row.consecutive_failures,
      successes: row.consecutive_successes,
      missedBelowThreshold: row.missed_below_threshold
    }
  })

export const withDurations = (state: MonitorState, durations: LoadedDurations): MonitorState => ({
  ...state,
  recentDurations: DurationHistory.from(durations.values, DURATION_MEMORY, durations.starts)
})

export class StateLoader extends Effect.Service<StateLoader>()("jobmon/StateLoader", {
  effect: Effect.gen(function*() {
    const repo = yield* EngineRepo
    /** Loads of many monitors are long by nature: not bound by the API's statement timeout; one monitor's are. */
    const statementLimitFor = (ids: ReadonlyArray<string> | undefined) =>
      ids === undefined || ids.length > 1
        ? <A, E, R>(effect: Effect.Effect<A, E, R>) => repo.withoutStatementTimeout(effect).pipe(Effect.orDie)
        : <A, E, R>(effect: Effect.Effect<A, E, R>) => effect

    /**
     * The recent durations of these monitors, by monitor, and which of the runs `asked` they hold
     * (an actor loading at an event asks about the runs of the events it marks: docs/engine.md).
     */
    const loadDurations = (ids: ReadonlyArray<string>, asked?: ReadonlyArray<string>) =>
      repo.recentDurations(ids, asked).pipe(
        statementLimitFor(ids),
        Effect.map((rows) => {
          const byMonitor = new Map<string, LoadedDurations>()
          for (const row of rows) {
            const held = row.held === undefined || row.held === null ? NO_RUNS : new Set(row.held)
            byMonitor.set(row.monitor_id, { values: row.durations, starts: row.starts, held })
          }
          return (id: string) => byMonitor.get(id) ?? NO_DURATIONS
        })
      )

    /**
     * The state of these monitors (every monitor when `ids` is undefined); a deleted or unknown
     * monitor is left out. Monitors with a run in progress whose LATE limit is learned get their
     * durations now (their LATE deadline depends on them).
     */
    const loadMonitors = (ids?: ReadonlyArray<string>) =>
      Effect.gen(function*() {
        const [rows, openRuns, activeIncidents] = yield* Effect.all([
          repo.monitors(ids),
          repo.openRuns(ids),
          repo.activeIncidents(ids)
        ]).pipe(statementLimitFor(ids))
        const openRunsBy = groupBy(openRuns, openRunOf)
        const activeBy = groupBy(activeIncidents, activeIncidentOf)
        const states: Array<MonitorState> = []
        const invalid: Array<{ id: string; reason: string }> = []
        for (const row of rows) {
          try {
            states.push(stateOf(row, openRunsBy.get(row.id) ?? [], activeBy.get(row.id) ?? []))
          } catch (error) {
            invalid.push({ id: row.id, reason: (error as Error).message })
          }
        }
        const durationsLoaded = new Set<string>()
        for (const state of states) if (learnsLateLimit(state)) durationsLoaded.add(state.config.id)
        if (durationsLoaded.size > 0) {
          const durationsOf = yield* loadDurations([...durationsLoaded])
          for (let i = 0; i < states.length; i++) {
            const state = states[i]!
            if (durationsLoaded.has(state.config.id)) states[i] = withDurations(state, durationsOf(state.config.id))
          }
        }
        return { states, durationsLoaded, invalid } satisfies LoadedMonitors
      })

    /** The ids of the monitors of these shards (cluster mode). */
    const monitorIdsOfShards = (shards: ReadonlyArray<number>) => repo.monitorIdsOfShards(shards).pipe(repo.withoutStatementTimeout, Effect.orDie)

    /**
     * A monitor's runs that started or finished after `since`, as the events the actor would have
     * had (cluster mode: checked before MISSED or LATE is raised).
     */
    const eventsSince = (monitorId: string, since: number) => Effect.map(repo.runsSince(monitorId, since), (rows) => eventsOf(rows, since))

    /**
     * Cluster mode, when shards are acquired: per monitor, the events of its runs that finished
     * after the last ping its row records (docs/engine.md, "Several instances"). A run an incident
     * already names as its cause is left out: the previous owner judged it.
     */
    const missedByShards = (shards: ReadonlyArray<number>) =>
      Effect.map(repo.runsMissedByShards(shards).pipe(repo.withoutStatementTimeout, Effect.orDie), (rows) => {
        const byMonitor = new Map<string, Array<EngineEvent>>()
        let i = 0
        while (i < rows.length) {
          const monitorId = rows[i]!.monitor_id
          const since = rows[i]!.since.getTime()
          let j = i
          while (j < rows.length && rows[j]!.monitor_id === monitorId) j++
          const events = eventsOf(rows.slice(i, j).filter((r) => !r.judged), since, true)
          if (events.length > 0) byMonitor.set(monitorId, events)
          i = j
        }
        return byMonitor
      })

    return { loadMonitors, loadDurations, monitorIdsOfShards, eventsSince, missedByShards, runOutput: repo.runOutput } as const
  }),
  dependencies: [EngineRepo.Default]
}) {}
