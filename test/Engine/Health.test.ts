import { describe, expect, it } from "@effect/vitest"
import { Either } from "effect"
import { expectedRunCount, healthScore, type HealthInput } from "../../src/Engine/Health.js"
import { type Schedule, validateSchedule } from "../../src/Monitors/Schedule.js"

const MINUTE = 60_000
const DAY = 86_400_000
const at = (s: string): number => Date.parse(s)
const cron = (expression: string, timezone = "UTC"): Schedule =>
  Either.getOrThrow(validateSchedule({ type: "cron", expression, timezone }))
const every = (expression: string): Schedule => Either.getOrThrow(validateSchedule({ type: "interval", expression }))

const none = { HIGH: 0, MEDIUM: 0, LOW: 0 }
const input = (over: Partial<HealthInput>): HealthInput => ({
  expectedRuns: 0,
  receivedRuns: 0,
  successfulRuns: 0,
  onTimeRuns: 0,
  slaEvaluatedRuns: 0,
  slaMetRuns: 0,
  openIncidents: none,
  ...over
})

// The worked examples of docs/incident-rules.md ("Health score"), computed there by hand.
describe("Health: healthScore", () => {
  it("a monitor with no runs yet, and nothing expected yet, scores 100", () => {
    expect(healthScore(input({}))).toBe(100)
  })

  it("a perfect month scores 100", () => {
    expect(healthScore(input({ expectedRuns: 30, receivedRuns: 30, successfulRuns: 30, onTimeRuns: 30 }))).toBe(100)
  })

  it("daily job, one missed and two failed runs, the last failure still open: 79.5", () => {
    // 100 × (0.40 × 27/30 + 0.30 × 29/30 + 0.15 × 29/30 + 0.15 × 1) = 94.5; − 15 (FAIL, HIGH)
    const score = healthScore(input({
      expectedRuns: 30,
      receivedRuns: 29,
      successfulRuns: 27,
      onTimeRuns: 29,
      openIncidents: { HIGH: 1, MEDIUM: 0, LOW: 0 }
    }))
    expect(score).toBe(79.5)
  })

  it("every-5-minutes job with an SLA and an open LOW anomaly: 95.9", () => {
    // 100 × (0.40 × 8550/8640 + 0.30 × 8600/8640 + 0.15 × 8590/8640 + 0.15 × 8300/8550)
    //   = 39.583 + 29.861 + 14.913 + 14.561 = 98.919; − 3 (ANOMALY, LOW) = 95.919
    const score = healthScore(input({
      expectedRuns: 8_640,
      receivedRuns: 8_600,
      successfulRuns: 8_550,
      onTimeRuns: 8_590,
      slaEvaluatedRuns: 8_550,
      slaMetRuns: 8_300,
      openIncidents: { HIGH: 0, MEDIUM: 0, LOW: 1 }
    }))
    expect(score).toBe(95.9)
  })

  it("a job that never came: 15 for the unmeasured SLA share, minus the open MISSED: 0", () => {
    expect(healthScore(input({ expectedRuns: 30, openIncidents: { HIGH: 1, MEDIUM: 0, LOW: 0 } }))).toBe(0)
    expect(healthScore(input({ expectedRuns: 30 }))).toBe(15)
  })

  it("a slow job: runs came and succeeded but 10 of 30 were LATE, LATE still open: 87", () => {
    // 100 × (0.40 + 0.30 + 0.15 × 20/30 + 0.15) = 95; − 8 (LATE, MEDIUM)
    expect(healthScore(input({
      expectedRuns: 30,
      receivedRuns: 30,
      successfulRuns: 30,
      onTimeRuns: 20,
      openIncidents: { HIGH: 0, MEDIUM: 1, LOW: 0 }
    }))).toBe(87)
  })

  it("runs beyond the schedule never lift a share above 1", () => {
    // 12 runs for 10 expected, 9 succeeded: D = 12; 100 × (0.4 × 9/12 + 0.3 + 0.15 + 0.15) = 90
    expect(healthScore(input({ expectedRuns: 10, receivedRuns: 12, successfulRuns: 9, onTimeRuns: 12 }))).toBe(90)
    // an interval monitor in its first period: nothing expected yet, one run came and succeeded
    expect(healthScore(input({ expectedRuns: 0, receivedRuns: 1, successfulRuns: 1, onTimeRuns: 1 }))).toBe(100)
  })

  it("is clamped to 0..100, rounded to one decimal, and ignores nonsense counts", () => {
    expect(healthScore(input({ openIncidents: { HIGH: 6, MEDIUM: 2, LOW: 2 } }))).toBe(0)
    // 100 × (0.4 × 2/3 + 0.3 + 0.15 + 0.15) = 86.666… → 86.7
    expect(healthScore(input({ expectedRuns: 3, receivedRuns: 3, successfulRuns: 2, onTimeRuns: 3 }))).toBe(86.7)
    expect(healthScore(input({ expectedRuns: -4, receivedRuns: Number.NaN, successfulRuns: 5 }))).toBe(100)
  })

  it("is deterministic and monotonic in each good count", () => {
    const base = { expectedRuns: 100, receivedRuns: 90, successfulRuns: 80, onTimeRuns: 85, slaEvaluatedRuns: 80, slaMetRuns: 70 }
    const score = healthScore(input(base))
    expect(healthScore(input(base))).toBe(score)
    expect(healthScore(input({ ...base, successfulRuns: 81 }))).toBeGreaterThan(score)
    expect(healthScore(input({ ...base, onTimeRuns: 86 }))).toBeGreaterThan(score)
    expect(healthScore(input({ ...base, slaMetRuns: 71 }))).toBeGreaterThan(score)
    expect(healthScore(input({ ...base, openIncidents: { HIGH: 0, MEDIUM: 0, LOW: 1 } }))).toBeLessThan(score)
  })
})

