import { Effect } from "effect"
import pg from "pg"
import { migrate } from "../src/Db/Migrator.ts"
const [url, ts] = process.argv.slice(2)
const pool = new pg.Pool({ connectionString: url })
await Effect.runPromise(migrate(pool, { timescaledb: ts as "auto" | "off" }))
await pool.end()
