import { HttpApiSchema } from "@effect/platform"
import { describe, expect, it } from "@effect/vitest"
import { Schema } from "effect"
import {
  BadGateway,
  Conflict,
  ERROR_STATUS,
  errorReply,
  Forbidden,
  MethodNotAllowed,
  NotFound,
  PayloadTooLarge,
  RateLimited,
  ServiceUnavailable,
  Unauthorized,
  UnsupportedMediaType,
  ValidationError
} from "../../src/Domain/Errors.js"

/**
 * One source for every error answer (src/Domain/Errors.ts): what HttpApi answers for an error an
 * endpoint declares, and what the routes outside HttpApi answer with errorReply, are the same status
 * and the same body.
 */
describe("error answers", () => {
  const message = "what was wrong, and how to fix it"
  const cases = [
    [new ValidationError({ message, path: "schedule.timezone" }), errorReply("ValidationError", message, { path: "schedule.timezone" })],
    [new Unauthorized({ message }), errorReply("Unauthorized", message)],
    [new Forbidden({ message }), errorReply("Forbidden", message)],
    [new NotFound({ message }), errorReply("NotFound", message)],
    [new MethodNotAllowed({ message }), errorReply("MethodNotAllowed", message)],
    [new Conflict({ message }), errorReply("Conflict", message)],
    [new PayloadTooLarge({ message }), errorReply("PayloadTooLarge", message)],
    [new UnsupportedMediaType({ message }), errorReply("UnsupportedMediaType", message)],
    [new RateLimited({ message, retryAfterSeconds: 3 }), errorReply("RateLimited", message, { retryAfterSeconds: 3 })],
    [new BadGateway({ message }), errorReply("BadGateway", message)],
    [new ServiceUnavailable({ message }), errorReply("ServiceUnavailable", message)]
  ] as const

  it.each(cases.map(([error, reply]) => [error._tag, error, reply] as const))("%s: the declared class and errorReply agree", (_tag, error, reply) => {
    const schema = error.constructor as unknown as Schema.Schema<typeof error, unknown>
    expect(HttpApiSchema.getStatusError(schema)).toBe(reply.status)
    expect(Schema.encodeSync(schema)(error)).toEqual(reply.body)
  })

  it("every 503 is ServiceUnavailable, and each status comes from one table", () => {
    expect(ERROR_STATUS.ServiceUnavailable).toBe(503)
    expect(errorReply("ServiceUnavailable", message)).toEqual({ status: 503, body: { _tag: "ServiceUnavailable", message } })
    expect(errorReply("UriTooLong", message).status).toBe(414)
    expect(errorReply("InternalError", message).status).toBe(500)
  })
})