describe("Health: expectedRunCount", () => {
  it("counts cron occurrences in (from, to]", () => {
    const daily = cron("0 2 * * *")
    expect(expectedRunCount(daily, at("2026-03-01T00:00:00Z"), at("2026-03-31T00:00:00Z"))).toBe(30)
    // from is excluded, to is included
    expect(expectedRunCount(daily, at("2026-03-01T02:00:00Z"), at("2026-03-03T02:00:00Z"))).toBe(2)
    expect(expectedRunCount(daily, at("2026-03-03T02:00:00Z"), at("2026-03-03T02:00:00Z"))).toBe(0)
    expect(expectedRunCount(daily, at("2026-03-05T00:00:00Z"), at("2026-03-01T00:00:00Z"))).toBe(0)
  })

  it("follows DST: one run a day across New York's spring change, 23 hourly runs on that day", () => {
    expect(expectedRunCount(cron("30 2 * * *", "America/New_York"), at("2026-03-01T00:00:00Z"), at("2026-03-31T00:00:00Z"))).toBe(30)
    // local 8 March 2026: 00:00 EST (05:00Z) to 24:00 EDT (04:00Z on the 9th)
    expect(expectedRunCount(cron("0 * * * *", "America/New_York"), at("2026-03-08T05:00:00Z") - 1, at("2026-03-09T04:00:00Z") - 1)).toBe(23)
  })

  it("extrapolates beyond 2,000 occurrences (every minute for 30 days: 43,200)", () => {
    const from = at("2026-03-01T00:00:00Z")
    expect(expectedRunCount(cron("* * * * *"), from, from + 30 * DAY)).toBe(43_200)
    expect(expectedRunCount(cron("*/5 * * * *"), from, from + 30 * DAY)).toBe(8_640)
  })

  it("divides the window by the interval", () => {
    const from = at("2026-03-01T00:00:00Z")
    expect(expectedRunCount(every("1h"), from, from + 30 * DAY)).toBe(720)
    expect(expectedRunCount(every("7m"), from, from + 60 * MINUTE)).toBe(8)
  })
})
