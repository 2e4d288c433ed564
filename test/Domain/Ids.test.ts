import { describe, expect, it } from "@effect/vitest"
import { FastCheck } from "effect"
import { isUuid, newTimeOrderedId } from "../../src/Domain/Ids.js"

describe("time-ordered ids (UUID version 7)", () => {
  it("are UUIDs of version 7 and variant 10 that carry the millisecond they were made", () => {
    const at = Date.UTC(2026, 10, 25, 23, 15, 0, 123)
    const id = newTimeOrderedId(at)
    expect(isUuid(id)).toBe(true)
    expect(id[14]).toBe("7")
    expect("89ab").toContain(id[19])
    expect(parseInt(id.slice(0, 8) + id.slice(9, 13), 16)).toBe(at)
  })

  it.prop("sort as their instants do, and never repeat", [FastCheck.array(FastCheck.integer({ min: 0, max: 2 ** 47 }), { minLength: 2, maxLength: 50 })], ([instants]) => {
    const ids = instants.map((t) => ({ t, id: newTimeOrderedId(t) }))
    for (const a of ids) {
      for (const b of ids) if (a.t < b.t) expect(a.id < b.id).toBe(true)
    }
    expect(new Set(ids.map((x) => x.id)).size).toBe(ids.length)
  })
})
