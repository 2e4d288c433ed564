/**
 * `npm run bench:health`: the cost of the health counts of one refresh pass, counted straight from
 * every run of the 30-day window as the refresh did before sql/0021 (EngineRepo.healthCounts, JIT as
 * the server has it) and from the hourly health rollup as it does now (HealthRefresh.counts), at two
 * sizes of run history.
 *
 * On a fresh database (on DATABASE_URL's server, or on an embedded PostgreSQL in a temporary
 * directory) the real service is started in this process. Monitors get 32 days of runs in one
 * statement per schedule (5 % failed, 3 % successes without a duration, durations 1–61 s, a LATE
 * incident per 500 runs of the busiest), first ~170,000 runs in the window, then ~1.2 million. After
 * the rollup has caught up (its refresh is timed too), each count runs 7 times in alternation, over
 * every monitor (as if all had news) and over a typical pass (the monitors that ping within 30 s:
 * half of the every-minute ones, a tenth of the 5-minute ones, one in 120 of the hourly ones); the
 * medians are printed, and the answers are checked to be equal. The direct count is also timed with
 * JIT off, which the refresh now sets. On a server with TimescaleDB both modes run (continuous
 * aggregate, then TIMESCALEDB=off). Results: docs/performance.md ("Health scores").
 */
import { Effect, Exit, Layer, Logger, LogLevel, Option, Redacted, Scope } from "effect"
import { randomBytes } from "node:crypto"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import pg from "pg"
import { AppFromConfig } from "../src/App.js"
import { AppConfigWith } from "../src/Config.js"
import { startEmbedded } from "../src/Db/Embedded.js"
import { EngineRepo } from "../src/Engine/EngineRepo.js"
import { HEALTH_WINDOW_MS } from "../src/Engine/Health.js"
import { HealthRefresh } from "../src/Engine/HealthRefresh.js"
import { Rollup } from "../src/Stats/Rollup.js"

const REPEATS = 7
/** Monitors per schedule at each size: every minute, every 5 minutes, hourly. */
const SIZES = [
  { everyMinute: 2, every5: 5, hourly: 60 },
  { everyMinute: 15, every5: 30, hourly: 400 }
] as const

const quiet = Logger.minimumLogLevel(LogLevel.Warning)

const withDatabase = (serverUrl: string, database: string) => {
  const url = new URL(serverUrl)
  url.pathname = `/${database}`
  return url.toString()
}

const admin = async (serverUrl: string, text: string) => {
  const client = new pg.Client({ connectionString: serverUrl })
  await client.connect()
  try {
    return await client.query(text)
  } finally {
    await client.end()
  }
}

const median = (xs: ReadonlyArray<number>) => {
  const sorted = [...xs].sort((a, b) => a - b)
  return sorted[Math.floor(sorted.length / 2)]!
}

interface Timings {
  readonly monitors: number
  readonly directMs: ReadonlyArray<number>
  readonly directNoJitMs: ReadonlyArray<number>
  readonly rolledUpMs: ReadonlyArray<number>
}

interface Row {
  readonly size: string
  readonly monitors: number
  readonly runs: number
  readonly rollupRows: number
  readonly buildMs: number
  readonly all: Timings
  readonly pass: Timings
}

