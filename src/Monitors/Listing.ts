import { Either } from "effect"
import { decodeSortedCursor, encodeSortedCursor, type SortKey } from "../Domain/Cursor.js"
import { ValidationError } from "../Domain/Errors.js"
import { hasNul } from "../Domain/Text.js"
import { type ListMonitorsParams, MAX_QUERY_LENGTH, type MonitorSort, MonitorStatus, STATUS_ORDER } from "./Api.js"

/**
 * `GET /api/monitors`: its query parameters checked and turned into one query (pure; the SQL is
 * MonitorsRepo.list), and the page's cursor. docs/api.md, "Listing monitors".
 */

type Status = typeof MonitorStatus.Type

export type SortField = "createdAt" | "name" | "status" | "lastPingAt" | "nextExpectedAt" | "healthScore"

/** What the cursor of each sort carries as its key (MonitorsRepo selects it as `sort_key`). */
const KEY_KIND: Record<SortField, "instant" | "optionalInstant" | "text" | "rank" | "number"> = {
  createdAt: "instant",
  name: "text",
  status: "rank",
  lastPingAt: "optionalInstant",
  nextExpectedAt: "optionalInstant",
  healthScore: "number"
}

export const DEFAULT_LIMIT = 50
/** The longest tag a monitor may carry (src/Monitors/Api.ts, CreateMonitorRequest). */
const MAX_TAG_LENGTH = 64
const MAX_TAGS = 50

export interface ListQuery {
  /** The name filter, trimmed; undefined: none. */
  readonly q: string | undefined
  readonly statuses: ReadonlyArray<Status> | undefined
  /** Every one of these tags. */
  readonly tags: ReadonlyArray<string> | undefined
  /** The monitor with this slug (at most one). */
  readonly slug: string | undefined
  readonly sort: MonitorSort
  readonly field: SortField
  readonly descending: boolean
  readonly limit: number
  /** Rows skipped (page mode); 0 after a cursor. */
  readonly offset: number
  /** The page starts after this (key, id) in the order (cursor mode). */
  readonly after: { readonly key: SortKey; readonly id: string } | undefined
}

const invalid = (path: string, message: string) => Either.left(new ValidationError({ path, message: `${path}: ${message}` }))

const valuesOf = (value: string | ReadonlyArray<string> | undefined): ReadonlyArray<string> | undefined =>
  value === undefined ? undefined : typeof value === "string" ? [value] : value

const STATUSES = MonitorStatus.literals as ReadonlyArray<string>
const statusList = `${STATUSES.slice(0, -1).join(", ")} or ${STATUSES[STATUSES.length - 1]}`

const parseStatuses = (raw: ReadonlyArray<string>): Either.Either<ReadonlyArray<Status>, ValidationError> => {
  const out: Array<Status> = []
  for (const part of raw.flatMap((value) => value.split(","))) {
    const status = part.trim()
    if (!STATUSES.includes(status)) {
      return status === ""
        ? invalid("status", `name at least one status (${statusList}), comma separated or the parameter repeated.`)
        : invalid("status", `${JSON.stringify(status.slice(0, 40))} is not a monitor status; use ${statusList}.`)
    }
    if (!out.includes(status as Status)) out.push(status as Status)
  }
  return Either.right(out)
}

const parseTags = (raw: ReadonlyArray<string>): Either.Either<ReadonlyArray<string>, ValidationError> => {
  if (raw.length > MAX_TAGS) return invalid("tag", `at most ${MAX_TAGS} tags (a monitor carries at most ${MAX_TAGS}); ${raw.length} were given.`)
  for (const tag of raw) {
    if (tag.length === 0 || tag.length > MAX_TAG_LENGTH) {
      return invalid("tag", `a tag has 1 to ${MAX_TAG_LENGTH} characters (this one has ${tag.length}).`)
    }
    if (hasNul(tag)) return invalid("tag", "a tag never contains the NUL character (\\u0000).")
  }
  return Either.right([...new Set(raw)])
}

