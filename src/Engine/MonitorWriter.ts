import { Effect, Queue, Schedule } from "effect"
import { EngineRepo, type MonitorStateColumns } from "./EngineRepo.js"
import type { MonitorStatus, Streak } from "./Model.js"

/**
 * Least time between two writes of the monitors' derived fields. With 1,000 monitors pinged a few
 * times a second each, every write updates nearly every row, so the window sets PostgreSQL's cost
 * per ping (measured in docs/performance.md, "Monitor writes at most once a second"). Incidents
 * are not delayed by it (they are written at once); a monitor's lastPingAt and status reach the
 * API within a second.
 */
export const MONITOR_FLUSH_MS = 1_000

/** How the engine's writes are retried before an actor (or this writer) gives up on one. */
export const writeRetry = Schedule.exponential("200 millis").pipe(Schedule.compose(Schedule.recurs(5)))

interface PendingMonitor {
  status?: MonitorStatus
  setNext?: boolean
  nextExpectedAt?: number | null
  lastPingAt?: number
  lastRunStatus?: "SUCCESS" | "FAIL"
  streak?: Streak
}

const columnsOf = (batch: ReadonlyMap<string, PendingMonitor>): MonitorStateColumns => {
  const ids: Array<string> = []
  const statuses: Array<string | null> = []
  const setNext: Array<boolean> = []
  // Instants as epoch ms (float8): cheaper to send than Date objects.
  const nextExpectedMs: Array<number | null> = []
  const lastPingMs: Array<number | null> = []
  const lastRunStatuses: Array<string | null> = []
  const failures: Array<number | null> = []
  const successes: Array<number | null> = []
  const missedBelowThreshold: Array<boolean | null> = []
  for (const [id, p] of batch) {
    ids.push(id)
    statuses.push(p.status ?? null)
    setNext.push(p.setNext === true)
    nextExpectedMs.push(p.nextExpectedAt ?? null)
    lastPingMs.push(p.lastPingAt ?? null)
    lastRunStatuses.push(p.lastRunStatus ?? null)
    failures.push(p.streak?.failures ?? null)
    successes.push(p.streak?.successes ?? null)
    missedBelowThreshold.push(p.streak?.missedBelowThreshold ?? null)
  }
  return { ids, statuses, setNext, nextExpectedMs, lastPingMs, lastRunStatuses, failures, successes, missedBelowThreshold }
}

const realDelay = (ms: number) =>
  Effect.async<void>((resume) => {
    const timer = setTimeout(() => resume(Effect.void), ms)
    return Effect.sync(() => clearTimeout(timer))
  })

/**
 * What the actors change on their monitors (status, next expected time, last ping, last run
 * status, the streak the thresholds count), written in one statement for all monitors with news, at most every MONITOR_FLUSH_MS: a
 * monitor pinged many times a second costs one row update per flush, not one per ping. Recording
 * a change is a map look-up and a few assignments (the ping path calls it), and what is pending is
 * written once more when the service stops.
 */
export class MonitorWriter extends Effect.Service<MonitorWriter>()("jobmon/MonitorWriter", {
  scoped: Effect.gen(function*() {
    const repo = yield* EngineRepo
    let pending = new Map<string, PendingMonitor>()
    let flushing = false
    const wake = yield* Queue.sliding<void>(1)
    /** Ends the coalescing window early (for whoever waits for the writes). */
    const hurryUp = yield* Queue.sliding<void>(1)

    const pendingFor = (id: string): PendingMonitor => {
      let p = pending.get(id)
      if (p === undefined) {
        p = {}
        pending.set(id, p)
        if (pending.size === 1) Queue.unsafeOffer(wake, undefined)
      }
      return p
    }

    /** An UpdateMonitor effect: the monitor's new status and next expected time. */
    const update = (monitorId: string, status: MonitorStatus, nextExpectedAt: number | null): void => {
      const p = pendingFor(monitorId)
      p.status = status
      p.nextExpectedAt = nextExpectedAt
      p.setNext = true
    }

    /** A ping reached the monitor at `at`; a finished run's status, when it finished one. */
    const pinged = (monitorId: string, at: number, runStatus: "SUCCESS" | "FAIL" | undefined): void => {
      const p = pendingFor(monitorId)
      p.lastPingAt = Math.max(p.lastPingAt ?? 0, at)
      if (runStatus !== undefined) p.lastRunStatus = runStatus
    }

    /** The monitor's consecutive failures and successes changed (docs/incident-rules.md#thresholds). */
    const streak = (monitorId: string, value: Streak): void => {
      pendingFor(monitorId).streak = value
    }

    const flush = Effect.suspend(() => {
      if (pending.size === 0) return Effect.void
      const batch = pending
      pending = new Map()
      flushing = true
      return repo.writeMonitorStates(columnsOf(batch)).pipe(
        Effect.retry(writeRetry),
        Effect.catchAllCause((cause) => Effect.logError("could not write monitor states", cause)),
        Effect.ensuring(Effect.sync(() => void (flushing = false)))
      )
    })

    yield* Effect.forkScoped(Effect.gen(function*() {
      for (;;) {
        if (pending.size === 0) yield* Queue.take(wake)
        yield* flush
        // Coalescing window: real time, whatever the Clock (it is a write cadence, not a rule).
        yield* Effect.raceFirst(realDelay(MONITOR_FLUSH_MS), Queue.take(hurryUp))
      }
    }))
    yield* Effect.addFinalizer(() => flush)

    /** Nothing pending and nothing being written. */
    const settled = (): boolean => pending.size === 0 && !flushing
    /** Write what is pending without waiting for the rest of the window. */
    const hurry = (): void => {
      if (pending.size > 0) Queue.unsafeOffer(hurryUp, undefined)
    }

    return { update, pinged, streak, settled, hurry, flushNow: flush } as const
  }),
  dependencies: [EngineRepo.Default]
}) {}