const runMode = async (serverUrl: string, timescale: "auto" | "off") => {
  const name = `jobmon_bench_${randomBytes(5).toString("hex")}`
  await admin(serverUrl, `create database ${name}`)
  const url = withDatabase(serverUrl, name)
  const scope = Effect.runSync(Scope.make())
  const pool = new pg.Pool({ connectionString: url, max: 2 })
  try {
    process.env.TIMESCALEDB = timescale
    const token = `jmt_bench_${randomBytes(18).toString("base64url")}`
    const app = AppFromConfig(AppConfigWith({
      databaseUrl: Option.some(Redacted.make(url)),
      host: "127.0.0.1",
      port: 0,
      bootstrapToken: Option.some(Redacted.make(token))
    }))
    const services = Layer.provideMerge(
      Layer.merge(HealthRefresh.DefaultWithoutDependencies.pipe(Layer.provide(EngineRepo.Default)), EngineRepo.Default),
      app
    )
    const context = await Effect.runPromise(Layer.buildWithScope(services, scope).pipe(Effect.provide(quiet)))
    const run = <A>(effect: Effect.Effect<A, unknown, HealthRefresh | EngineRepo | Rollup>) =>
      Effect.runPromise(effect.pipe(Effect.provide(context), Effect.provide(quiet)))
    const mode = (await pool.query("select to_regclass('public.run_health_hourly_cagg') is not null as cagg")).rows[0].cagg
      ? "timescaledb (continuous aggregates)"
      : "tables refreshed by the service"
    const { rows: [org] } = await pool.query("select id from organizations limit 1")

    // Monitors straight into the table (the actors are not part of this measurement).
    const monitors = async (n: number, label: string) => {
      const { rows } = await pool.query(
        `insert into monitors (org_id, name, schedule_type, schedule_expression, timezone, created_at)
         select $1, $2 || ' ' || i, 'interval', '1m', 'UTC', now() - interval '40 days' from generate_series(1, $3::int) as i
         returning id`,
        [org.id, label, n]
      )
      return rows.map((r) => r.id as string)
    }
    const seed = async (ids: ReadonlyArray<string>, step: string) => {
      await pool.query("select setseed(0.42)")
      await pool.query(
        `insert into runs (id, monitor_id, org_id, status, started_at, finished_at, duration_ms)
         select gen_random_uuid(), s.id, s.org_id, case when s.x < 0.05 then 'FAIL' else 'SUCCESS' end,
                s.t, s.t + s.d * interval '1 ms', case when s.x >= 0.05 and s.x < 0.08 then null else s.d end
         from (
           select m.id, m.org_id, t, random() as x, round(1000 + random() * 60000)::bigint as d
           from monitors m
           cross join generate_series(date_trunc('minute', now()) - interval '32 days', now() - interval '1 minute', $2::interval) as t
           where m.id = any($1::uuid[])
         ) s`,
        [ids, step]
      )
    }

    const time = async (ids: ReadonlyArray<string>): Promise<Timings> => {
      const directMs: Array<number> = []
      const directNoJitMs: Array<number> = []
      const rolledUpMs: Array<number> = []
      const key = (rows: ReadonlyArray<{ monitor_id: string }>) =>
        JSON.stringify([...rows].sort((a, b) => a.monitor_id.localeCompare(b.monitor_id)))
      for (let i = 0; i < REPEATS; i++) {
        const now = Date.now()
        const from = new Date(now - HEALTH_WINDOW_MS)
        let t = performance.now()
        const direct = await run(Effect.flatMap(EngineRepo, (repo) => repo.healthCounts(ids, from).pipe(repo.withoutStatementTimeout)))
        directMs.push(performance.now() - t)
        t = performance.now()
        await run(Effect.flatMap(EngineRepo, (repo) => repo.healthCounts(ids, from).pipe(repo.withoutJit, repo.withoutStatementTimeout)))
        directNoJitMs.push(performance.now() - t)
        t = performance.now()
        const rolledUp = await run(Effect.flatMap(HealthRefresh, (health) => health.counts(ids, now)))
        rolledUpMs.push(performance.now() - t)
        if (key(direct) !== key(rolledUp)) throw new Error("the rolled-up counts differ from the direct ones")
      }
      return { monitors: ids.length, directMs, directNoJitMs, rolledUpMs }
    }

    const all: Array<string> = []
    /** The monitors that ping within one 30 s pass. */
    const pass: Array<string> = []
    const results: Array<Row> = []
    let previous = { everyMinute: 0, every5: 0, hourly: 0 }
    for (const size of SIZES) {
      const minute = await monitors(size.everyMinute - previous.everyMinute, "every minute")
      const five = await monitors(size.every5 - previous.every5, "every 5 minutes")
      const hourly = await monitors(size.hourly - previous.hourly, "hourly")
      previous = size
      await seed(minute, "1 minute")
      await seed(five, "5 minutes")
      await seed(hourly, "1 hour")
      all.push(...minute, ...five, ...hourly)
      pass.push(...minute.filter((_, i) => i % 2 === 0), ...five.filter((_, i) => i % 10 === 0), ...hourly.filter((_, i) => i % 120 === 0))
      await pool.query(
        `insert into incidents (org_id, monitor_id, type, severity, status, created_at, last_occurred_at, resolved_at, resolved_by_name, run_id)
         select r.org_id, r.monitor_id, 'LATE', 'MEDIUM', 'RESOLVED', r.started_at, r.started_at, r.started_at, 'system', r.id
         from runs r where r.monitor_id = any($1::uuid[]) and random() < 0.002`,
        [minute]
      )
      await pool.query("analyze")
      const t0 = performance.now()
      await run(Effect.flatMap(Rollup, (rollup) => rollup.refreshAll))
      const buildMs = performance.now() - t0
      const { rows: [counted] } = await pool.query(
        `select (select count(*)::int from runs where started_at > now() - interval '30 days') as runs,
                (select count(*)::int from run_health_hourly where bucket > now() - interval '30 days') as rows`
      )
      const everyMonitor = await time(all)
      const typical = await time(pass)
      results.push({
        size: `${size.everyMinute} every minute, ${size.every5} every 5 min, ${size.hourly} hourly`,
        monitors: all.length,
        runs: counted.runs,
        rollupRows: counted.rows,
        buildMs,
        all: everyMonitor,
        pass: typical
      })
    }
    return { mode, results }
  } finally {
    await pool.end()
    await Effect.runPromise(Scope.close(scope, Exit.void).pipe(Effect.provide(quiet)))
    await admin(serverUrl, `drop database if exists ${name} with (force)`)
  }
}