const INSTANT_TEXT = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{6}Z$/

/**
 * An instant as MonitorsRepo writes it into a cursor (microseconds, UTC: PostgreSQL keeps them) that
 * names a real time: `2026-02-30` must never reach a query.
 */
const isInstantText = (text: string): boolean => {
  if (!INSTANT_TEXT.test(text)) return false
  const ms = Date.parse(`${text.slice(0, 23)}Z`)
  return Number.isFinite(ms) && new Date(ms).toISOString().slice(0, 23) === text.slice(0, 23)
}

const keyFits = (field: SortField, key: SortKey): boolean => {
  switch (KEY_KIND[field]) {
    case "instant":
      return typeof key === "string" && isInstantText(key)
    case "optionalInstant":
      return key === null || (typeof key === "string" && isInstantText(key))
    case "text":
      // A lower-cased name (at most 200 characters; lower-casing can lengthen a few).
      return typeof key === "string" && key.length <= 4 * MAX_QUERY_LENGTH && !hasNul(key)
    case "rank":
      return typeof key === "number" && Number.isInteger(key) && key >= 0 && key <= STATUS_ORDER.length
    case "number":
      return typeof key === "number" && Number.isFinite(key)
  }
}

const badCursor = "cursor is not one this API returned; pass nextCursor unchanged, or leave cursor out for the first page."

/** The query the parameters ask for, or a 400 naming the first parameter that is wrong. */
export const listQuery = (params: ListMonitorsParams): Either.Either<ListQuery, ValidationError> =>
  Either.gen(function*() {
    const sort = params.sort ?? "createdAt"
    const descending = sort.startsWith("-")
    const field = (descending ? sort.slice(1) : sort) as SortField
    const limit = params.limit ?? DEFAULT_LIMIT
    const q = params.q?.trim()
    const rawStatuses = valuesOf(params.status)
    const statuses = rawStatuses === undefined ? undefined : yield* parseStatuses(rawStatuses)
    const rawTags = valuesOf(params.tag)
    const tags = rawTags === undefined ? undefined : yield* parseTags(rawTags)
    let after: ListQuery["after"] = undefined
    if (params.cursor !== undefined) {
      if (params.page !== undefined) return yield* invalid("cursor", "pass either page or cursor, not both.")
      const boundary = decodeSortedCursor(params.cursor)
      if (boundary === undefined) return yield* invalid("cursor", badCursor)
      if (boundary.sort !== sort) {
        return yield* invalid(
          "cursor",
          `this cursor continues a list sorted by ${boundary.sort.slice(0, 20)}, not ${sort}; pass the same sort with it, ` +
            "or leave cursor out for the first page."
        )
      }
      if (!keyFits(field, boundary.key)) return yield* invalid("cursor", badCursor)
      after = { key: boundary.key, id: boundary.id }
    }
    return {
      q: q === "" ? undefined : q,
      statuses,
      tags,
      slug: params.slug,
      sort,
      field,
      descending,
      limit,
      offset: after === undefined ? ((params.page ?? 1) - 1) * limit : 0,
      after
    }
  })

/** The page number a page has: given, or counted from the rows up to its cursor. */
export const pageNumber = (query: ListQuery, rowsUpToCursor: number): number =>
  query.after === undefined ? query.offset / query.limit + 1 : Math.floor(rowsUpToCursor / query.limit) + 1

/** The `limit` rows of a page from the `limit + 1` fetched, and the cursor of the next page. */
export const pageOf = <Row extends { readonly id: string; readonly sort_key: SortKey }>(
  query: ListQuery,
  rows: ReadonlyArray<Row>
): { readonly rows: ReadonlyArray<Row>; readonly nextCursor: string | null } => {
  const page = rows.slice(0, query.limit)
  const last = page[page.length - 1]
  return rows.length <= query.limit || last === undefined
    ? { rows: page, nextCursor: null }
    : { rows: page, nextCursor: encodeSortedCursor({ sort: query.sort, key: last.sort_key, id: last.id }) }
}
