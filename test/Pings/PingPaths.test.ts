import { describe, expect, it } from "@effect/vitest"
import { FastCheck } from "effect"
import { badgeSvg, monitorBadgeState, parseBadgePath, worstState, type BadgeState } from "../../src/Pings/Badges.js"
import { parseGrace, parsePingPath } from "../../src/Pings/PingUrls.js"

/** What a ping URL's path means (src/Pings/PingUrls.ts) and how badges judge (src/Pings/Badges.ts). */

const uuid = FastCheck.uuid()
const slug = FastCheck.stringMatching(/^[a-z0-9][a-z0-9_-]{0,99}$/)
const key = FastCheck.stringMatching(/^[0-9a-f]{32}$/)
const suffix = FastCheck.constantFrom(undefined, "start", "fail", "log", "START", "Fail")
const states = FastCheck.array(FastCheck.constantFrom<BadgeState>("up", "down", "late", "maintenance"), { maxLength: 20 })

describe("ping URL paths", () => {
  it.prop("/ping/<uuid>[/suffix] names that ping id and action, any letter case", [uuid, suffix], ([id, s]) => {
    const target = parsePingPath(`/ping/${id.toUpperCase()}${s === undefined ? "" : `/${s}`}`)
    expect(target).toEqual({ _tag: "ById", pingId: id.toLowerCase(), action: { kind: s === undefined ? "success" : s.toLowerCase() } })
  })

  it.prop("an exit status 0 to 255 is kept; above is 400 invalid url format", [uuid, FastCheck.integer({ min: 0, max: 100_000 })], ([id, n]) => {
    const target = parsePingPath(`/ping/${id}/${n}`)
    if (n <= 255) expect(target).toEqual({ _tag: "ById", pingId: id, action: { kind: "exit", exitCode: n } })
    else expect(target).toEqual({ _tag: "Invalid", message: "invalid url format" })
  })

  it.prop("/ping/<key>/<slug>[/suffix] names the key, the slug and the action", [key, slug, suffix], ([k, sl, s]) => {
    const target = parsePingPath(`/ping/${k}/${sl}${s === undefined ? "" : `/${s}`}`)
    expect(target).toEqual({ _tag: "BySlug", pingKey: k, slug: sl, action: { kind: s === undefined ? "success" : s.toLowerCase() } })
  })

  it("anything else under /ping/ is not found; other paths are not ping paths", () => {
    expect(parsePingPath("/ping/")).toEqual({ _tag: "NotFound" })
    expect(parsePingPath("/ping/abc")).toEqual({ _tag: "NotFound" })
    expect(parsePingPath("/ping/4f2d0a52-4a7e-4b55-9c53-64c6b0b5d1c2/start/extra")).toEqual({ _tag: "NotFound" })
    expect(parsePingPath("/ping/4f2d0a52-4a7e-4b55-9c53-64c6b0b5d1c2/success")).toEqual({ _tag: "NotFound" })
    expect(parsePingPath("/ping/key/slug/what")).toEqual({ _tag: "NotFound" })
    expect(parsePingPath("/api/ping/x/start")).toBeUndefined()
    expect(parsePingPath("/pingx")).toBeUndefined()
  })

  it("grace: seconds or a number with a unit", () => {
    expect(parseGrace("90")).toBe(90)
    expect(parseGrace("15m")).toBe(900)
    expect(parseGrace("2h")).toBe(7200)
    expect(parseGrace("1d")).toBe(86400)
    expect(parseGrace("1w")).toBeUndefined()
    expect(parseGrace("-5")).toBeUndefined()
  })
})

describe("badges", () => {
  it.prop("a group's state is its worst monitor's, whatever their order", [states], ([xs]) => {
    const worst = worstState(xs)
    expect(worstState([...xs].reverse())).toBe(worst)
    const expected = xs.includes("down") ? "down" : xs.includes("late") ? "late" : xs.includes("maintenance") ? "maintenance" : "up"
    expect(worst).toBe(expected)
  })

  it("a monitor's state: maintenance wins, FAILING and MISSED are down, LATE late, the rest up", () => {
    expect(monitorBadgeState("FAILING", false, true)).toBe("maintenance")
    expect(monitorBadgeState("FAILING", false, false)).toBe("down")
    expect(monitorBadgeState("MISSED", false, false)).toBe("down")
    expect(monitorBadgeState("LATE", false, false)).toBe("late")
    for (const s of ["OK", "NEW", "RUNNING"]) expect(monitorBadgeState(s, false, false)).toBe("up")
    expect(monitorBadgeState("FAILING", true, false)).toBe("up")
  })

  it.prop("the SVG holds the name escaped, never raw markup", [FastCheck.string({ maxLength: 60 })], ([name]) => {
    const svg = badgeSvg(name, "up")
    expect(svg.startsWith("<svg ")).toBe(true)
    const inner = svg.slice(svg.indexOf(">") + 1)
    // Only the badge's own elements: every "<" opens one of them.
    for (const tag of inner.match(/<[^/!][^ >]*/g) ?? []) expect(["<title", "<linearGradient", "<stop", "<clipPath", "<rect", "<g", "<text"]).toContain(tag)
  })

  it("badge paths: key, decoded name, format", () => {
    expect(parseBadgePath(`/badge/${"a".repeat(32)}/team%20a.svg`)).toEqual({ key: "a".repeat(32), name: "team a", format: "svg" })
    expect(parseBadgePath("/badge/k/x.shields")).toEqual({ key: "k", name: "x", format: "shields" })
    expect(parseBadgePath("/badge/k/x.png")).toBe("notFound")
    expect(parseBadgePath("/badges/k/x.svg")).toBeUndefined()
  })
})
