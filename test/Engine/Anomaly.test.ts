import { describe, expect, it } from "@effect/vitest"
import { FastCheck } from "effect"
import {
  checkSla,
  checkSlaOfHistory,
  judgeDuration,
  learnDurations,
  learnHistory,
  LOG_SPREAD_FLOOR,
  median,
  percentile,
  percentileOfSorted,
  zScore
} from "../../src/Engine/Anomaly.js"
import { DurationHistory } from "../../src/Engine/DurationHistory.js"
import { DURATION_MEMORY, MIN_RUNS_FOR_LEARNING } from "../../src/Engine/Model.js"

/** mulberry32: a small seeded PRNG, so the measurements below are reproducible. */
const prng = (seed: number) => {
  let a = seed >>> 0
  return () => {
    a = (a + 0x6d2b79f5) >>> 0
    let t = a
    t = Math.imul(t ^ (t >>> 15), t | 1)
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
}
/** Standard normal deviates (Box–Muller). */
const normal = (random: () => number) => () => {
  const u = 1 - random()
  const v = random()
  return Math.sqrt(-2 * Math.log(u)) * Math.cos(2 * Math.PI * v)
}

/**
 * A stable job: `runs` successful runs with lognormal durations (median `medianMs`, σ of
 * ln(duration) `sigma`), each judged against the DURATION_MEMORY runs before it, exactly as the
 * rules do (every run is learned, flagged or not). Returns the share of judged runs flagged.
 */
const falsePositiveRate = (sigma: number, runs: number, seed: number, medianMs = 60_000) => {
  const z = normal(prng(seed))
  const history: Array<number> = []
  let judged = 0
  let low = 0
  let medium = 0
  for (let i = 0; i < runs; i++) {
    const d = Math.round(medianMs * Math.exp(sigma * z()))
    const model = learnDurations(history)
    if (model !== null) {
      judged++
      const verdict = judgeDuration(model, d)
      if (verdict._tag === "Anomalous") {
        if (verdict.severity === "MEDIUM") medium++
        else low++
      }
    }
    history.push(d)
    if (history.length > DURATION_MEMORY) history.shift()
  }
  return { judged, low, medium, rate: (low + medium) / judged }
}

describe("Anomaly: percentiles", () => {
  it("interpolates between closest ranks like percentile_cont", () => {
    const oneToHundred = Array.from({ length: 100 }, (_, i) => i + 1)
    expect(percentile(oneToHundred, 0.5)).toBe(50.5)
    expect(percentile(oneToHundred, 0.95)).toBeCloseTo(95.05, 10)
    expect(percentile(oneToHundred, 0.99)).toBeCloseTo(99.01, 10)
    expect(percentile([5, 1, 3], 0.5)).toBe(3)
    expect(percentile([7], 0.99)).toBe(7)
    expect(percentile([], 0.5)).toBeNull()
    expect(median([4_000, 1_000, 3_000, 2_000])).toBe(2_500)
    expect(percentileOfSorted(Float64Array.from([10, 20]), 1)).toBe(20)
  })
})

describe("Anomaly: the duration rule", () => {
  it("learns nothing before 20 durations", () => {
    expect(MIN_RUNS_FOR_LEARNING).toBe(20)
    expect(learnDurations(Array.from({ length: 19 }, () => 1_000))).toBeNull()
    expect(learnDurations(Array.from({ length: 20 }, () => 1_000))).toEqual({
      sampleSize: 20,
      medianLog: Math.log(1_000),
      spread: LOG_SPREAD_FLOOR,
      medianMs: 1_000
    })
  })

  it("uses the scaled MAD of the log durations when it is above the floor", () => {
    // ln durations: 10 at ln 10⁶ − 1, 10 at ln 10⁶ + 1 → median ln 10⁶, MAD 1
    const m = 1_000_000
    const durations = [...Array.from({ length: 10 }, () => m / Math.E), ...Array.from({ length: 10 }, () => m * Math.E)]
    const model = learnDurations(durations)!
    expect(model.medianLog).toBeCloseTo(Math.log(m), 10)
    expect(model.spread).toBeCloseTo(1.4826, 10)
    // z = ln(d / 10⁶) / 1.4826
    expect(zScore(model, m * Math.exp(1.4826 * 4.5))).toBeCloseTo(4.5, 10)
    expect(judgeDuration(model, m * Math.exp(1.4826 * 4.5))).toMatchObject({ _tag: "Anomalous", direction: "slow", severity: "LOW" })
    expect(judgeDuration(model, m * Math.exp(1.4826 * 3.9))._tag).toBe("Normal")
    expect(judgeDuration(model, m * Math.exp(-1.4826 * 4.1))).toMatchObject({ _tag: "Anomalous", direction: "fast", severity: "LOW" })
    expect(judgeDuration(model, m * Math.exp(-1.4826 * 8.5))).toMatchObject({ _tag: "Anomalous", direction: "fast", severity: "MEDIUM" })
  })

  it("is robust: a few earlier outliers do not move the centre or widen the spread", () => {
    const durations = [...Array.from({ length: 27 }, () => 60_000), 1, 5, 3_600_000]
    const model = learnDurations(durations)!
    expect(model.medianMs).toBe(60_000)
    expect(model.spread).toBe(LOG_SPREAD_FLOOR)
    expect(judgeDuration(model, 200_000)._tag).toBe("Anomalous")
  })

  it("treats durations below 1 ms as 1 ms, and needs 100 ms of absolute deviation", () => {
    const zeros = learnDurations(Array.from({ length: 20 }, () => 0))!
    expect(zeros.medianLog).toBe(0)
    expect(judgeDuration(zeros, 0)).toEqual({ _tag: "Normal", z: 0 })
    expect(judgeDuration(zeros, 99)._tag).toBe("Normal")
    expect(judgeDuration(zeros, 101)).toMatchObject({ _tag: "Anomalous", direction: "slow", severity: "MEDIUM" })
  })
})

describe("Anomaly: the SLA rule", () => {
  const sla = { durationTarget: "p95", maxDurationMs: 1_000 } as const
  it("is judged from 20 durations, on the target percentile", () => {
    expect(checkSla(Array.from({ length: 19 }, () => 5_000), sla)).toEqual({ _tag: "NotJudged" })
    expect(checkSla(Array.from({ length: 20 }, () => 5_000), null)).toEqual({ _tag: "NotJudged" })
    // 1..20 × 100 ms: p95 = 1900 + 0.05 × 100 = 1905; p99 = 1981
    const ramp = Array.from({ length: 20 }, (_, i) => (i + 1) * 100)
    expect(checkSla(ramp, sla)).toEqual({ _tag: "Breached", observedMs: 1_905, severity: "MEDIUM" })
    expect(checkSla(ramp, { durationTarget: "p99", maxDurationMs: 1_500 })).toEqual({ _tag: "Breached", observedMs: 1_981, severity: "LOW" })
    expect(checkSla(ramp, { durationTarget: "p95", maxDurationMs: 1_905 })).toEqual({ _tag: "Met", observedMs: 1_905 })
  })
})

describe("Anomaly: false-positive rate on a stable job (100,000 runs each, seeded)", () => {
  // Measured values are in docs/incident-rules.md; the bound is the requirement (< 0.1 %).
  it.each([
    [0.1, 1],
    [0.3, 2],
    [1.0, 3]
  ])("lognormal σ = %d: well under 0.1 % of runs flagged", (sigma, seed) => {
    const result = falsePositiveRate(sigma, 100_000, seed)
    console.info(
      `σ=${sigma}: ${result.low + result.medium} of ${result.judged} runs flagged ` +
        `(${(100 * result.rate).toFixed(4)} %; MEDIUM ${result.medium})`
    )
    expect(result.judged).toBe(100_000 - MIN_RUNS_FOR_LEARNING)
    expect(result.rate).toBeLessThan(0.001)
    expect(result.medium).toBe(0)
  })

  it("while catching what matters: a run 4× (or a quarter of) the median of a σ = 0.3 job", () => {
    const z = normal(prng(7))
    let slow = 0
    let fast = 0
    const trials = 2_000
    for (let t = 0; t < trials; t++) {
      const history = Array.from({ length: DURATION_MEMORY }, () => Math.round(60_000 * Math.exp(0.3 * z())))
      const model = learnDurations(history)!
      if (judgeDuration(model, 240_000)._tag === "Anomalous") slow++
      if (judgeDuration(model, 15_000)._tag === "Anomalous") fast++
    }
    console.info(`σ=0.3: 4× median flagged in ${slow}/${trials}, ¼ median in ${fast}/${trials}`)
    expect(slow / trials).toBeGreaterThan(0.9)
    expect(fast / trials).toBeGreaterThan(0.9)
  })
})

/** The model as the rule defines it, computed the plain way: sort ln(d), its median, sort |ln(d) − median|, its median. */
const referenceModel = (durations: ReadonlyArray<number>) => {
  const logs = durations.map((d) => Math.log(Math.max(1, d))).sort((a, b) => a - b)
  const medianLog = percentileOfSorted(logs, 0.5)!
  const deviations = logs.map((l) => Math.abs(l - medianLog)).sort((a, b) => a - b)
  return {
    sampleSize: durations.length,
    medianLog,
    spread: Math.max(1.4826 * percentileOfSorted(deviations, 0.5)!, LOG_SPREAD_FLOOR),
    medianMs: percentileOfSorted([...durations].sort((a, b) => a - b), 0.5)!
  }
}

const durationsArb = FastCheck.array(
  FastCheck.oneof(
    FastCheck.integer({ min: 0, max: 5 }),
    FastCheck.integer({ min: 0, max: 10_000_000 }),
    FastCheck.constantFrom(1000, 1000, 60_000)
  ),
  { minLength: MIN_RUNS_FOR_LEARNING, maxLength: 400 }
)

describe("Anomaly: the model learned run by run equals the model learned from scratch", () => {
  it.prop("learnDurations equals the plain sort-based definition (same numbers, bit for bit)", [durationsArb], ([durations]) => {
    expect(learnDurations(durations)).toEqual(referenceModel(durations))
  })

  it.prop(
    "a history grown run by run (oldest dropped past the memory) gives the same durations, sorted copy, model and SLA verdict",
    [durationsArb, FastCheck.integer({ min: MIN_RUNS_FOR_LEARNING, max: DURATION_MEMORY })],
    ([durations, memory]) => {
      let history = DurationHistory.empty(memory)
      const versions: Array<{ history: DurationHistory; values: Array<number> }> = []
      for (const d of durations) {
        const before = history.toArray()
        versions.push({ history, values: before })
        history = history.append(d)
      }
      const expected = durations.slice(-memory)
      expect(history.toArray()).toEqual(expected)
      expect([...history.sorted()]).toEqual([...expected].sort((a, b) => a - b))
      expect(learnHistory(history)).toEqual(referenceModel(expected))
      const sla = { durationTarget: "p95" as const, maxDurationMs: 5000 }
      expect(checkSlaOfHistory(history, sla)).toEqual(checkSla(expected, sla))
      expect(history.percentile(0.99)).toBe(percentile(expected, 0.99))
      // every older version still answers with the durations it had (the engine never reads one)
      for (const { history: old, values } of versions.slice(-5).concat(versions.slice(0, 2))) {
        expect(old.toArray()).toEqual(values)
        expect([...old.sorted()]).toEqual([...values].sort((a, b) => a - b))
        expect(old.percentile(0.5)).toBe(percentile(values, 0.5))
      }
    }
  )

  it.prop(
    "appending to an older version branches: the newer line keeps its durations",
    [durationsArb, FastCheck.integer({ min: 1, max: 400 }), FastCheck.integer({ min: 0, max: 100_000 })],
    ([durations, cut, extra]) => {
      const memory = DURATION_MEMORY
      let history = DurationHistory.empty(memory)
      const versions: Array<DurationHistory> = [history]
      for (const d of durations) {
        history = history.append(d)
        versions.push(history)
      }
      const at = Math.min(cut, durations.length)
      const branch = versions[at]!.append(extra)
      expect(branch.toArray()).toEqual([...durations.slice(0, at), extra].slice(-memory))
      expect([...branch.sorted()]).toEqual([...durations.slice(0, at), extra].slice(-memory).sort((a, b) => a - b))
      // the branch's buffers were rebuilt from its successor: its model is still the definition's
      const branched = [...durations.slice(0, at), extra].slice(-memory)
      if (branched.length >= MIN_RUNS_FOR_LEARNING) expect(learnHistory(branch)).toEqual(referenceModel(branched))
      expect(history.toArray()).toEqual(durations.slice(-memory))
      expect([...history.sorted()]).toEqual(durations.slice(-memory).sort((a, b) => a - b))
    }
  )
})
