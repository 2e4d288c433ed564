import { Effect } from "effect"
import * as fs from "node:fs"
import * as path from "node:path"
import type pg from "pg"
import { packageRoot } from "../PackageRoot.js"

/** Migrations are the numbered plain SQL files in `sql/`, applied in order, each once. */
export const SQL_DIR = path.join(packageRoot, "sql")

export interface Migration {
  readonly id: number
  readonly name: string
  readonly sql: string
}

export const loadMigrations = (dir: string = SQL_DIR): ReadonlyArray<Migration> =>
  fs
    .readdirSync(dir)
    .filter((file) => /^\d+_.+\.sql$/.test(file))
    .map((file) => ({
      id: Number.parseInt(file.split("_")[0]!, 10),
      name: file.replace(/\.sql$/, ""),
      sql: fs.readFileSync(path.join(dir, file), "utf8")
    }))
    .sort((a, b) => a.id - b.id)

/** A key for pg_advisory_lock, so that two instances starting together migrate one after the other. */
const LOCK_KEY = 7_316_402_113

export interface MigrateOptions {
  /** `off` keeps TimescaleDB out even where the server offers it. */
  readonly timescaledb: "auto" | "off"
}

export const migrate = (pool: pg.Pool, options: MigrateOptions) =>
  Effect.gen(function*() {
    const migrations = loadMigrations()
    const applied = yield* Effect.acquireUseRelease(
      Effect.promise(() => pool.connect()),
      (client) =>
        Effect.promise(async () => {
          // A migration may build an index over millions of rows, and waits for another instance's
          // migrations: no statement_timeout on this connection (which is closed afterwards, not
          // returned to the pool with that setting).
          await client.query("set statement_timeout = 0")
          await client.query("select pg_advisory_lock($1)", [LOCK_KEY])
          try {
            await client.query(`create table if not exists schema_migrations (
              id integer primary key,
              name text not null,
              applied_at timestamptz not null default now()
            )`)
            const done = new Set(
              (await client.query<{ id: number }>("select id from schema_migrations")).rows.map((r) => Number(r.id))
            )
            const appliedNow: Array<string> = []
            for (const migration of migrations) {
              if (done.has(migration.id)) continue
              await client.query("begin")
              try {
                await client.query(`select set_config('jobmon.timescaledb', $1, true)`, [options.timescaledb])
                await client.query(migration.sql)
                await client.query("insert into schema_migrations (id, name) values ($1, $2)", [
                  migration.id,
                  migration.name
                ])
                await client.query("commit")
              } catch (error) {
                await client.query("rollback")
                throw new Error(`migration ${migration.name} failed: ${(error as Error).message}`)
              }
              appliedNow.push(migration.name)
            }
            return appliedNow
          } finally {
            await client.query("select pg_advisory_unlock($1)", [LOCK_KEY]).catch(() => undefined)
          }
        }),
      (client) => Effect.sync(() => client.release(true))
    )
    if (applied.length > 0) yield* Effect.logInfo(`applied migrations: ${applied.join(", ")}`)
    return applied
  })
