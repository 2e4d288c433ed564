import { Either } from "effect"
import { ValidationError } from "./Errors.js"
import { isUuid } from "./Ids.js"
import { inInstantRange } from "./Instant.js"

/**
 * The page cursor of every list ordered newest first by (a time, an id): runs by (startedAt, id),
 * incidents by (createdAt, id). It names the last row of a page and is opaque to clients.
 */
export interface PageBoundary {
  readonly at: Date
  readonly id: string
}

export const encodeCursor = (at: Date, id: string): string => Buffer.from(`${at.toISOString()}|${id}`, "utf8").toString("base64url")

/**
 * The boundary a cursor names; undefined for anything this API did not return (another shape, an id
 * that is not a UUID, an instant outside years 0001–9999): such a value must never reach a query.
 */
export const decodeCursor = (cursor: string): PageBoundary | undefined => {
  const [at, id, extra] = Buffer.from(cursor, "base64url").toString("utf8").split("|")
  if (at === undefined || id === undefined || extra !== undefined || !isUuid(id)) return undefined
  const time = Date.parse(at)
  return inInstantRange(time) ? { at: new Date(time), id } : undefined
}

/** The `cursor` query parameter: none, the boundary it names, or a 400 naming `cursor`. */
export const cursorParam = (cursor: string | undefined): Either.Either<PageBoundary | undefined, ValidationError> => {
  if (cursor === undefined) return Either.right(undefined)
  const boundary = decodeCursor(cursor)
  return boundary === undefined
    ? Either.left(new ValidationError({ path: "cursor", message: "cursor is not one this API returned; pass nextCursor unchanged." }))
    : Either.right(boundary)
}

/**
 * A page from the `limit + 1` rows a query fetched: the first `limit`, and the cursor of the next
 * page when there was one more row (null on the last page).
 */
export const pageOf = <Row>(
  rows: ReadonlyArray<Row>,
  limit: number,
  boundaryOf: (row: Row) => PageBoundary
): { readonly page: ReadonlyArray<Row>; readonly nextCursor: string | null } => {
  const page = rows.slice(0, limit)
  const last = page[page.length - 1]
  if (rows.length <= limit || last === undefined) return { page, nextCursor: null }
  const { at, id } = boundaryOf(last)
  return { page, nextCursor: encodeCursor(at, id) }
}
