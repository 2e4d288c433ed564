import { Schema } from "effect"

/**
 * Schemas that several API groups share (every `src/<Domain>/Api.ts` takes them from here): time
 * stamps, numbers in query strings, the monitor id in a path, and the parameters of a paged list.
 */

export const IsoTimestamp = Schema.String.annotations({ description: "ISO 8601 UTC timestamp", examples: ["2026-01-31T12:00:00.000Z"] })

/** Query numbers arrive as strings; anything but a whole number is a 400 naming the parameter. */
export const IntFromQuery = Schema.NumberFromString.pipe(Schema.int())

/** `/api/monitors/:monitorId/…` and `/api/ping/:monitorId/…`. */
export const MonitorIdPath = Schema.Struct({ monitorId: Schema.String })

// ---- paged lists: newest first, `limit` rows a page, `nextCursor` names the next page (src/Domain/Cursor.ts)

/** The rows a page of runs, incidents, events or deliveries holds when `limit` is not given. */
export const DEFAULT_PAGE_LIMIT = 100
/** The most rows such a page holds. */
const MAX_PAGE_LIMIT = 500

/** The `limit` query parameter of those lists: 1 to 500, default 100. */
export const PageLimitParam = Schema.optional(IntFromQuery.pipe(Schema.between(1, MAX_PAGE_LIMIT))).annotations({
  description: `1 to ${MAX_PAGE_LIMIT}, default ${DEFAULT_PAGE_LIMIT}`
})

/** The `cursor` query parameter: the previous page's `nextCursor`, unchanged. */
export const CursorParam = Schema.optional(Schema.String.annotations({ description: "nextCursor of the previous page" }))

/** A page's `nextCursor`: null on the last page. */
export const NextCursor = Schema.NullOr(Schema.String)

// ---- update requests derived from create requests

type AllOptional<Fields extends Schema.Struct.Fields> = {
  readonly [K in keyof Fields]: Fields[K] extends Schema.Schema.All ? Schema.optional<Fields[K]> : Fields[K]
}

/**
 * The fields of a create request, every one optional: what a PATCH takes. Fields that are optional
 * already stay as they are; write any other difference (a field only one of them has, a field an
 * update may set to null) beside the call, where a reader sees it.
 */
export const allOptional = <Fields extends Schema.Struct.Fields>(fields: Fields): AllOptional<Fields> => {
  const out: Record<string, unknown> = {}
  for (const [key, field] of Object.entries(fields)) {
    out[key] = Schema.isSchema(field) ? Schema.optional(field) : field
  }
  return out as AllOptional<Fields>
}
