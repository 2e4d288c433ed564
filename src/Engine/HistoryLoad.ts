import type { EngineEvent, MonitorState } from "./Model.js"

/**
 * How an actor's events meet the recent durations it loads from the database (docs/engine.md,
 * "Recent durations"). The history is loaded after the runs it holds were committed, while a run's
 * RunFinished reaches the actor only after its commit: the event that made the actor load, and
 * those queued behind it, may be of runs the loaded history holds already, and must not add them
 * again. They are marked here. An event of such a run that was not queued yet (committed just
 * before the load read, sent just after) finds a run of its very start and duration in the history:
 * `mayBeHeld` says so, the actor loads the history again and the event is marked then. So the
 * history is the database's whatever the timing, and the actor remembers no run ids. Pure.
 */

/** The runs a load is asked about: those of the current event and of the finished runs queued behind it. */
export const runsToMark = (mailbox: ReadonlyArray<EngineEvent>, current: EngineEvent): Array<string> => {
  const runs: Array<string> = []
  if (current._tag === "RunFinished") runs.push(current.run.id)
  for (const event of mailbox) if (event._tag === "RunFinished") runs.push(event.run.id)
  return runs
}

/**
 * After a load that holds the runs `held` (of those it was asked about): marks the queued
 * RunFinished events of those runs (in place in `mailbox`), and answers the current event (its run
 * was committed before the load read) marked, `kept` if the history holds it, `notKept` if not.
 * An event queued while the load ran was not asked about: it stays unmarked, and `mayBeHeld` sends
 * it to the database again if the history may hold its run.
 */
export const markLoaded = (mailbox: Array<EngineEvent>, held: ReadonlySet<string>, current: EngineEvent): EngineEvent => {
  for (let i = 0; i < mailbox.length; i++) {
    const event = mailbox[i]!
    if (event._tag !== "RunFinished") continue
    // A run the history does not hold was committed after the load read (to be added), unless
    // it was marked at an earlier load (then it is too old to keep).
    const history = held.has(event.run.id) ? "kept" : event.history === undefined ? undefined : "notKept"
    if (history !== event.history) mailbox[i] = { ...event, history }
  }
  if (current._tag !== "RunFinished") return current
  return { ...current, history: held.has(current.run.id) ? "kept" as const : "notKept" as const }
}

/**
 * Whether a finished run (not marked) has the start and duration of a run the history holds: it
 * may be that run (its event came after a load that read it), which only the database can tell.
 * Otherwise it is another run of the same millisecond and duration (rare), interchangeable with
 * it. One comparison for a run newer than all kept, a binary search otherwise; no query.
 */
export const mayBeHeld = (state: MonitorState, event: EngineEvent): boolean =>
  event._tag === "RunFinished" && event.history === undefined && event.run.status === "SUCCESS" &&
  typeof event.run.durationMs === "number" && state.recentDurations.holds(event.run.durationMs, event.run.startedAt)

/** Durations matter to finished runs and to LATE limits of open runs; a MISSED check needs none. */
export const needsDurations = (state: MonitorState, event: EngineEvent): boolean =>
  event._tag !== "ConfigChanged" && !(event._tag === "Tick" && state.openRuns.length === 0)
