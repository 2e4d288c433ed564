import { describe, expect, it } from "@effect/vitest"
import { FastCheck } from "effect"
import { percentile } from "../../src/Engine/Anomaly.js"
import { DurationHistory } from "../../src/Engine/DurationHistory.js"

/**
 * The history keeps the newest `memory` durations by their runs' start, then duration, as the
 * database orders them; runs arrive in any order of start (overlapping runs, inferred starts). The
 * reference: all durations so far sorted by (start, duration), the last `memory` of them (runs of
 * the same start and duration are interchangeable).
 */

interface Run {
  readonly durationMs: number
  readonly startedAt: number
}

const runsArb = FastCheck.array(
  FastCheck.record({
    durationMs: FastCheck.oneof(FastCheck.integer({ min: 0, max: 5 }), FastCheck.integer({ min: 0, max: 100_000 })),
    // few distinct starts: ties and runs older than the whole history are common
    startedAt: FastCheck.oneof(FastCheck.integer({ min: 0, max: 30 }), FastCheck.integer({ min: 0, max: 1_000_000 }))
  }),
  { maxLength: 300 }
)

const after = (a: Run, b: Run) => a.startedAt > b.startedAt || (a.startedAt === b.startedAt && a.durationMs > b.durationMs)

/** The reference: runs kept by (start, duration), the last `memory`. */
const reference = (kept: ReadonlyArray<Run>, run: Run, memory: number): Array<Run> => {
  let at = kept.length
  while (at > 0 && after(kept[at - 1]!, run)) at--
  if (kept.length === memory && at === 0) return [...kept]
  const next = [...kept.slice(0, at), run, ...kept.slice(at)]
  return next.length > memory ? next.slice(next.length - memory) : next
}

describe("DurationHistory", () => {
  it.prop(
    "insert keeps the newest `memory` runs by start, with a sorted copy; every older version still answers",
    [runsArb, FastCheck.integer({ min: 1, max: 60 })],
    ([runs, memory]) => {
      let history = DurationHistory.empty(memory)
      let expected: Array<Run> = []
      const versions: Array<{ history: DurationHistory; runs: Array<Run> }> = []
      for (const run of runs) {
        versions.push({ history, runs: expected })
        expect(history.holds(run.durationMs, run.startedAt)).toBe(expected.some((r) => r.startedAt === run.startedAt && r.durationMs === run.durationMs))
        history = history.insert(run.durationMs, run.startedAt)
        expected = reference(expected, run, memory)
        expect(history.toArray()).toEqual(expected.map((r) => r.durationMs))
        expect(history.startsArray()).toEqual(expected.map((r) => r.startedAt))
      }
      const values = expected.map((r) => r.durationMs)
      expect([...history.sorted()]).toEqual([...values].sort((a, b) => a - b))
      expect(history.percentile(0.5)).toBe(percentile(values, 0.5))
      for (const { history: old, runs: had } of versions.slice(-5).concat(versions.slice(0, 3))) {
        expect(old.toArray()).toEqual(had.map((r) => r.durationMs))
        expect(old.startsArray()).toEqual(had.map((r) => r.startedAt))
        expect([...old.sorted()]).toEqual(had.map((r) => r.durationMs).sort((a, b) => a - b))
      }
    }
  )

  it("a run that finishes after a later started one takes its place by start", () => {
    let h = DurationHistory.empty(3)
    h = h.insert(100, 1_000)
    h = h.insert(300, 3_000)
    h = h.insert(200, 2_000) // started before the run of 300, finished after it
    expect(h.toArray()).toEqual([100, 200, 300])
    // full: a newer run drops the oldest by start; a run older than all of them is not kept
    h = h.insert(400, 4_000)
    expect(h.toArray()).toEqual([200, 300, 400])
    expect(h.insert(50, 500)).toBe(h)
    expect(h.insert(250, 2_500).toArray()).toEqual([250, 300, 400])
  })

  it("runs of the same start are kept by duration; holds tells a run of the same start and duration", () => {
    let h = DurationHistory.from([100, 200, 300], 200, [1_000, 2_000, 3_000])
    expect(h.holds(200, 2_000)).toBe(true)
    expect(h.holds(300, 3_000)).toBe(true)
    expect(h.holds(250, 2_000)).toBe(false)
    expect(h.holds(200, 2_500)).toBe(false)
    expect(h.holds(100, 4_000)).toBe(false)
    expect(DurationHistory.empty(200).holds(0, 0)).toBe(false)
    h = h.insert(150, 2_000).insert(250, 2_000).insert(50, 3_000)
    expect(h.toArray()).toEqual([100, 150, 200, 250, 50, 300])
  })

  it("without removes one occurrence, to judge a run the history holds already", () => {
    const h = DurationHistory.from([100, 200, 100, 300], 200, [1, 2, 3, 4])
    expect(h.without(100).toArray()).toEqual([100, 200, 300])
    expect([...h.without(100).sorted()]).toEqual([100, 200, 300])
    expect(h.without(999).toArray()).toEqual([100, 200, 100, 300])
    expect(h.toArray()).toEqual([100, 200, 100, 300])
  })

  it("durations without starts (unknown) are older than any run that comes", () => {
    const h = DurationHistory.from([5, 6], 200).insert(7, -1e15)
    expect(h.toArray()).toEqual([5, 6, 7])
  })
})
