import { describe, expect, it } from "@effect/vitest"
import { Either, FastCheck, Schema } from "effect"
import { FailPingBody, quickBody, StartPingBody, SuccessPingBody } from "../../src/Pings/Schemas.js"

/**
 * The intake checks common ping bodies by hand (quickBody) and falls back to the Schema for the
 * rest. Whatever quickBody accepts, the Schema must accept with the same fields; it may decline
 * (the Schema then decides and words the error), but it must never accept what the Schema rejects.
 */
const schemas = { start: StartPingBody, success: SuccessPingBody, fail: FailPingBody } as const
const kinds = ["start", "success", "fail"] as const

const fieldValue = FastCheck.oneof(
  FastCheck.integer(),
  FastCheck.constantFrom(0, -0, -1, 1.5, 2 ** 31, -(2 ** 31), 2 ** 31 - 1, -(2 ** 31) - 1, 2 ** 53, 2 ** 53 - 1, 1e300, -1e-9),
  FastCheck.double(),
  FastCheck.string(),
  FastCheck.constantFrom(null, true, false, "", "12", [], {}, [1], { a: 1 })
)
const body = FastCheck.dictionary(
  FastCheck.constantFrom("durationMs", "exitCode", "output", "runId", "other", "__proto__"),
  fieldValue
)

const viaSchema = (kind: (typeof kinds)[number], json: unknown) => {
  const decoded = Schema.decodeUnknownEither(schemas[kind])(json)
  return Either.isLeft(decoded) ? undefined : (decoded.right as Record<string, unknown>)
}

/** The fields as the intake reads them (absent and undefined alike). */
const fields = (b: Record<string, unknown> | undefined) =>
  b === undefined ? undefined : { durationMs: b.durationMs, exitCode: b.exitCode, output: b.output, runId: b.runId }

describe("quickBody", () => {
  it("accepts only what the body Schema accepts, with the same fields", () => {
    FastCheck.assert(
      FastCheck.property(FastCheck.constantFrom(...kinds), body, (kind, json) => {
        const quick = quickBody(kind, json)
        if (quick === undefined) return
        expect(fields(quick)).toEqual(fields(viaSchema(kind, json)))
      }),
      { numRuns: 5_000 }
    )
  })

  it("takes the bodies real clients send without the Schema", () => {
    expect(quickBody("success", { durationMs: 1200, output: "ok", exitCode: 0 })).toEqual({
      durationMs: 1200,
      exitCode: 0,
      output: "ok",
      runId: undefined
    })
    expect(quickBody("fail", { exitCode: -1, runId: "b3b5ee5e-8d5e-4a4e-9a0e-1f6f3c1d2e4a" })?.exitCode).toBe(-1)
    expect(quickBody("start", { durationMs: 5 })).toEqual({ runId: undefined })
  })

  it("leaves every invalid field to the Schema", () => {
    for (const json of [{ durationMs: -1 }, { durationMs: 1.5 }, { durationMs: "12" }, { exitCode: 2 ** 31 }, { output: 5 }, { runId: 7 }]) {
      expect(quickBody("success", json)).toBeUndefined()
      expect(viaSchema("success", json)).toBeUndefined()
    }
  })
})
