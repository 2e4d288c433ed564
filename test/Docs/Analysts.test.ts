import { Effect, Exit, Scope } from "effect"
import * as fs from "node:fs"
import pg from "pg"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { detectMode } from "../../src/Db/Database.js"
import { migrate } from "../../src/Db/Migrator.js"
import { makeTestDatabase } from "../support/fixture.js"
import { timescaleAvailable } from "../support/timescale.js"
import { markdownSqlBlocks } from "./markdown.js"

/**
 * docs/analysts.md is the source of the queries: they are read from the page, run on a database
 * seeded (by direct INSERTs into the tables, after the real migrations) with known runs and
 * incidents, and their numbers compared with values computed here in TypeScript.
 */

const DOC = new URL("../../docs/analysts.md", import.meta.url)
const doc = fs.readFileSync(DOC, "utf8")
const blocks = markdownSqlBlocks(doc)
const query = (name: string) => {
  const block = blocks.find((b) => b.name === name)
  if (block === undefined) throw new Error(`docs/analysts.md has no SQL block marked <!-- query: ${name} -->`)
  return block.sql
}

const HOUR = 3_600_000
const DAY = 24 * HOUR

/** Deterministic pseudo-random numbers (mulberry32), so a failure can be replayed. */
const random = (seed: number) => () => {
  seed = (seed + 0x6d2b79f5) | 0
  let t = Math.imul(seed ^ (seed >>> 15), 1 | seed)
  t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t
  return ((t ^ (t >>> 14)) >>> 0) / 4294967296
}

interface SeedMonitor {
  id: string
  orgId: string
  name: string
  sla: { durationTarget: "p95" | "p99"; maxDurationMs: number } | null
  deleted: boolean
}
interface SeedRun {
  id: string
  monitor: SeedMonitor
  status: "RUNNING" | "SUCCESS" | "FAIL"
  startedAt: number
  durationMs: number | null
  exitCode: number | null
}
interface SeedIncident {
  id: string
  rule: string | null
  createdAt: number
  acknowledgedAt: number | null
  resolvedAt: number | null
}

const uuid = (n: number, kind: number) =>
  `00000000-0000-4000-8${kind.toString(16).padStart(3, "0")}-${n.toString(16).padStart(12, "0")}`

const utcDay = (ms: number) => new Date(ms).toISOString().slice(0, 10)
const utcWeek = (ms: number) => {
  const d = new Date(ms)
  const monday = Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), d.getUTCDate() - ((d.getUTCDay() + 6) % 7))
  return utcDay(monday)
}
const utcMonth = (ms: number) => `${new Date(ms).toISOString().slice(0, 7)}-01`

/** PostgreSQL's percentile_cont: linear interpolation between closest ranks. */
const percentileCont = (values: ReadonlyArray<number>, p: number) => {
  const sorted = [...values].sort((a, b) => a - b)
  const position = p * (sorted.length - 1)
  const lower = Math.floor(position)
  const upper = Math.ceil(position)
  return sorted[lower]! + (sorted[upper]! - sorted[lower]!) * (position - lower)
}

const groupBy = <A>(items: ReadonlyArray<A>, key: (a: A) => string) => {
  const groups = new Map<string, Array<A>>()
  for (const item of items) {
    const k = key(item)
    groups.set(k, [...(groups.get(k) ?? []), item])
  }
  return groups
}

/** A whole-number answer that the query rounded: within half a unit of the exact value. */
const expectRounded = (actual: unknown, exact: number, context: string) => {
  expect(Math.abs(Number(actual) - exact), `${context}: ${actual} vs exact ${exact}`).toBeLessThanOrEqual(0.5 + 1e-9)
}

// Dates, timestamps, bigints and numerics come back as the text PostgreSQL sends: no time-zone or
// precision surprises on the TypeScript side.
const RAW_TYPES = new Set([20, 1082, 1114, 1184, 1700])
const types = {
  getTypeParser: (oid: number, format?: any) =>
    RAW_TYPES.has(oid) ? (value: string) => value : pg.types.getTypeParser(oid, format)
}

