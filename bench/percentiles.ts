/**
 * `npm run bench:percentiles`: latency and accuracy of GET /api/monitors/{id}/percentiles.
 *
 * On a fresh database (on DATABASE_URL's server, or on an embedded PostgreSQL in a temporary
 * directory) the real service is started in this process, as the tests start it. One monitor gets
 * 1,000,000 successful runs spread over 30 days (log-normal durations, median 45 s), another exactly
 * 100,000. Each is queried with window=30d through the HTTP endpoint: once cold, then 20 times; the
 * median and p95 latency are printed, with the largest relative error of each estimated percentile
 * against PostgreSQL's percentile_cont over the same runs. On a server with TimescaleDB both modes
 * run (continuous aggregate, then TIMESCALEDB=off: the service's rollup table).
 *
 * Targets: approximate path ≤ 50 ms median, ≤ 1% error. Results: docs/performance.md.
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
import { ServerAddress } from "../src/Http/Server.js"

const LARGE = 1_000_000
const EXACT = 100_000
const QUERIES = 20
const NAMES = ["p50", "p75", "p90", "p95", "p99", "max"] as const

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

const quantile = (sorted: ReadonlyArray<number>, p: number) => {
  const rank = p * (sorted.length - 1)
  const low = Math.floor(rank)
  return sorted[low]! + (rank - low) * ((sorted[Math.ceil(rank)] ?? sorted[low]!) - sorted[low]!)
}

interface Measured {
  readonly label: string
  readonly method: string
  readonly sampleSize: number
  readonly coldMs: number
  readonly medianMs: number
  readonly p95Ms: number
  readonly errors: Record<string, number>
  readonly meanError: number
  readonly stddevError: number
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
    const context = await Effect.runPromise(Layer.buildWithScope(app, scope).pipe(Effect.provide(quiet)))
    const base = Effect.runSync(Effect.map(ServerAddress, (a) => a.url).pipe(Effect.provide(context)))
    const api = async (method: string, route: string, body?: unknown) => {
      const response = await fetch(`${base}${route}`, {
        method,
        headers: { authorization: `Bearer ${token}`, ...(body === undefined ? {} : { "content-type": "application/json" }) },
        ...(body === undefined ? {} : { body: JSON.stringify(body) })
      })
      return { status: response.status, method: response.headers.get("x-statistics-method"), body: await response.json() as any }
    }
    const mode = (await pool.query("select to_regclass('public.run_duration_hourly_cagg') is not null as cagg")).rows[0].cagg
      ? "timescaledb (continuous aggregate)"
      : "table refreshed by the service"

    const monitor = async (label: string) => {
      const created = await api("POST", "/api/monitors", { name: label, schedule: { type: "interval", expression: "1m" } })
      if (created.status !== 201) throw new Error(`monitor create failed: ${created.status}`)
      return created.body.id as string
    }
    const seed = async (monitorId: string, n: number, span: string) => {
      const t0 = performance.now()
      await pool.query(`select setseed(0.42)`)
      await pool.query(
        `insert into runs (id, monitor_id, org_id, status, started_at, finished_at, duration_ms)
         select gen_random_uuid(), $1, m.org_id, 'SUCCESS', t.started_at, t.started_at + t.d * interval '1 ms', t.d
         from monitors m, (
           select now() - interval '1 minute' - (i::float8 / $2) * $3::interval as started_at,
                  round(exp(ln(45000) + 0.8 * sqrt(-2 * ln(1 - random())) * cos(2 * pi() * random())))::bigint as d
           from generate_series(1, $2::int) as i) t
         where m.id = $1`,
        [monitorId, n, span]
      )
      await pool.query("analyze runs")
      return performance.now() - t0
    }
    const measure = async (label: string, monitorId: string): Promise<Measured> => {
      const route = `/api/monitors/${monitorId}/percentiles?window=30d`
      let t = performance.now()
      const cold = await api("GET", route)
      const coldMs = performance.now() - t
      const times: Array<number> = []
      let last = cold
      for (let i = 0; i < QUERIES; i++) {
        t = performance.now()
        last = await api("GET", route)
        times.push(performance.now() - t)
      }
      times.sort((a, b) => a - b)
      const exact = (await pool.query(
        `select count(*)::int as n,
                percentile_cont(array[0.5, 0.75, 0.9, 0.95, 0.99]) within group (order by duration_ms) as p,
                avg(duration_ms)::float8 as mean, stddev_samp(duration_ms)::float8 as stddev, max(duration_ms)::float8 as max
         from runs where monitor_id = $1 and status = 'SUCCESS' and duration_ms is not null
           and started_at >= now() - interval '30 days'`,
        [monitorId]
      )).rows[0]
      const want = [...exact.p.map((x: number) => Math.floor(x + 0.5)), exact.max]
      const errors: Record<string, number> = {}
      NAMES.forEach((key, i) => {
        errors[key] = Math.abs(last.body.percentiles[key] - want[i]) / want[i]
      })
      if (last.body.sampleSize !== exact.n) throw new Error(`sample size ${last.body.sampleSize}, exact ${exact.n}`)
      return {
        label,
        method: last.method ?? "?",
        sampleSize: last.body.sampleSize,
        coldMs,
        medianMs: quantile(times, 0.5),
        p95Ms: quantile(times, 0.95),
        errors,
        meanError: Math.abs(last.body.mean - exact.mean) / exact.mean,
        stddevError: Math.abs(last.body.stddev - exact.stddev) / exact.stddev
      }
    }

    const baselineMonitor = await monitor("baseline")
    const baseline: Array<number> = []
    for (let i = 0; i < QUERIES + 1; i++) {
      const t = performance.now()
      await api("GET", `/api/monitors/${baselineMonitor}`)
      if (i > 0) baseline.push(performance.now() - t)
    }
    baseline.sort((a, b) => a - b)
    const large = await monitor("one million runs")
    const seedLarge = await seed(large, LARGE, "29 days 23 hours")
    let refreshMs = 0
    if (mode.startsWith("timescaledb")) {
      const t0 = performance.now()
      await pool.query("call refresh_continuous_aggregate('public.run_duration_hourly_cagg', null, date_trunc('hour', now()))")
      refreshMs = performance.now() - t0
    }
    const approximate = await measure(`${LARGE.toLocaleString("en")} runs / 30 d`, large)
    const small = await monitor("one hundred thousand runs")
    await seed(small, EXACT, "29 days")
    const exact = await measure(`${EXACT.toLocaleString("en")} runs / 29 d`, small)
    return { mode, seedLarge, refreshMs, baselineMs: quantile(baseline, 0.5), results: [approximate, exact] }
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
    console.log(`load average at start: ${os.loadavg().map((x) => x.toFixed(2)).join(", ")} (other work on the machine skews latency)`)
    console.log(`${QUERIES} queries of window=30d after one cold query, same process as the service (HTTP over loopback)\n`)
    const pct = (x: number) => `${(x * 100).toFixed(3)}%`
    for (const setting of timescale ? (["auto", "off"] as const) : (["off"] as const)) {
      const { mode, seedLarge, refreshMs, baselineMs, results } = await runMode(serverUrl, setting)
      console.log(`## mode: ${mode}`)
      console.log(`seeding 1,000,000 runs: ${(seedLarge / 1000).toFixed(1)} s` +
        (refreshMs > 0 ? `; refresh_continuous_aggregate over them: ${(refreshMs / 1000).toFixed(1)} s` : ""))
      console.log(`baseline: GET /api/monitors/{id} median ${baselineMs.toFixed(1)} ms (authentication, routing, one indexed row)`)
      console.log("| sample | method | cold query | median | p95 | max error p50 / p75 / p90 / p95 / p99 / max | mean, stddev error |")
      console.log("|---|---|---|---|---|---|---|")
      for (const r of results) {
        console.log(
          `| ${r.label} | ${r.method} | ${r.coldMs.toFixed(0)} ms | ${r.medianMs.toFixed(1)} ms | ${r.p95Ms.toFixed(1)} ms | ` +
            `${NAMES.map((k) => pct(r.errors[k]!)).join(" / ")} | ${r.meanError.toExponential(1)}, ${r.stddevError.toExponential(1)} |`
        )
      }
      console.log("")
    }
    console.log(`load average at end: ${os.loadavg().map((x) => x.toFixed(2)).join(", ")}`)
  } finally {
    await stopEmbedded()
  }
}

await main()
