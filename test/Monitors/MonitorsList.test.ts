import { expect, layer } from "@effect/vitest"
import { SqlClient } from "@effect/sql"
import { Effect } from "effect"
import { call, createOrganization, sendPing, TestServer, validMonitor } from "../support/fixture.js"

/**
 * GET /api/monitors with filters (q, status, tag), sorts and cursor paging, and
 * GET /api/monitors/summary, through the real server and client: what the dashboard's monitors page
 * asks for instead of loading every monitor.
 *
 * The fleet of the sorting tests is written into the database as the engine would have left it
 * (statuses, health scores, last and next times, creation times with ties down to the microsecond),
 * so that every order is known in advance; those monitors are not the engine's (it loads monitors at
 * start-up and when the API creates them), so nothing changes them during the test.
 */

const STATUS_ORDER = ["FAILING", "MISSED", "LATE", "RUNNING", "NEW", "OK", "PAUSED"] as const
const DB_STATUSES = ["NEW", "OK", "RUNNING", "LATE", "MISSED", "FAILING"] as const
const FIELDS = ["createdAt", "name", "status", "lastPingAt", "nextExpectedAt", "healthScore"] as const
type Field = typeof FIELDS[number]

/** A seeded monitor: instants as microseconds after 2026-03-01T00:00:00Z, as the database keeps them. */
interface Seeded {
  id: string
  name: string
  status: string
  tags: Array<string>
  health: number
  createdUs: number
  lastPingUs: number | null
  nextUs: number | null
}

const BASE = "2026-03-01T00:00:00Z"
const NAMES = ["alpha", "Bravo", "charlie", "DELTA", "echo"]

const seedFleet = (orgId: string, count: number) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const fleet: Array<Seeded> = []
    for (let i = 0; i < count; i++) {
      // Ties everywhere: equal names but for case, equal statuses, scores and instants, and
      // instants a microsecond apart (a cursor rounded to milliseconds would lose rows).
      const name = i % 7 === 0 ? (i % 14 === 0 ? "Same name" : "same NAME") : `${NAMES[i % 5]} ${String(Math.floor(i / 5)).padStart(2, "0")}`
      const paused = i % 6 === 5
      const dbStatus = DB_STATUSES[i % DB_STATUSES.length]!
      const health = [100, 87.5, 42.25, 0][i % 4]!
      const createdUs = Math.floor(i / 3) * 1_000_000 + (i % 2)
      const lastPingUs = i % 3 === 0 ? null : (i % 4) * 1_000_000 + (i % 2)
      const nextUs = i % 4 === 1 ? null : 3_600_000_000 - (i % 5) * 1_000_000 - (i % 3)
      const tags = ["fleet", ...(i % 2 === 0 ? ["even"] : []), ...(i % 3 === 0 ? ["three"] : [])]
      const at = (us: number | null) => (us === null ? null : sql`${BASE}::timestamptz + ${us} * interval '1 microsecond'`)
      const [row] = yield* sql<{ id: string }>`
        insert into monitors (org_id, name, schedule_type, schedule_expression, status, paused, health_score,
          last_ping_at, next_expected_at, created_at, tags)
        values (${orgId}, ${name}, 'interval', '1d', ${dbStatus}, ${paused}, ${health},
          ${at(lastPingUs) ?? null}, ${at(nextUs) ?? null}, ${at(createdUs)}, ${tags}::text[])
        returning id`
      fleet.push({ id: row!.id, name, status: paused ? "PAUSED" : dbStatus, tags, health, createdUs, lastPingUs, nextUs })
    }
    return fleet
  }).pipe(Effect.orDie)

const keyOf = (m: Seeded, field: Field): string | number | null => {
  switch (field) {
    case "createdAt":
      return m.createdUs
    case "name":
      return m.name.toLowerCase()
    case "status":
      return STATUS_ORDER.indexOf(m.status as typeof STATUS_ORDER[number])
    case "lastPingAt":
      return m.lastPingUs
    case "nextExpectedAt":
      return m.nextUs
    case "healthScore":
      return m.health
  }
}

