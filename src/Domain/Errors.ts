import { HttpApiSchema } from "@effect/platform"
import { Schema } from "effect"
import { excerpt } from "./Text.js"

/**
 * Every error the service answers with, in one place (docs/decisions.md#errors): its `_tag` (a
 * stable machine name), its HTTP status, and its body: `{_tag, message}` (one sentence saying what
 * was wrong and how to fix it), plus `path` on a ValidationError and `retryAfterSeconds` on a
 * RateLimited. Endpoints declare the classes below and HttpApi encodes them; the answers given
 * outside HttpApi (src/Http/Server.ts before the router, the ping intake) build the same body with
 * `errorReply`. test/Domain/Errors.test.ts checks that both give one body for every class.
 */
export const ERROR_STATUS = {
  /** A request Node could not parse as HTTP/1.1 (answered on the socket). */
  BadRequest: 400,
  ValidationError: 400,
  Unauthorized: 401,
  Forbidden: 403,
  NotFound: 404,
  MethodNotAllowed: 405,
  RequestTimeout: 408,
  Conflict: 409,
  PayloadTooLarge: 413,
  UriTooLong: 414,
  UnsupportedMediaType: 415,
  RateLimited: 429,
  HeadersTooLarge: 431,
  /** A bug: logged with its cause, answered without it. */
  InternalError: 500,
  /** A service the request relayed to (a chat webhook) answered with an error. */
  BadGateway: 502,
  /** The database (or something it waits for) does not answer now; retry. */
  ServiceUnavailable: 503
} as const

export type ErrorTag = keyof typeof ERROR_STATUS

/** The fields some errors carry beside `_tag` and `message`. */
interface ExtraFields {
  readonly ValidationError: {
    /** The offending field, as a dotted path (`schedule.timezone`), or "" for the whole body. */
    readonly path: string
  }
  readonly RateLimited: { readonly retryAfterSeconds: number }
}

type ExtraOf<Tag extends ErrorTag> = Tag extends keyof ExtraFields ? [extra: ExtraFields[Tag]] : []

/** The JSON body of an error answer. */
export type ErrorBody<Tag extends ErrorTag = ErrorTag> =
  & { readonly _tag: Tag; readonly message: string }
  & (Tag extends keyof ExtraFields ? ExtraFields[Tag] : unknown)

/** An error answer given outside HttpApi: its status and body. */
export type ErrorReply<Tag extends ErrorTag = ErrorTag> = { readonly status: number; readonly body: ErrorBody<Tag> }

export const errorBody = <Tag extends ErrorTag>(tag: Tag, message: string, ...extra: ExtraOf<Tag>): ErrorBody<Tag> =>
  (extra.length === 0 ? { _tag: tag, message } : { _tag: tag, message, ...extra[0] }) as ErrorBody<Tag>

export const errorReply = <Tag extends ErrorTag>(tag: Tag, message: string, ...extra: ExtraOf<Tag>): ErrorReply<Tag> => ({
  status: ERROR_STATUS[tag],
  body: errorBody(tag, message, ...extra)
})

// ---- the errors endpoints declare (HttpApi encodes them as `errorBody` does)

const Message = { message: Schema.String }
/** The class's status, from ERROR_STATUS. */
const status = (tag: ErrorTag): Schema.Annotations.Schema<any> => HttpApiSchema.annotations({ status: ERROR_STATUS[tag] })

export class ValidationError extends Schema.TaggedError<ValidationError>()(
  "ValidationError",
  {
    message: Schema.String,
    /** The offending field, as a dotted path (`schedule.timezone`), or "" for the whole body. */
    path: Schema.String
  },
  status("ValidationError")
) {}

export class Unauthorized extends Schema.TaggedError<Unauthorized>()("Unauthorized", Message, status("Unauthorized")) {}

export class Forbidden extends Schema.TaggedError<Forbidden>()("Forbidden", Message, status("Forbidden")) {}

export class NotFound extends Schema.TaggedError<NotFound>()("NotFound", Message, status("NotFound")) {}

export class MethodNotAllowed extends Schema.TaggedError<MethodNotAllowed>()("MethodNotAllowed", Message, status("MethodNotAllowed")) {}

export class Conflict extends Schema.TaggedError<Conflict>()("Conflict", Message, status("Conflict")) {}

export class PayloadTooLarge extends Schema.TaggedError<PayloadTooLarge>()("PayloadTooLarge", Message, status("PayloadTooLarge")) {}

export class UnsupportedMediaType
  extends Schema.TaggedError<UnsupportedMediaType>()("UnsupportedMediaType", Message, status("UnsupportedMediaType"))
{}

export class RateLimited extends Schema.TaggedError<RateLimited>()(
  "RateLimited",
  { ...Message, retryAfterSeconds: Schema.Number },
  status("RateLimited")
) {}

export class BadGateway extends Schema.TaggedError<BadGateway>()("BadGateway", Message, status("BadGateway")) {}

/**
 * 503, retry later: the database did not answer in time (a statement ran past `statement_timeout`,
 * src/Db/StatementTimeout.ts), or the health check could not reach it. The ping intake answers the
 * same body when a ping could not be stored.
 */
export class ServiceUnavailable
  extends Schema.TaggedError<ServiceUnavailable>()("ServiceUnavailable", Message, status("ServiceUnavailable"))
{}

export const notFound = (what: string, id: string) => new NotFound({ message: `${what} ${excerpt(id)} does not exist` })

// ---- request bodies

/** The largest request body the service reads (docs/decisions.md#pings, #details-clients-depend-on). */
export const MAX_BODY_BYTES = 2 * 1024 * 1024

/** The one 413 message, wherever the body is refused (its Content-Length, or counted as it arrives). */
const PAYLOAD_TOO_LARGE_MESSAGE =
  `The request body is over ${MAX_BODY_BYTES} bytes (2 MiB): send less (a ping's output is truncated to the monitor's maxOutputSizeKb anyway).`

export const payloadTooLarge = () => new PayloadTooLarge({ message: PAYLOAD_TOO_LARGE_MESSAGE })

/** The 413 answered outside HttpApi: one object, made once. */
export const PAYLOAD_TOO_LARGE_REPLY = errorReply("PayloadTooLarge", PAYLOAD_TOO_LARGE_MESSAGE)
