import { HttpApiEndpoint, HttpApiGroup, OpenApi } from "@effect/platform"
import { Schema } from "effect"
import { Authentication } from "../Auth/Api.js"
import { ServiceUnavailable, ValidationError } from "../Domain/Errors.js"
import { IntFromQuery, IsoTimestamp, PageLimitParam } from "../Domain/Schemas.js"
import { EventTypes } from "./Events.js"

export const EventTypeSchema = Schema.Literal(...EventTypes)

/** The webhook envelope `{event, id, createdAt, data}` plus its position `seq`. */
export const EventResource = Schema.Struct({
  seq: Schema.Int.annotations({ description: "position in the organization's event stream; increases in commit order" }),
  event: Schema.String,
  id: Schema.String,
  createdAt: IsoTimestamp,
  data: Schema.Record({ key: Schema.String, value: Schema.Unknown })
})

const Seq = IntFromQuery.pipe(Schema.greaterThanOrEqualTo(0))

export const ListEventsParams = Schema.Struct({
  after: Schema.optional(Seq).annotations({ description: "only events with seq > after, oldest first (follow mode)" }),
  before: Schema.optional(Seq).annotations({ description: "only events with seq < before" }),
  limit: PageLimitParam,
  type: Schema.optional(EventTypeSchema),
  monitorId: Schema.optional(Schema.String.annotations({ description: "only events about this monitor" }))
})

export class EventsApi extends HttpApiGroup.make("events")
  .add(
    HttpApiEndpoint.get("list", "/api/events")
      .setUrlParams(ListEventsParams)
      .addSuccess(Schema.Struct({ events: Schema.Array(EventResource) }))
      .addError(ValidationError)
      .annotate(
        OpenApi.Description,
        "Without `after`: the newest events first (page back with `before`). With `after`: the events after that " +
          "seq, oldest first — poll with the last seq seen to follow the stream without missing any."
      )
      .annotate(OpenApi.Summary, "The organization's recent domain events (what outbound webhooks deliver)")
  )
  .addError(ServiceUnavailable)
  .middleware(Authentication)
  .annotate(OpenApi.Title, "Events")
{}
