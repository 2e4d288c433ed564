import { describe, expect, it } from "@effect/vitest"
import { pair, type OpenRun, type PingInput } from "../../src/Pings/Pairing.js"

let counter = 0
const ctx = (finished: ReadonlyArray<string> = []) => ({
  monitorId: "m",
  orgId: "o",
  newId: () => `new-${++counter}`,
  isFinished: (id: string) => finished.includes(id)
})
const at = (kind: PingInput["kind"], receivedAt: number, extra: Partial<PingInput> = {}): PingInput => ({ kind, receivedAt, ...extra })

describe("pairing pings into runs", () => {
  it("start opens a RUNNING run; success closes it with finish − start as duration", () => {
    const started = pair(ctx(), [], at("start", 1000))
    if (started._tag !== "Row") throw new Error(started._tag)
    expect(started.row).toMatchObject({ status: "RUNNING", startedAt: 1000, finishedAt: null, durationMs: null, startInferred: false })
    const done = pair(ctx(), started.openRuns, at("success", 4500))
    if (done._tag !== "Row") throw new Error(done._tag)
    expect(done.row).toMatchObject({ id: started.row.id, status: "SUCCESS", startedAt: 1000, finishedAt: 4500, durationMs: 3500 })
    expect(done.openRuns).toEqual([])
  })

  it("durationMs from the body wins over finish − start", () => {
    const open: Array<OpenRun> = [{ id: "a", startedAt: 0 }]
    const done = pair(ctx(), open, at("fail", 10_000, { durationMs: 1234, exitCode: 3 }))
    if (done._tag !== "Row") throw new Error(done._tag)
    expect(done.row).toMatchObject({ id: "a", status: "FAIL", durationMs: 1234, exitCode: 3 })
  })

  it("without runId the newest open run closes; with runId exactly that one", () => {
    const open: Array<OpenRun> = [{ id: "old", startedAt: 100 }, { id: "new", startedAt: 200 }]
    const newest = pair(ctx(), open, at("success", 300))
    if (newest._tag !== "Row") throw new Error(newest._tag)
    expect(newest.row.id).toBe("new")
    expect(newest.openRuns).toEqual([{ id: "old", startedAt: 100 }])
    const named = pair(ctx(), open, at("success", 300, { runId: "old" }))
    if (named._tag !== "Row") throw new Error(named._tag)
    expect(named.row).toMatchObject({ id: "old", durationMs: 200 })
    expect(named.openRuns).toEqual([{ id: "new", startedAt: 200 }])
  })

  it("success with no open run records a run whose start is inferred", () => {
    const withDuration = pair(ctx(), [], at("success", 10_000, { durationMs: 2500 }))
    if (withDuration._tag !== "Row") throw new Error(withDuration._tag)
    expect(withDuration.row).toMatchObject({ startedAt: 7500, startInferred: true, finishedAt: 10_000, durationMs: 2500 })
    const bare = pair(ctx(), [], at("fail", 10_000))
    if (bare._tag !== "Row") throw new Error(bare._tag)
    expect(bare.row).toMatchObject({ startedAt: 10_000, startInferred: true, durationMs: null, status: "FAIL" })
  })

  it("a runId that is not open is unknown, or finished when it was seen finishing", () => {
    expect(pair(ctx(), [], at("success", 1, { runId: "x" }))._tag).toBe("UnknownRun")
    expect(pair(ctx(["x"]), [], at("success", 1, { runId: "x" }))._tag).toBe("RunFinished")
    expect(pair(ctx(), [{ id: "x", startedAt: 0 }], at("start", 1, { runId: "x" }))._tag).toBe("RunFinished")
  })
})