/** The order a sort promises: the key (monitors without one last, either way), then the id. */
const expectedOrder = (fleet: ReadonlyArray<Seeded>, sort: string): Array<string> => {
  const descending = sort.startsWith("-")
  const field = (descending ? sort.slice(1) : sort) as Field
  const sign = descending ? -1 : 1
  return [...fleet].sort((a, b) => {
    const ka = keyOf(a, field)
    const kb = keyOf(b, field)
    if (ka === null || kb === null) {
      if (ka !== kb) return ka === null ? 1 : -1
    } else if (ka !== kb) return (ka < kb ? -1 : 1) * sign
    return (a.id < b.id ? -1 : 1) * sign
  }).map((m) => m.id)
}

/** Every page of a listing, following nextCursor from the first page. */
const walk = (token: string, query: string, limit: number) =>
  Effect.gen(function*() {
    const ids: Array<string> = []
    const pages: Array<{ page: number; total: number; count: number }> = []
    let cursor: string | null = null
    for (let n = 0; n < 100; n++) {
      const target: string = `/api/monitors?${query}&limit=${limit}${cursor === null ? "" : `&cursor=${encodeURIComponent(cursor)}`}`
      const response = yield* call("GET", target, { token })
      expect(response.status, `${target}: ${response.text}`).toBe(200)
      ids.push(...response.body.monitors.map((m: { id: string }) => m.id))
      pages.push({ page: response.body.page, total: response.body.total, count: response.body.monitors.length })
      cursor = response.body.nextCursor
      if (cursor === null) return { ids, pages }
    }
    throw new Error(`${query}: more than 100 pages`)
  })

const SORTS = FIELDS.flatMap((f) => [f, `-${f}`])