const seed = async (client: pg.Client, now: number) => {
  const next = random(20261125)
  const orgs = [
    { id: uuid(1, 1), slug: "acme" },
    { id: uuid(2, 1), slug: "beta" }
  ]
  for (const org of orgs) {
    await client.query("insert into organizations (id, slug, name) values ($1, $2, $2)", [org.id, org.slug])
  }
  const monitors: Array<SeedMonitor> = [
    { id: uuid(1, 2), orgId: orgs[0]!.id, name: "nightly backup", sla: { durationTarget: "p95", maxDurationMs: 3000 }, deleted: false },
    { id: uuid(2, 2), orgId: orgs[0]!.id, name: "hourly sync", sla: null, deleted: false },
    { id: uuid(3, 2), orgId: orgs[1]!.id, name: "weekly report", sla: { durationTarget: "p99", maxDurationMs: 1200 }, deleted: true }
  ]
  for (const m of monitors) {
    await client.query(
      `insert into monitors (id, org_id, name, schedule_type, schedule_expression, sla, deleted_at)
       values ($1, $2, $3, 'cron', '0 3 * * *', $4, $5)`,
      [m.id, m.orgId, m.name, m.sla === null ? null : JSON.stringify(m.sla), m.deleted ? new Date(now - DAY) : null]
    )
  }
  // Runs up to 200 days back, none within two hours of a query's cut-off (14 d, 30 d, 12 weeks),
  // so that the seconds between seeding and querying cannot move one across.
  const cutoffs = [14 * DAY, 30 * DAY, 84 * DAY]
  const runs: Array<SeedRun> = []
  let n = 0
  for (const monitor of monitors) {
    while (runs.filter((r) => r.monitor === monitor).length < 160) {
      const ago = next() < 0.9 ? HOUR + next() * 90 * DAY : 100 * DAY + next() * 100 * DAY
      if (cutoffs.some((c) => Math.abs(ago - c) < 2 * HOUR)) continue
      const roll = next()
      const status = roll < 0.04 ? "RUNNING" : roll < 0.27 ? "FAIL" : "SUCCESS"
      const durationMs = status === "RUNNING" || next() < 0.05 ? null : 50 + Math.floor(next() * 4000)
      runs.push({
        id: uuid(++n, 3),
        monitor,
        status,
        startedAt: Math.floor(now - ago),
        durationMs,
        exitCode: status === "FAIL" ? [1, 2, 126, 127, 130, 143][Math.floor(next() * 6)]! : status === "SUCCESS" ? 0 : null
      })
    }
  }
  for (const r of runs) {
    await client.query(
      `insert into runs (id, monitor_id, org_id, status, started_at, start_inferred, finished_at, duration_ms, exit_code)
       values ($1, $2, $3, $4, $5, $6, $7, $8, $9)`,
      [
        r.id,
        r.monitor.id,
        r.monitor.orgId,
        r.status,
        new Date(r.startedAt),
        r.durationMs === null,
        r.status === "RUNNING" ? null : new Date(r.startedAt + (r.durationMs ?? 1000)),
        r.durationMs,
        r.exitCode
      ]
    )
  }
  // Incidents over the last 7 months: most resolved (MTTR with milliseconds, to check the rounding
  // down), a few acknowledged or open (one per monitor and type, as the service allows).
  const incidents: Array<SeedIncident> = []
  const types = ["MISSED", "LATE", "FAIL", "ANOMALY"] as const
  const active = new Set<string>()
  for (let i = 0; i < 60; i++) {
    const monitor = monitors[i % monitors.length]!
    const type = types[Math.floor(next() * types.length)]!
    const createdAt = Math.floor(now - 5 * DAY - next() * 200 * DAY)
    const mttrMs = Math.floor(next() * 3 * DAY) + 1
    let status: "OPEN" | "ACKNOWLEDGED" | "RESOLVED" = next() < 0.85 ? "RESOLVED" : next() < 0.5 ? "OPEN" : "ACKNOWLEDGED"
    if (status !== "RESOLVED") {
      if (active.has(`${monitor.id}/${type}`)) status = "RESOLVED"
      else active.add(`${monitor.id}/${type}`)
    }
    const acknowledgedAt = status === "OPEN" || next() < 0.4 ? null : createdAt + Math.floor(mttrMs * next())
    const resolvedAt = status === "RESOLVED" ? createdAt + mttrMs : null
    const rule = type === "ANOMALY" ? "sla" : type === "LATE" ? "maxRuntime" : null
    incidents.push({ id: uuid(i + 1, 4), rule, createdAt, acknowledgedAt, resolvedAt })
    await client.query(
      `insert into incidents (id, org_id, monitor_id, type, severity, status, created_at, acknowledged_at,
                              resolved_at, resolved_by_name, last_occurred_at, details)
       values ($1, $2, $3, $4, 'HIGH', $5, $6, $7, $8, $9, $6, $10)`,
      [
        uuid(i + 1, 4),
        monitor.orgId,
        monitor.id,
        type,
        status,
        new Date(createdAt),
        acknowledgedAt === null ? null : new Date(acknowledgedAt),
        resolvedAt === null ? null : new Date(resolvedAt),
        resolvedAt === null ? null : "system",
        JSON.stringify(rule === null ? {} : { rule })
      ]
    )
  }
  return { monitors, runs, incidents }
}

