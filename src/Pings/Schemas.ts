import { Schema } from "effect"

/** Ping bodies (interface spec "Ping bodies"; docs/decisions.md#pings). Unknown fields are ignored. */

export const DurationMs = Schema.Int.pipe(Schema.between(0, Number.MAX_SAFE_INTEGER)).annotations({
  description: "job duration in milliseconds (a whole number, 0 or more)"
})
export const ExitCode = Schema.Int.pipe(Schema.between(-2147483648, 2147483647)).annotations({
  description: "process exit code"
})
export const RunIdField = Schema.String.annotations({
  description: "the runId a start ping returned, to close that run when several overlap"
})

export const SuccessPingBody = Schema.Struct({
  durationMs: Schema.optional(DurationMs),
  output: Schema.optional(Schema.String.annotations({ description: "job output; kept when the monitor captures output" })),
  exitCode: Schema.optional(ExitCode),
  runId: Schema.optional(RunIdField)
})

export const FailPingBody = Schema.Struct({
  exitCode: Schema.optional(ExitCode),
  durationMs: Schema.optional(DurationMs),
  output: Schema.optional(Schema.String.annotations({ description: "error output" })),
  runId: Schema.optional(RunIdField)
})

export const StartPingBody = Schema.Struct({
  runId: Schema.optional(RunIdField.annotations({ description: "optional: choose the run's id (a UUID) yourself" }))
})

/** Query-string forms, for shell clients: `?exitCode=1&durationMs=1200&runId=…`. */
export const PingQuery = Schema.Struct({
  exitCode: Schema.optional(Schema.NumberFromString.pipe(Schema.compose(ExitCode))),
  durationMs: Schema.optional(Schema.NumberFromString.pipe(Schema.compose(DurationMs))),
  runId: Schema.optional(RunIdField)
})

export const PingResponse = Schema.Struct({
  received: Schema.Boolean,
  runId: Schema.String
})

export type PingBody = {
  readonly durationMs?: number | undefined
  readonly output?: string | undefined
  readonly exitCode?: number | undefined
  readonly runId?: string | undefined
}

const INT32_MIN = -2147483648
const INT32_MAX = 2147483647

/**
 * The common case of the body schemas, checked by hand (a Schema decode allocated more than the
 * rest of the ping): every field absent or of the right type. Anything else, including every
 * invalid body, goes through the Schema, which stays the single source of accepted shapes and
 * of error messages (test/Pings/Schemas.test.ts checks that both agree).
 */
export const quickBody = (kind: "start" | "success" | "fail", json: Record<string, unknown>): PingBody | undefined => {
  const runId = json.runId
  if (runId !== undefined && typeof runId !== "string") return undefined
  if (kind === "start") return { runId }
  const durationMs = json.durationMs
  if (durationMs !== undefined && !(Number.isSafeInteger(durationMs) && (durationMs as number) >= 0)) return undefined
  const exitCode = json.exitCode
  if (exitCode !== undefined && !(Number.isSafeInteger(exitCode) && (exitCode as number) >= INT32_MIN && (exitCode as number) <= INT32_MAX)) {
    return undefined
  }
  const output = json.output
  if (output !== undefined && typeof output !== "string") return undefined
  return { durationMs: durationMs as number | undefined, exitCode: exitCode as number | undefined, runId, output }
}
