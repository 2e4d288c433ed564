import { expect, layer } from "@effect/vitest"
import { SqlClient } from "@effect/sql"
import { Effect } from "effect"
import pg from "pg"
import { withoutStatementTimeout } from "../../src/Db/StatementTimeout.js"
import { call, createMonitor, TestApp, TestServer } from "../support/fixture.js"

/**
 * STATEMENT_TIMEOUT_MS (docs/operations.md, "Statement timeout"): an API request whose query runs
 * past it answers 503 with Retry-After instead of holding a connection (or answering 500); long
 * background work runs without it. Here the limit is 400 ms and a query is held up by a lock that
 * another session keeps on its table.
 */

const TIMEOUT_MS = 400

/** Runs `use` while another session holds an ACCESS EXCLUSIVE lock on `table`. */
const whileLocked = <A, E, R>(table: string, use: Effect.Effect<A, E, R>) =>
  Effect.gen(function*() {
    const app = yield* TestApp
    const client = yield* Effect.acquireRelease(
      Effect.promise(async () => {
        const client = new pg.Client({ connectionString: app.databaseUrl })
        await client.connect()
        await client.query("begin")
        await client.query(`lock table ${table} in access exclusive mode`)
        return client
      }),
      (client) => Effect.promise(() => client.query("rollback").finally(() => client.end()))
    )
    void client
    return yield* use
  }).pipe(Effect.scoped)

layer(TestServer({ statementTimeoutMs: TIMEOUT_MS }), { excludeTestServices: true, timeout: 120_000 })("statement timeout", (it) => {
  it.effect("a read held up past the timeout answers 503 ServiceUnavailable with Retry-After, then 200 once the database answers", () =>
    Effect.gen(function*() {
      const monitor = yield* createMonitor()
      const cases: ReadonlyArray<[string, string]> = [
        ["events", "/api/events"],
        ["ping_events", "/api/events?type=ping.received"],
        ["incidents", "/api/incidents"],
        ["runs", `/api/monitors/${monitor.id}/runs`],
        ["runs", `/api/monitors/${monitor.id}/runs/summary`],
        ["runs", `/api/monitors/${monitor.id}/percentiles`],
        ["maintenance_history", "/api/maintenance-windows/history"],
        ["monitors", "/api/monitors"]
      ]
      for (const [table, path] of cases) {
        const started = Date.now()
        const held = yield* whileLocked(table, call("GET", path))
        expect(held.status, `${path}: ${held.text}`).toBe(503)
        expect(held.body._tag).toBe("ServiceUnavailable")
        expect(held.body.message).toMatch(/did not answer in time/)
        expect(held.headers["retry-after"]).toBe("5")
        expect(Date.now() - started).toBeGreaterThanOrEqual(TIMEOUT_MS)
        const free = yield* call("GET", path)
        expect(free.status, `${path}: ${free.text}`).toBe(200)
      }
    }))

  it.effect("a change held up past the timeout answers 503 too, and changes nothing", () =>
    Effect.gen(function*() {
      const monitor = yield* createMonitor({ name: "before" })
      const held = yield* whileLocked("events", call("PATCH", `/api/monitors/${monitor.id}`, { body: { name: "after" } }))
      expect(held.status, held.text).toBe(503)
      expect(held.body._tag).toBe("ServiceUnavailable")
      expect((yield* call("GET", `/api/monitors/${monitor.id}`)).body.name).toBe("before")
    }))

  it.effect("background work runs without the limit, and the pooled connection keeps the limit afterwards", () =>
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const slow = sql`select pg_sleep(${(TIMEOUT_MS * 2) / 1000})`
      // Several times, so that every connection of the pool that served it is checked afterwards.
      for (let i = 0; i < 3; i++) {
        yield* withoutStatementTimeout(slow)
        const cut = yield* Effect.either(slow)
        expect(cut._tag).toBe("Left")
        expect(JSON.stringify((cut as any).left.cause?.code)).toBe("\"57014\"")
      }
    }))
})
