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

// ---- lists sorted by a key the client chooses (GET /api/monitors?sort=…)

/** A sort key as a cursor carries it: text (names, instants as text), a number, or null (no value). */
export type SortKey = string | number | null

/**
 * The page cursor of a list the client sorts: the sort it was made for (`-name`), and the sort key
 * and id of the last row of the page. Paging continues after (key, id) in that order, so a row that
 * changes while a client pages is never shown twice in one walk nor skips the rows after it.
 */
export interface SortedBoundary {
  readonly sort: string
  readonly key: SortKey
  readonly id: string
}

export const encodeSortedCursor = (boundary: SortedBoundary): string =>
  Buffer.from(JSON.stringify([boundary.sort, boundary.key, boundary.id]), "utf8").toString("base64url")

/**
 * The boundary a sorted cursor names; undefined for anything this API did not return. The caller
 * still checks that the key has the type its sort has (src/Monitors/Listing.ts).
 */
export const decodeSortedCursor = (cursor: string): SortedBoundary | undefined => {
  let parsed: unknown
  try {
    parsed = JSON.parse(Buffer.from(cursor, "base64url").toString("utf8"))
  } catch {
    return undefined
  }
  if (!Array.isArray(parsed) || parsed.length !== 3) return undefined
  const [sort, key, id] = parsed as Array<unknown>
  if (typeof sort !== "string" || typeof id !== "string" || !isUuid(id)) return undefined
  if (key !== null && typeof key !== "string" && !(typeof key === "number" && Number.isFinite(key))) return undefined
  return { sort, key, id }
}