layer(TestServer(), { excludeTestServices: true, timeout: 240_000 })("listing monitors: filters, sorts, pages", (it) => {
  it.effect("paging with nextCursor through every page yields every matching monitor once, in order, for every sort and filter", () =>
    Effect.gen(function*() {
      const { orgId, token } = yield* createOrganization("fleet-walk")
      const fleet = yield* seedFleet(orgId, 31)
      const filters: ReadonlyArray<[string, (m: Seeded) => boolean]> = [
        ["", () => true],
        ["status=FAILING,OK&status=PAUSED", (m) => ["FAILING", "OK", "PAUSED"].includes(m.status)],
        ["tag=even&tag=three", (m) => m.tags.includes("even") && m.tags.includes("three")],
        ["q=A", (m) => m.name.toLowerCase().includes("a")],
        ["q=%20nAmE&status=NEW,RUNNING,LATE,MISSED,FAILING,OK", (m) => m.name.toLowerCase().includes(" name") && m.status !== "PAUSED"]
      ]
      for (const sort of SORTS) {
        for (const [filter, keep] of filters) {
          const expected = expectedOrder(fleet.filter(keep), sort)
          expect(expected.length, filter).toBeGreaterThan(0)
          const { ids, pages } = yield* walk(token, `sort=${sort}&${filter}`, 4)
          expect(ids, `sort=${sort}&${filter}`).toEqual(expected)
          expect(pages.map((p) => p.page)).toEqual(pages.map((_, i) => i + 1))
          expect(new Set(pages.map((p) => p.total))).toEqual(new Set([expected.length]))
          expect(pages.length).toBe(Math.max(1, Math.ceil(expected.length / 4)))
        }
      }
    }))

  it.effect("page numbers give the same pages as the cursor under any sort; the default is creation order", () =>
    Effect.gen(function*() {
      const { orgId, token } = yield* createOrganization("fleet-pages")
      const fleet = yield* seedFleet(orgId, 17)
      for (const sort of ["-healthScore", "lastPingAt", "name", "-status"]) {
        const expected = expectedOrder(fleet, sort)
        for (const page of [1, 2, 3, 4]) {
          const response = yield* call("GET", `/api/monitors?sort=${sort}&page=${page}&limit=5`, { token })
          expect(response.status).toBe(200)
          expect(response.body).toMatchObject({ page, limit: 5, total: 17 })
          expect(response.body.monitors.map((m: { id: string }) => m.id)).toEqual(expected.slice((page - 1) * 5, page * 5))
          expect(response.body.nextCursor === null).toBe(page === 4)
        }
        // A page's nextCursor continues where the numbered page ends.
        const second = yield* call("GET", `/api/monitors?sort=${sort}&page=2&limit=5`, { token })
        const third = yield* call("GET", `/api/monitors?sort=${sort}&limit=5&cursor=${second.body.nextCursor}`, { token })
        expect(third.body.page).toBe(3)
        expect(third.body.monitors.map((m: { id: string }) => m.id)).toEqual(expected.slice(10, 15))
      }
      const plain = yield* call("GET", "/api/monitors?limit=100", { token })
      expect(plain.body.monitors.map((m: { id: string }) => m.id)).toEqual(expectedOrder(fleet, "createdAt"))
      expect(Object.keys(plain.body).sort()).toEqual(["limit", "monitors", "nextCursor", "page", "total"])
      const beyond = yield* call("GET", "/api/monitors?page=9&limit=5", { token })
      expect(beyond.body).toMatchObject({ monitors: [], total: 17, page: 9, nextCursor: null })
    }))

  it.effect("filters: name text ignoring case (wildcards are plain characters), statuses, tags; other organizations' monitors never", () =>
    Effect.gen(function*() {
      const { token } = yield* createOrganization("filters")
      const { token: otherToken } = yield* createOrganization("filters-other")
      const made: Record<string, string> = {}
      for (const [name, tags] of [
        ["DB Backup nightly", ["db", "nightly"]],
        ["backend health", ["web"]],
        ["100% sync", ["db"]],
        ["report_weekly", ["reports", "nightly"]],
        ["reportXweekly", []]
      ] as const) {
        const response = yield* call("POST", "/api/monitors", { token, body: validMonitor({ name, tags }) })
        expect(response.status).toBe(201)
        made[name] = response.body.id
      }
      yield* call("POST", "/api/monitors", { token: otherToken, body: validMonitor({ name: "backup elsewhere", tags: ["db"] }) })
      expect((yield* call("POST", `/api/monitors/${made["backend health"]}/pause`, { token })).status).toBe(200)

      const names = (query: string) =>
        Effect.map(call("GET", `/api/monitors?${query}&sort=name`, { token }), (r) => {
          expect(r.status, `${query}: ${r.text}`).toBe(200)
          expect(r.body.total).toBe(r.body.monitors.length)
          return r.body.monitors.map((m: { name: string }) => m.name)
        })
      expect(yield* names("q=BACK")).toEqual(["backend health", "DB Backup nightly"])
      expect(yield* names("q=%20%20back%20%20")).toEqual(["backend health", "DB Backup nightly"])
      expect(yield* names("q=")).toHaveLength(5)
      expect(yield* names("q=%25")).toEqual(["100% sync"])
      expect(yield* names("q=t_w")).toEqual(["report_weekly"])
      expect(yield* names("q=nothing%20like%20it")).toEqual([])
      expect(yield* names("status=PAUSED")).toEqual(["backend health"])
      expect(yield* names("status=NEW")).toEqual(["100% sync", "DB Backup nightly", "report_weekly", "reportXweekly"])
      expect(yield* names("status=FAILING,MISSED")).toEqual([])
      expect(yield* names("tag=db")).toEqual(["100% sync", "DB Backup nightly"])
      expect(yield* names("tag=db&tag=nightly")).toEqual(["DB Backup nightly"])
      expect(yield* names("tag=DB")).toEqual([])
      expect(yield* names("tag=nightly&q=report&status=NEW")).toEqual(["report_weekly"])
    }))

  it.effect("a cursor page starts after the last monitor shown: a monitor that moves meanwhile is not shown twice, none is skipped", () =>
    Effect.gen(function*() {
      const { token } = yield* createOrganization("moving")
      const ids: Record<string, string> = {}
      for (const name of ["a1", "a2", "a3", "b1", "b2", "b3", "c1"]) {
        ids[name] = (yield* call("POST", "/api/monitors", { token, body: validMonitor({ name }) })).body.id
      }
      const first = yield* call("GET", "/api/monitors?sort=name&limit=3", { token })
      expect(first.body.monitors.map((m: { name: string }) => m.name)).toEqual(["a1", "a2", "a3"])
      // Meanwhile a2 is renamed to sort last and b2 to sort first.
      yield* call("PATCH", `/api/monitors/${ids.a2}`, { token, body: { name: "z2" } })
      yield* call("PATCH", `/api/monitors/${ids.b2}`, { token, body: { name: "a0" } })
      const second = yield* call("GET", `/api/monitors?sort=name&limit=3&cursor=${first.body.nextCursor}`, { token })
      expect(second.body.monitors.map((m: { name: string }) => m.name)).toEqual(["b1", "b3", "c1"])
      const third = yield* call("GET", `/api/monitors?sort=name&limit=3&cursor=${second.body.nextCursor}`, { token })
      expect(third.body.monitors.map((m: { name: string }) => m.name)).toEqual(["z2"])
      expect(third.body.nextCursor).toBeNull()
      // The same cursor again: the page as it is now (what the dashboard's refresh shows).
      const again = yield* call("GET", `/api/monitors?sort=name&limit=3&cursor=${first.body.nextCursor}`, { token })
      expect(again.body.monitors.map((m: { name: string }) => m.name)).toEqual(["b1", "b3", "c1"])
      expect(again.body.page).toBe(2)
    }))

  it.effect("bad parameters are a 400 naming the parameter", () =>
    Effect.gen(function*() {
      const { orgId, token } = yield* createOrganization("bad-params")
      yield* seedFleet(orgId, 3)
      const byName = (yield* call("GET", "/api/monitors?sort=name&limit=1", { token })).body.nextCursor as string
      const byHealth = (yield* call("GET", "/api/monitors?sort=healthScore&limit=1", { token })).body.nextCursor as string
      const forged = (sort: string, key: unknown) =>
        Buffer.from(JSON.stringify([sort, key, crypto.randomUUID()])).toString("base64url")
      const cases: ReadonlyArray<[string, string]> = [
        ["status=BROKEN", "status"],
        ["status=ok", "status"],
        ["status=OK,", "status"],
        ["status=", "status"],
        ["status=OK&status=NOPE", "status"],
        ["tag=", "tag"],
        [`tag=${"t".repeat(65)}`, "tag"],
        ["tag=a%00b", "tag"],
        [Array.from({ length: 51 }, (_, i) => `tag=t${i}`).join("&"), "tag"],
        [`q=${"q".repeat(201)}`, "q"],
        ["q=a%00b", "q"],
        ["sort=size", "sort"],
        ["sort=--name", "sort"],
        ["sort=NAME", "sort"],
        ["limit=0", "limit"],
        ["limit=101", "limit"],
        ["page=0", "page"],
        ["page=1.5", "page"],
        ["page=99999999999999999999", "page"],
        ["cursor=garbage", "cursor"],
        [`cursor=${byName}`, "cursor"],
        [`sort=name&page=2&cursor=${byName}`, "cursor"],
        [`sort=name&cursor=${byHealth}`, "cursor"],
        [`sort=name&cursor=${forged("name", 3)}`, "cursor"],
        [`sort=createdAt&cursor=${forged("createdAt", "2026-02-30T00:00:00.000000Z")}`, "cursor"],
        [`sort=lastPingAt&cursor=${forged("lastPingAt", "yesterday")}`, "cursor"],
        [`sort=status&cursor=${forged("status", 2.5)}`, "cursor"],
        [`sort=name&cursor=${forged("name", "a\u0000")}`, "cursor"],
        [`cursor=${Buffer.from(JSON.stringify(["createdAt", null, "not-a-uuid"])).toString("base64url")}`, "cursor"]
      ]
      for (const [query, path] of cases) {
        const response = yield* call("GET", `/api/monitors?${query}`, { token })
        expect(response.status, query.slice(0, 80)).toBe(400)
        expect(response.body._tag).toBe("ValidationError")
        expect(response.body.path, query.slice(0, 80)).toBe(path)
        expect(response.body.message.length).toBeGreaterThan(15)
      }
      const wrongSort = yield* call("GET", `/api/monitors?sort=name&cursor=${byHealth}`, { token })
      expect(wrongSort.body.message).toContain("healthScore")
      // A forged cursor of the right shape is a place in the order like any other.
      const forgedOk = yield* call("GET", `/api/monitors?sort=lastPingAt&cursor=${forged("lastPingAt", null)}`, { token })
      expect(forgedOk.status).toBe(200)
    }))

  it.effect("the summary counts the organization's monitors by status and lists its tags, most used first", () =>
    Effect.gen(function*() {
      const { token } = yield* createOrganization("summary")
      const { token: otherToken } = yield* createOrganization("summary-other")
      const empty = yield* call("GET", "/api/monitors/summary", { token })
      expect(empty.status).toBe(200)
      expect(empty.body).toEqual({ total: 0, byStatus: { NEW: 0, OK: 0, RUNNING: 0, LATE: 0, MISSED: 0, FAILING: 0, PAUSED: 0 }, tags: [] })

      const make = (name: string, tags: Array<string>) =>
        Effect.map(call("POST", "/api/monitors", { token, body: validMonitor({ name, tags }) }), (r) => r.body.id as string)
      const failing = yield* make("fails", ["db", "nightly"])
      const paused = yield* make("paused", ["db"])
      const succeeding = yield* make("succeeds", ["web"])
      yield* make("new", ["db", "web", "nightly"])
      yield* call("POST", "/api/monitors", { token: otherToken, body: validMonitor({ name: "elsewhere", tags: ["db"] }) })
      yield* call("POST", `/api/monitors/${paused}/pause`, { token })
      expect((yield* sendPing(failing, "fail", { token, body: { exitCode: 1 } })).status).toBe(200)
      expect((yield* sendPing(succeeding, "success", { token })).status).toBe(200)

      // The engine writes statuses a moment after the pings.
      let summary: any
      for (let i = 0; i < 100; i++) {
        summary = (yield* call("GET", "/api/monitors/summary", { token })).body
        if (summary.byStatus.FAILING === 1 && summary.byStatus.OK === 1) break
        yield* Effect.sleep("100 millis")
      }
      expect(summary).toEqual({
        total: 4,
        byStatus: { NEW: 1, OK: 1, RUNNING: 0, LATE: 0, MISSED: 0, FAILING: 1, PAUSED: 1 },
        tags: [{ tag: "db", monitors: 3 }, { tag: "nightly", monitors: 2 }, { tag: "web", monitors: 2 }]
      })
      const failingList = yield* call("GET", "/api/monitors?status=FAILING", { token })
      expect(failingList.body.monitors.map((m: { id: string }) => m.id)).toEqual([failing])
      const byStatus = yield* call("GET", "/api/monitors?sort=status", { token })
      expect(byStatus.body.monitors.map((m: { status: string }) => m.status)).toEqual(["FAILING", "NEW", "OK", "PAUSED"])
    }))
})
