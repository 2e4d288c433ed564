import { HttpApiSchema } from "@effect/platform"
import { Schema } from "effect"
import { excerpt } from "./Text.js"

/**
 * The service's API errors (decisions §1). Every error body has `_tag` (a stable machine name)
 * and `message` (one sentence saying what was wrong and how to fix it).
 */
export class ValidationError extends Schema.TaggedError<ValidationError>()(
  "ValidationError",
  {
    message: Schema.String,
    /** The offending field, as a dotted path (`schedule.timezone`), or "" for the whole body. */
    path: Schema.String
  },
  HttpApiSchema.annotations({ status: 400 })
) {}

export class Unauthorized extends Schema.TaggedError<Unauthorized>()(
  "Unauthorized",
  { message: Schema.String },
  HttpApiSchema.annotations({ status: 401 })
) {}

export class Forbidden extends Schema.TaggedError<Forbidden>()(
  "Forbidden",
  { message: Schema.String },
  HttpApiSchema.annotations({ status: 403 })
) {}

export class NotFound extends Schema.TaggedError<NotFound>()(
  "NotFound",
  { message: Schema.String },
  HttpApiSchema.annotations({ status: 404 })
) {}

export class MethodNotAllowed extends Schema.TaggedError<MethodNotAllowed>()(
  "MethodNotAllowed",
  { message: Schema.String },
  HttpApiSchema.annotations({ status: 405 })
) {}

export class Conflict extends Schema.TaggedError<Conflict>()(
  "Conflict",
  { message: Schema.String },
  HttpApiSchema.annotations({ status: 409 })
) {}

export class PayloadTooLarge extends Schema.TaggedError<PayloadTooLarge>()(
  "PayloadTooLarge",
  { message: Schema.String },
  HttpApiSchema.annotations({ status: 413 })
) {}

export class RateLimited extends Schema.TaggedError<RateLimited>()(
  "RateLimited",
  { message: Schema.String, retryAfterSeconds: Schema.Number },
  HttpApiSchema.annotations({ status: 429 })
) {}

/**
 * The database did not answer in time (a statement ran past `statement_timeout`): 503, with the
 * same `_tag` as the service's other 503s. Raised by src/Db/StatementTimeout.ts.
 */
export class DatabaseBusy extends Schema.TaggedError<DatabaseBusy>()(
  "ServiceUnavailable",
  { message: Schema.String },
  HttpApiSchema.annotations({ status: 503 })
) {}

export const notFound = (what: string, id: string) => new NotFound({ message: `${what} ${excerpt(id)} does not exist` })

/** The largest request body the service reads (decisions §4, §15). */
export const MAX_BODY_BYTES = 2 * 1024 * 1024

export class UnsupportedMediaType extends Schema.TaggedError<UnsupportedMediaType>()(
  "UnsupportedMediaType",
  { message: Schema.String },
  HttpApiSchema.annotations({ status: 415 })
) {}
