import { describe, expect, it } from "@effect/vitest"
import { FastCheck } from "effect"
import { DeadlineHeap } from "../../src/Engine/Heap.js"

const drain = (heap: DeadlineHeap) => {
  const out: Array<number> = []
  for (let e = heap.pop(); e !== undefined; e = heap.pop()) out.push(e.at)
  return out
}

describe("DeadlineHeap", () => {
  it("pops deadlines in order, after pushes and after a rebuild (the engine's compaction)", () => {
    FastCheck.assert(
      FastCheck.property(
        FastCheck.array(FastCheck.integer({ min: 0, max: 1_000 })),
        FastCheck.array(FastCheck.integer({ min: 0, max: 1_000 })),
        (pushed, rebuilt) => {
          const heap = new DeadlineHeap()
          for (const at of pushed) heap.push({ at, key: "k", version: 0 })
          expect(drain(heap)).toEqual([...pushed].sort((a, b) => a - b))
          for (const at of pushed) heap.push({ at, key: "stale", version: 0 })
          heap.rebuild(rebuilt.map((at) => ({ at, key: "live", version: 1 })))
          expect(heap.size).toBe(rebuilt.length)
          heap.push({ at: 500, key: "new", version: 2 })
          expect(drain(heap)).toEqual([...rebuilt, 500].sort((a, b) => a - b))
        }
      ),
      { numRuns: 500 }
    )
  })
})
