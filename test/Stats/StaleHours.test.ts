import { describe, expect, it } from "vitest"
import { mergeHourRanges } from "../../src/Stats/StatsRepo.js"

const at = (iso: string) => new Date(iso)
const hours = (ranges: ReturnType<typeof mergeHourRanges>) => ranges.map((r) => [r.from.toISOString(), r.to.toISOString()])

describe("mergeHourRanges: TimescaleDB's invalidated spans as whole hours read from raw runs", () => {
  it("an inclusive span covers the hours of its first and last instants, and every hour between", () => {
    expect(hours(mergeHourRanges([{ lo: at("2026-11-17T21:12:33Z"), hi: at("2026-11-17T21:32:33Z") }]))).toEqual([
      ["2026-11-17T21:00:00.000Z", "2026-11-17T22:00:00.000Z"]
    ])
    // As the materialization log holds them: bucket-aligned, ending a microsecond before the next bucket.
    expect(hours(mergeHourRanges([{ lo: at("2026-11-17T21:00:00Z"), hi: at("2026-11-17T23:59:59.999Z") }]))).toEqual([
      ["2026-11-17T21:00:00.000Z", "2026-11-18T00:00:00.000Z"]
    ])
  })

  it("overlapping and adjacent spans merge; the rest stay apart, in order", () => {
    expect(hours(mergeHourRanges([
      { lo: at("2026-11-20T05:10:00Z"), hi: at("2026-11-20T05:20:00Z") },
      { lo: at("2026-11-17T21:00:00Z"), hi: at("2026-11-17T21:59:59.999Z") },
      { lo: at("2026-11-17T22:30:00Z"), hi: at("2026-11-18T01:00:00Z") },
      { lo: at("2026-11-17T23:00:00Z"), hi: at("2026-11-17T23:30:00Z") }
    ]))).toEqual([
      ["2026-11-17T21:00:00.000Z", "2026-11-18T02:00:00.000Z"],
      ["2026-11-20T05:00:00.000Z", "2026-11-20T06:00:00.000Z"]
    ])
    expect(mergeHourRanges([])).toEqual([])
  })
})