const hasTimescale = await timescaleAvailable()
const modes = [
  { timescaledb: "off" as const, expectedMode: "postgresql", run: true, note: "" },
  {
    timescaledb: "auto" as const,
    expectedMode: "timescaledb",
    run: hasTimescale,
    note: hasTimescale ? "" : " (skipped: the test server has no TimescaleDB)"
  }
]

describe.each(modes)("analyst SQL of docs/analysts.md, TIMESCALEDB=$timescaledb$note", ({ timescaledb, expectedMode, run }) => {
  const scope = Effect.runSync(Scope.make())
  let client: pg.Client
  let data: Awaited<ReturnType<typeof seed>>
  let now: number

  beforeAll(async () => {
    if (!run) return
    const db = await Effect.runPromise(Scope.extend(makeTestDatabase("jobmon_analysts"), scope))
    const pool = new pg.Pool({ connectionString: db.url, max: 2 })
    try {
      await Effect.runPromise(migrate(pool, { timescaledb }))
      const { mode } = await Effect.runPromise(detectMode(pool))
      expect(mode.startsWith(expectedMode)).toBe(true)
    } finally {
      await pool.end()
    }
    client = new pg.Client({ connectionString: db.url, types })
    await client.connect()
    now = Date.now()
    data = await seed(client, now)
  })

  afterAll(async () => {
    await client?.end()
    await Effect.runPromise(Scope.close(scope, Exit.void))
  })

  const rows = async (name: string) => (await client.query(query(name))).rows

  it.skipIf(!run)("documents exactly the columns each view has, in order", async () => {
    for (const view of ["analyst_runs", "analyst_incidents", "analyst_monitors"]) {
      const section = doc.split(/^##+ /m).find((s) => s.startsWith(`${view}\n`))
      expect(section, `docs/analysts.md has a "### ${view}" section`).toBeDefined()
      const documented = [...section!.matchAll(/^\| `([a-z_]+)` \|/gm)].map((m) => m[1])
      const actual = await client.query(
        `select column_name from information_schema.columns where table_name = $1 order by ordinal_position`,
        [view]
      )
      expect(documented).toEqual(actual.rows.map((r) => r.column_name))
    }
  })

  it.skipIf(!run)("every SQL block of the page runs (statements that change things, in a rolled-back transaction)", async () => {
    expect(blocks.length).toBeGreaterThanOrEqual(6)
    for (const block of blocks) {
      if (block.name !== null) {
        await client.query(block.sql)
        continue
      }
      await client.query("begin")
      try {
        await client.query(block.sql)
      } finally {
        await client.query("rollback")
      }
    }
  })

  it.skipIf(!run)("weekly p95 duration per monitor", async () => {
    const successes = data.runs.filter((r) => r.status === "SUCCESS" && r.durationMs !== null && r.startedAt >= now - 84 * DAY)
    const expected = groupBy(successes, (r) => `${r.monitor.name}|${utcWeek(r.startedAt)}`)
    const actual = await rows("weekly-p95")
    expect(actual.map((r) => `${r.monitor_name}|${r.week}`).sort()).toEqual([...expected.keys()].sort())
    for (const row of actual) {
      const group = expected.get(`${row.monitor_name}|${row.week}`)!
      expect(Number(row.runs)).toBe(group.length)
      expectRounded(row.p95_ms, percentileCont(group.map((r) => r.durationMs!), 0.95), `${row.monitor_name} ${row.week}`)
    }
    expect(actual.length).toBeGreaterThan(20)
  })

  it.skipIf(!run)("failure rate by monitor and hour of day", async () => {
    const finished = data.runs.filter((r) => r.status !== "RUNNING" && r.startedAt >= now - 30 * DAY)
    const expected = groupBy(finished, (r) => `${r.monitor.name}|${new Date(r.startedAt).getUTCHours()}`)
    const actual = await rows("failure-rate-by-hour")
    expect(actual.map((r) => `${r.monitor_name}|${r.hour_utc}`).sort()).toEqual([...expected.keys()].sort())
    for (const row of actual) {
      const group = expected.get(`${row.monitor_name}|${row.hour_utc}`)!
      const failed = group.filter((r) => r.status === "FAIL").length
      expect(Number(row.finished_runs)).toBe(group.length)
      expect(Number(row.failed_runs)).toBe(failed)
      expect(Math.abs(Number(row.failure_rate_pct) - (100 * failed) / group.length)).toBeLessThanOrEqual(0.05 + 1e-9)
    }
    expect(actual.some((r) => Number(r.failed_runs) > 0)).toBe(true)
  })

  it.skipIf(!run)("MTTR by month", async () => {
    const resolved = data.incidents.filter((i) => i.resolvedAt !== null)
    const expected = groupBy(resolved, (i) => utcMonth(i.resolvedAt!))
    const actual = await rows("mttr-by-month")
    expect(actual.map((r) => r.month)).toEqual([...expected.keys()].sort())
    for (const row of actual) {
      const mttrs = expected.get(row.month)!.map((i) => Math.floor((i.resolvedAt! - i.createdAt) / 1000))
      expect(Number(row.resolved)).toBe(mttrs.length)
      expectRounded(row.mean_mttr_seconds, mttrs.reduce((a, b) => a + b, 0) / mttrs.length, `mean ${row.month}`)
      expectRounded(row.median_mttr_seconds, percentileCont(mttrs, 0.5), `median ${row.month}`)
    }
    expect(actual.length).toBeGreaterThanOrEqual(6)
  })

  it.skipIf(!run)("runs that breached the SLA", async () => {
    const breaches = data.runs
      .filter((r) =>
        r.monitor.sla !== null && r.status === "SUCCESS" && r.durationMs !== null &&
        r.durationMs > r.monitor.sla.maxDurationMs && r.startedAt >= now - 30 * DAY
      )
      .sort((a, b) => b.startedAt - a.startedAt)
    const actual = await rows("sla-breaches")
    expect(actual.map((r) => r.run_id)).toEqual(breaches.map((r) => r.id))
    for (const [i, row] of actual.entries()) {
      const run = breaches[i]!
      expect(row.monitor_name).toBe(run.monitor.name)
      expect(Number(row.duration_ms)).toBe(run.durationMs)
      expect(row.sla_duration_target).toBe(run.monitor.sla!.durationTarget)
      expect(Number(row.over_by_ms)).toBe(run.durationMs! - run.monitor.sla!.maxDurationMs)
    }
    expect(actual.length).toBeGreaterThan(5)
  })

  it.skipIf(!run)("daily run counts", async () => {
    const recent = data.runs.filter((r) => r.startedAt >= now - 14 * DAY)
    const expected = groupBy(recent, (r) => `${utcDay(r.startedAt)}|${r.monitor.name}`)
    const actual = await rows("daily-runs")
    expect(actual.map((r) => `${r.day}|${r.monitor_name}`).sort()).toEqual([...expected.keys()].sort())
    for (const row of actual) {
      const group = expected.get(`${row.day}|${row.monitor_name}`)!
      const count = (status: string) => group.filter((r) => r.status === status).length
      expect([row.runs, row.succeeded, row.failed, row.running].map(Number)).toEqual([
        group.length,
        count("SUCCESS"),
        count("FAIL"),
        count("RUNNING")
      ])
    }
  })

  it.skipIf(!run)("analyst_incidents: the rule that fired; time to acknowledge and MTTR in whole seconds, null until they happen", async () => {
    const result = await client.query("select incident_id, rule, time_to_acknowledge_seconds, mttr_seconds from analyst_incidents")
    expect(result.rows.length).toBe(data.incidents.length)
    const seconds = (from: number, to: number | null) => (to === null ? null : String(Math.floor((to - from) / 1000)))
    for (const row of result.rows) {
      const incident = data.incidents.find((i) => i.id === row.incident_id)!
      expect([row.rule, row.time_to_acknowledge_seconds, row.mttr_seconds]).toEqual([
        incident.rule,
        seconds(incident.createdAt, incident.acknowledgedAt),
        seconds(incident.createdAt, incident.resolvedAt)
      ])
    }
  })
})
