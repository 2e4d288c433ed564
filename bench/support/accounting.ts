import type { RunCounts } from "./database.js"
import type { DriverResult } from "./protocol.js"

/**
 * Acknowledged pings against rows in the database, for one phase. Pings still in flight when the
 * load stopped were sent but never answered: the service may have stored them (it answers after
 * the commit, but nobody reads the answer). So the rows of a phase must lie between the
 * acknowledged pings (fewer: an acknowledged ping is missing) and acknowledged + unanswered (more:
 * rows nobody asked for).
 */
export interface Accounting {
  /** 2xx answers to starts (pairs) or successes. */
  readonly ackedStarts: number
  readonly ackedSuccesses: number
  /** Sent, never answered (in flight when the load stopped, or timed out). */
  readonly unanswered: number
  /** New rows in `runs`, and rows newly in status SUCCESS. */
  readonly newRuns: number
  readonly newSuccess: number
  /** Runs left RUNNING by this phase (pairs: starts whose success was not sent before the stop). */
  readonly leftRunning: number
  /** Acknowledged pings with no row: must be 0. */
  readonly missing: number
  /** Rows beyond acknowledged + unanswered: must be 0. */
  readonly unexplained: number
}

const sum2xx = (counts: Readonly<Record<string, number>> | undefined) =>
  Object.entries(counts ?? {}).reduce((n, [status, c]) => (status.startsWith("2") ? n + c : n), 0)

export const account = (result: DriverResult, before: RunCounts, after: RunCounts): Accounting => {
  const answered = result.count2xx + result.non2xx
  const unanswered = Math.max(0, result.sent - answered)
  const newRuns = after.total - before.total
  const newSuccess = after.success - before.success
  if (result.mode === "success" || result.mode === "pingUrl") {
    // No run is open when success pings arrive (success phases run first), so each one is a new run
    // (the ping URL phases send success pings too).
    const acked = result.count2xx
    return {
      ackedStarts: 0,
      ackedSuccesses: acked,
      unanswered,
      newRuns,
      newSuccess,
      leftRunning: after.running - before.running,
      missing: Math.max(0, acked - newSuccess) + Math.max(0, acked - newRuns),
      unexplained: Math.max(0, newRuns - acked - unanswered)
    }
  }
  const ackedStarts = sum2xx(result.byKind["start"])
  const ackedSuccesses = sum2xx(result.byKind["success"])
  return {
    ackedStarts,
    ackedSuccesses,
    unanswered,
    newRuns,
    newSuccess,
    leftRunning: after.running - before.running,
    // Each acknowledged start is a run; each acknowledged success closed one of them.
    missing: Math.max(0, ackedStarts - newRuns) + Math.max(0, ackedSuccesses - newSuccess),
    unexplained: Math.max(0, newRuns - ackedStarts - unanswered) + Math.max(0, newSuccess - ackedSuccesses - unanswered)
  }
}
