import { describe, expect, it } from "@effect/vitest"
import { Either, FastCheck } from "effect"
import { cursorParam, decodeCursor, encodeCursor, pageOf } from "../../src/Domain/Cursor.js"

const ID = "5e0d2a8c-9d3c-4a7b-9c43-1f6f5b7a8e11"
const forged = (text: string) => Buffer.from(text, "utf8").toString("base64url")

/** The page cursor of runs and incidents (src/Domain/Cursor.ts): one codec, strict on the way in. */
describe("page cursors", () => {
  it.prop("name back the (instant, id) they were made from", [FastCheck.date({ min: new Date("0001-01-01T00:00:00Z"), max: new Date("9999-12-31T23:59:59.999Z") })], ([at]) => {
    expect(decodeCursor(encodeCursor(at, ID))).toEqual({ at, id: ID })
  })

  it("anything the API did not return names nothing", () => {
    for (
      const cursor of [
        "garbage",
        "",
        forged(`2026-01-01T00:00:00.000Z|${ID}|more`),
        forged("2026-01-01T00:00:00.000Z|not-a-uuid"),
        forged(`not a date|${ID}`),
        forged(`+275760-09-13T00:00:00.000Z|${ID}`),
        forged(`2026-01-01T00:00:00.000Z`)
      ]
    ) expect(decodeCursor(cursor), cursor).toBeUndefined()
  })

  it("as a query parameter: absent is no boundary, a foreign one is a 400 naming cursor", () => {
    expect(cursorParam(undefined)).toEqual(Either.right(undefined))
    const at = new Date("2026-01-31T12:00:00.000Z")
    expect(cursorParam(encodeCursor(at, ID))).toEqual(Either.right({ at, id: ID }))
    const refused = cursorParam("garbage")
    expect(Either.isLeft(refused) && refused.left.path).toBe("cursor")
  })

  it("a page of limit + 1 rows fetched keeps limit of them and names the last one's boundary", () => {
    const rows = [1, 2, 3].map((n) => ({ at: new Date(n * 1000), id: ID }))
    const full = pageOf(rows, 2, (row) => row)
    expect(full.page).toEqual(rows.slice(0, 2))
    expect(full.nextCursor === null ? undefined : decodeCursor(full.nextCursor)).toEqual(rows[1])
    expect(pageOf(rows.slice(0, 2), 2, (row) => row)).toEqual({ page: rows.slice(0, 2), nextCursor: null })
    expect(pageOf([], 2, (row: { at: Date; id: string }) => row)).toEqual({ page: [], nextCursor: null })
  })
})
