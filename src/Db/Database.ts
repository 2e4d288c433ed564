import { PgClient } from "@effect/sql-pg"
import { Config, Context, Effect, Layer, Option, Redacted, Schedule } from "effect"
import pg from "pg"
import { AppConfig } from "../Config.js"
import { type EmbeddedOptions, startEmbedded } from "./Embedded.js"
import { migrate } from "./Migrator.js"

/**
 * How the database stores time series:
 * - `timescaledb`: hypertables, continuous aggregates, compression and retention policies;
 * - `timescaledb-apache`: hypertables only (the Apache-licensed build has no continuous aggregates);
 * - `postgresql`: plain tables, with a rollup table the service refreshes itself.
 */
export type DbMode = "timescaledb" | "timescaledb-apache" | "postgresql"

export interface DatabaseShape {
  /** The pg pool behind the SqlClient, for the few hot paths that want prepared statements. */
  readonly pool: pg.Pool
  readonly mode: DbMode
  readonly timescaleVersion: Option.Option<string>
}

export class Database extends Context.Tag("jobmon/Database")<Database, DatabaseShape>() {}

// bigint counts and numerics come back as JS numbers (all ours fit in 2^53).
const types: pg.CustomTypesConfig = {
  getTypeParser: ((oid: number, format?: "text" | "binary") => {
    if (oid === 20 || oid === 1700) return (value: string) => (value === null ? null : Number(value))
    return pg.types.getTypeParser(oid, format as "text")
  }) as pg.CustomTypesConfig["getTypeParser"]
}

export const detectMode = (pool: pg.Pool) =>
  Effect.promise(async () => {
    const ext = await pool.query<{ extversion: string }>(
      "select extversion from pg_extension where extname = 'timescaledb'"
    )
    if (ext.rowCount === 0) return { mode: "postgresql" as DbMode, timescaleVersion: Option.none<string>() }
    const license = await pool.query<{ license: string }>(
      "select current_setting('timescaledb.license', true) as license"
    )
    const mode: DbMode = license.rows[0]?.license === "apache" ? "timescaledb-apache" : "timescaledb"
    return { mode, timescaleVersion: Option.some(ext.rows[0]!.extversion) }
  })

const timescaleSetting = Config.literal("auto", "off")("TIMESCALEDB").pipe(Config.withDefault("auto" as const))

/**
 * Opens the database (DATABASE_URL, or the embedded PostgreSQL), migrates it, detects the mode.
 * CLI commands pass `whenOwned: "attach"`: they use a running service's embedded PostgreSQL.
 */
export const makeDatabaseLive = (
  embedded: EmbeddedOptions = {}
): Layer.Layer<Database | PgClient.PgClient | import("@effect/sql").SqlClient.SqlClient, Error, AppConfig> =>
  Layer.unwrapScoped(
    Effect.gen(function*() {
      const config = yield* AppConfig
      const url = yield* Option.match(config.databaseUrl, {
        onSome: (url) => Effect.succeed(url),
        onNone: () => Effect.map(startEmbedded(config.dataDir, embedded), (db) => db.url)
      })
      const pool = new pg.Pool({
        connectionString: Redacted.value(url),
        max: config.databasePoolSize,
        idleTimeoutMillis: 30_000,
        application_name: "jobmon",
        // Bounds what one request can cost (src/Db/StatementTimeout.ts); long work opts out.
        ...(config.statementTimeoutMs > 0 ? { statement_timeout: config.statementTimeoutMs } : {}),
        types
      })
      pool.on("error", () => {})
      yield* Effect.addFinalizer(() => Effect.promise(() => pool.end()).pipe(Effect.timeoutOption("5 seconds")))
      yield* Effect.tryPromise({
        try: () => pool.query("select 1"),
        catch: (cause) => new Error(`cannot reach PostgreSQL: ${(cause as Error).message}`)
      }).pipe(Effect.retry({ times: 20, schedule: Schedule.spaced("500 millis") }))
      const timescaledb = yield* Effect.orDie(timescaleSetting)
      yield* migrate(pool, { timescaledb })
      const { mode, timescaleVersion } = yield* detectMode(pool)
      yield* Effect.logInfo(
        `database mode: ${mode}${Option.match(timescaleVersion, { onNone: () => "", onSome: (v) => ` (TimescaleDB ${v})` })}`
      )
      const database = Layer.succeed(Database, { pool, mode, timescaleVersion })
      const client = PgClient.layerFromPool({
        acquire: Effect.succeed(pool),
        transformQueryNames: undefined,
        types
      } as PgClient.PgClientFromPoolOptions)
      return Layer.merge(database, client).pipe(Layer.mapError((e) => new Error(`database: ${e.message}`)))
    })
  )

/** The service's database: it owns the embedded PostgreSQL, and refuses one another process owns. */
export const DatabaseLive = makeDatabaseLive()
