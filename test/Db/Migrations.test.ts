import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import pg from "pg"
import { detectMode } from "../../src/Db/Database.js"
import { loadMigrations, migrate } from "../../src/Db/Migrator.js"
import { makeTestDatabase } from "../support/fixture.js"
import { timescaleAvailable } from "../support/timescale.js"

const withPool = <A>(url: string, f: (pool: pg.Pool) => Effect.Effect<A>) =>
  Effect.acquireUseRelease(
    Effect.sync(() => new pg.Pool({ connectionString: url, max: 3 })),
    f,
    (pool) => Effect.promise(() => pool.end())
  )

const hasTimescale = await timescaleAvailable()

describe("migrations", () => {
  it.live("apply every sql/ file once, in order, and never again", () =>
    Effect.gen(function*() {
      const db = yield* makeTestDatabase()
      yield* withPool(db.url, (pool) =>
        Effect.gen(function*() {
          const files = loadMigrations()
          expect(files.length).toBeGreaterThan(0)
          expect(files.map((m) => m.id)).toEqual([...files.map((m) => m.id)].sort((a, b) => a - b))
          const first = yield* migrate(pool, { timescaledb: "off" })
          expect(first).toEqual(files.map((m) => m.name))
          const second = yield* migrate(pool, { timescaledb: "off" })
          expect(second).toEqual([])
          const recorded = yield* Effect.promise(() => pool.query("select id, name from schema_migrations order by id"))
          expect(recorded.rows.map((r) => r.name)).toEqual(files.map((m) => m.name))
          // Two instances migrating at once wait for each other instead of failing.
          yield* Effect.all([migrate(pool, { timescaledb: "off" }), migrate(pool, { timescaledb: "off" })], { concurrency: 2 })
        }))
    }).pipe(Effect.scoped))

  it.live("plain PostgreSQL mode: runs is an ordinary table and the mode says postgresql", () =>
    Effect.gen(function*() {
      const db = yield* makeTestDatabase()
      yield* withPool(db.url, (pool) =>
        Effect.gen(function*() {
          yield* migrate(pool, { timescaledb: "off" })
          const { mode } = yield* detectMode(pool)
          expect(mode).toBe("postgresql")
          const ext = yield* Effect.promise(() => pool.query("select 1 from pg_extension where extname = 'timescaledb'"))
          expect(ext.rowCount).toBe(0)
          const table = yield* Effect.promise(() => pool.query("select relkind from pg_class where relname = 'runs'"))
          expect(table.rows[0]?.relkind).toBe("r")
        }))
    }).pipe(Effect.scoped))

  it.live.skipIf(!hasTimescale)("TimescaleDB mode: runs is a hypertable on started_at", () =>
    Effect.gen(function*() {
      const db = yield* makeTestDatabase()
      yield* withPool(db.url, (pool) =>
        Effect.gen(function*() {
          yield* migrate(pool, { timescaledb: "auto" })
          const { mode, timescaleVersion } = yield* detectMode(pool)
          expect(mode).toBe("timescaledb")
          expect(timescaleVersion._tag).toBe("Some")
          const hypertable = yield* Effect.promise(() =>
            pool.query(`select d.column_name from timescaledb_information.dimensions d
                        where d.hypertable_name = 'runs'`)
          )
          expect(hypertable.rows.map((r) => r.column_name)).toEqual(["started_at"])
        }))
    }).pipe(Effect.scoped))
})