const main = async () => {
  const given = process.env.DATABASE_URL
  let serverUrl: string
  let where: string
  let stopEmbedded = async () => {}
  if (given !== undefined && given.trim() !== "") {
    serverUrl = given
    const shown = new URL(given)
    if (shown.password !== "") shown.password = "***"
    where = `DATABASE_URL ${shown.host}`
  } else {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "jobmon-bench-pg-"))
    const scope = Effect.runSync(Scope.make())
    const db = await Effect.runPromise(startEmbedded(dir).pipe(Scope.extend(scope), Effect.provide(quiet)))
    serverUrl = Redacted.value(db.url)
    where = "embedded PostgreSQL 17"
    stopEmbedded = async () => {
      await Effect.runPromise(Scope.close(scope, Exit.void).pipe(Effect.provide(quiet)))
      fs.rmSync(dir, { recursive: true, force: true })
    }
  }
  try {
    const server = (await admin(serverUrl, "select version() as v")).rows[0].v as string
    const timescale = (await admin(
      serverUrl,
      `select exists (select 1 from pg_available_extensions where name = 'timescaledb')
          and current_setting('shared_preload_libraries', true) like '%timescaledb%' as ok`
    )).rows[0].ok as boolean
    const cpus = os.cpus()
    console.log(`machine: ${cpus.length} × ${cpus[0]?.model ?? "?"}, ${Math.round(os.totalmem() / 2 ** 30)} GiB, Node ${process.version}`)
    console.log(`database: ${where}: ${server.split(" on ")[0]}${timescale ? " with TimescaleDB" : ""}`)
    console.log(`load average at start: ${os.loadavg().map((x) => x.toFixed(2)).join(", ")}`)
    console.log(`each count ${REPEATS} times, alternating; median (min–max)\n`)
    const ms = (xs: ReadonlyArray<number>) =>
      `${median(xs).toFixed(0)} ms (${Math.min(...xs).toFixed(0)}–${Math.max(...xs).toFixed(0)})`
    for (const setting of timescale ? (["auto", "off"] as const) : (["off"] as const)) {
      const { mode, results } = await runMode(serverUrl, setting)
      console.log(`## mode: ${mode}`)
      console.log("| monitors | runs in the window | rollup rows in the window | rollup catching up | counted over | before: direct | direct, JIT off | after: from the rollup |")
      console.log("|---|---|---|---|---|---|---|---|")
      for (const r of results) {
        for (const [label, t] of [["every monitor", r.all], ["a typical pass", r.pass]] as const) {
          console.log(
            `| ${r.monitors} (${r.size}) | ${r.runs.toLocaleString("en")} | ${r.rollupRows.toLocaleString("en")} | ` +
              `${(r.buildMs / 1000).toFixed(1)} s | ${label} (${t.monitors}) | ${ms(t.directMs)} | ${ms(t.directNoJitMs)} | ${ms(t.rolledUpMs)} |`
          )
        }
      }
      console.log("")
    }
    console.log(`load average at end: ${os.loadavg().map((x) => x.toFixed(2)).join(", ")}`)
  } finally {
    await stopEmbedded()
  }
}

await main()
