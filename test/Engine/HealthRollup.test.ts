import { SqlClient } from "@effect/sql"
import { expect, layer, type Vitest } from "@effect/vitest"
import { Effect, Either, Layer } from "effect"
import { randomUUID } from "node:crypto"
import { Engine } from "../../src/Engine/Engine.js"
import { EngineRepo, type HealthCountsRow } from "../../src/Engine/EngineRepo.js"
import { expectedRunCount, HEALTH_WINDOW_MS, healthScore } from "../../src/Engine/Health.js"
import { HealthRefresh } from "../../src/Engine/HealthRefresh.js"
import type { Severity } from "../../src/Engine/Model.js"
import { type Schedule, validateSchedule } from "../../src/Monitors/Schedule.js"
import { Rollup } from "../../src/Stats/Rollup.js"
import { call, createMonitor, sendPing, TestServer } from "../support/fixture.js"
import { timescaleAvailable } from "../support/timescale.js"

// The health refresh reads its counts from the hourly health rollup where it is current and from raw
// runs elsewhere (src/Engine/HealthRefresh.ts). Here: the same counts and scores as the direct count
// over every run of the window (EngineRepo.healthCounts, the query the refresh ran before), and as
// a reference computed in this file from the runs and incidents themselves, for a month and more
// of several monitors' runs, changed in every way after the rollup was refreshed.

const MINUTE = 60_000
const HOUR = 3_600_000
const DAY = 86_400_000

/** A small deterministic generator, so failures reproduce. */
const prng = (seed: number) => () => {
  seed = (seed * 1_103_515_245 + 12_345) % 2_147_483_648
  return seed / 2_147_483_648
}

type Status = "SUCCESS" | "FAIL" | "RUNNING"
interface Run {
  readonly id: string
  readonly startedAt: number
  readonly status: Status
  readonly durationMs: number | null
}

const every = (expression: string): Schedule => Either.getOrThrow(validateSchedule({ type: "interval", expression }))
const cron = (expression: string): Schedule => Either.getOrThrow(validateSchedule({ type: "cron", expression, timezone: "UTC" }))

/** Leaves a band around the 30-day edge empty, but for the runs placed there on purpose. */
const nearEdge = (now: number, at: number) => Math.abs(at - (now - HEALTH_WINDOW_MS)) < 10 * MINUTE

/** Every `stepMs` from 35 days back to now, some slots missed; what each slot's run is, by `kind`. */
const slots = (now: number, stepMs: number, offsetMs: number, seed: number, kind: (r: () => number, at: number) => Run | undefined) => {
  const random = prng(seed)
  const runs: Array<Run> = []
  for (let at = Math.floor((now - 35 * DAY) / stepMs) * stepMs + offsetMs; at < now - MINUTE; at += stepMs) {
    if (nearEdge(now, at)) continue
    const run = kind(random, at)
    if (run !== undefined) runs.push(run)
  }
  return runs
}

const run = (startedAt: number, status: Status, durationMs: number | null): Run => ({ id: randomUUID(), startedAt, status, durationMs })

const orgOf = (monitorId: string) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const [row] = yield* sql<{ org_id: string }>`select org_id from monitors where id = ${monitorId}`
    return row!.org_id
  }).pipe(Effect.orDie)

/** Runs straight into the table, as the run writer leaves them (the rollup's triggers fire). */
const insertRuns = (monitorId: string, runs: ReadonlyArray<Run>, triggers = true) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const orgId = yield* orgOf(monitorId)
    yield* sql.withTransaction(Effect.gen(function*() {
      if (!triggers) yield* sql`set local session_replication_role = replica`
      yield* sql`
        insert into runs (id, monitor_id, org_id, status, started_at, finished_at, duration_ms)
        select r.id, ${monitorId}, ${orgId}, r.status, r.started_at,
               case when r.status = 'RUNNING' then null else r.started_at + coalesce(r.duration, 0) * interval '1 ms' end,
               r.duration
        from unnest(${runs.map((r) => r.id)}::uuid[], ${runs.map((r) => r.status)}::text[],
                    ${runs.map((r) => new Date(r.startedAt))}::timestamptz[], ${runs.map((r) => r.durationMs)}::int8[])
          as r(id, status, started_at, duration)`
    }))
  }).pipe(Effect.orDie)

const insertIncident = (monitorId: string, type: "LATE" | "MISSED" | "FAIL", status: "OPEN" | "RESOLVED", runId: string | null) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const orgId = yield* orgOf(monitorId)
    const severity = type === "LATE" ? "MEDIUM" : "HIGH"
    yield* sql`
      insert into incidents (org_id, monitor_id, type, severity, status, created_at, last_occurred_at, resolved_at, resolved_by_name, run_id)
      values (${orgId}, ${monitorId}, ${type}, ${severity}, ${status}, now(), now(),
              ${status === "RESOLVED" ? new Date() : null}, ${status === "RESOLVED" ? "system" : null}, ${runId})`
  }).pipe(Effect.orDie)

/** The counts by their definitions (docs/incident-rules.md), from every run and LATE incident. */
const reference = (ids: ReadonlyArray<string>, from: number) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const runs = yield* sql<{ id: string; monitor_id: string; status: Status; started_ms: number; duration_ms: number | null }>`
      select id, monitor_id, status, (extract(epoch from started_at) * 1000)::float8 as started_ms, duration_ms::float8 as duration_ms
      from runs where monitor_id = any(${ids as Array<string>}::uuid[])`
    const late = new Set((yield* sql<{ run_id: string }>`select run_id from incidents where type = 'LATE' and run_id is not null`).map((r) => r.run_id))
    const slas = new Map((yield* sql<{ id: string; max: number | null; has: boolean }>`
      select id, (sla->>'maxDurationMs')::float8 as max, sla is not null as has from monitors where id = any(${ids as Array<string>}::uuid[])`)
      .map((m) => [m.id, m]))
    const rows: Array<HealthCountsRow> = []
    for (const id of ids) {
      const sla = slas.get(id)!
      const inWindow = runs.filter((r) => r.monitor_id === id && r.started_ms > from)
      if (inWindow.length === 0) continue
      const successes = inWindow.filter((r) => r.status === "SUCCESS")
      const timed = successes.filter((r) => r.duration_ms !== null)
      rows.push({
        monitor_id: id,
        received: inWindow.length,
        successful: successes.length,
        on_time: inWindow.filter((r) => !late.has(r.id)).length,
        sla_evaluated: sla.has ? timed.length : 0,
        sla_met: sla.has ? timed.filter((r) => r.duration_ms! <= sla.max!).length : 0
      })
    }
    return rows
  }).pipe(Effect.orDie)

const sorted = (rows: ReadonlyArray<HealthCountsRow>) =>
  [...rows].map((r) => ({ ...r })).sort((a, b) => a.monitor_id.localeCompare(b.monitor_id))

/** The health refresh of the test's service, over its Rollup; the engine's SQL. */
const healthRefresh = HealthRefresh.DefaultWithoutDependencies.pipe(Layer.provide(EngineRepo.Default))

/** The counts three ways at `now`: the refresh's, the direct count's, the reference's. */
const countsThreeWays = (ids: ReadonlyArray<string>, now: number) =>
  Effect.gen(function*() {
    const rolledUp = yield* Effect.flatMap(HealthRefresh, (health) => health.counts(ids, now)).pipe(Effect.provide(healthRefresh))
    const direct = yield* Effect.flatMap(EngineRepo, (repo) => repo.healthCounts(ids, new Date(now - HEALTH_WINDOW_MS))).pipe(
      Effect.provide(EngineRepo.Default)
    )
    const expected = yield* reference(ids, now - HEALTH_WINDOW_MS)
    return { rolledUp: sorted(rolledUp), direct: sorted(direct), expected: sorted(expected) }
  })

const openIncidents = (monitorId: string) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const rows = yield* sql<{ severity: Severity; n: number }>`
      select severity, count(*)::int as n from incidents
      where monitor_id = ${monitorId} and status in ('OPEN', 'ACKNOWLEDGED') group by severity`
    const bySeverity: Record<Severity, number> = { HIGH: 0, MEDIUM: 0, LOW: 0 }
    for (const row of rows) bySeverity[row.severity] = row.n
    return bySeverity
  }).pipe(Effect.orDie)

const scoreOf = (rows: ReadonlyArray<HealthCountsRow>, id: string, expectedRuns: number, open: Record<Severity, number>) => {
  const c = rows.find((r) => r.monitor_id === id)
  return healthScore({
    expectedRuns,
    receivedRuns: c?.received ?? 0,
    successfulRuns: c?.successful ?? 0,
    onTimeRuns: c?.on_time ?? 0,
    slaEvaluatedRuns: c?.sla_evaluated ?? 0,
    slaMetRuns: c?.sla_met ?? 0,
    openIncidents: open
  })
}

const hasTimescale = await timescaleAvailable()

type It = Vitest.MethodsNonLive<Layer.Layer.Success<ReturnType<typeof TestServer>>, true>

const equivalenceTest = (it: It) =>
  it.effect("the rolled-up counts and scores equal a direct count over every run, before and after changes the rollup has not caught up with", () =>
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const rollup = yield* Rollup
      // Nothing falls due while the test runs: the actors stay out of the way until the end.
      const yearly = { schedule: { type: "cron", expression: "0 0 1 1 *", timezone: "UTC" } }
      const a = yield* createMonitor({ ...yearly, name: "every 5 min, SLA 60 s", sla: { durationTarget: "p95", maxDurationMs: 60_000 } })
      const b = yield* createMonitor({ ...yearly, name: "hourly, no SLA" })
      const c = yield* createMonitor({ ...yearly, name: "every 2 min, SLA 5 s", sla: { durationTarget: "p99", maxDurationMs: 5_000 } })
      const d = yield* createMonitor({ ...yearly, name: "never ran" })
      const e = yield* createMonitor({ ...yearly, name: "runs at the window's edge", sla: { durationTarget: "p95", maxDurationMs: 1_000 } })
      const ids = [a.id, b.id, c.id, d.id, e.id]
      const now = Date.now()
      const edge = now - HEALTH_WINDOW_MS

      // A: every 5 minutes; 3 % missed, 5 % failed, 2 % successes without a duration, 4 % over its SLA.
      const runsA = slots(now, 5 * MINUTE, 0, 11, (r, at) => {
        const x = r()
        if (x < 0.03) return undefined
        if (x < 0.08) return run(at, "FAIL", Math.round(1_000 + r() * 30_000))
        if (x < 0.10) return run(at, "SUCCESS", null)
        return run(at, "SUCCESS", x < 0.14 ? Math.round(60_001 + r() * 60_000) : Math.round(5_000 + r() * 50_000))
      })
      runsA.push(run(now - 2 * HOUR - 17 * MINUTE, "RUNNING", null), run(now - 30_000, "RUNNING", null))
      // B: hourly at :07; 5 % missed, 10 % failed, most successes without a duration (plain success pings).
      const runsB = slots(now, HOUR, 7 * MINUTE, 23, (r, at) => {
        const x = r()
        if (x < 0.05) return undefined
        if (x < 0.15) return run(at, "FAIL", null)
        return run(at, "SUCCESS", x < 0.85 ? null : Math.round(r() * 3_000))
      })
      // C: every 2 minutes, 1–3 s; 6 hours ten days back all over its SLA; now and then one over.
      const slowFrom = Math.floor((now - 10 * DAY) / HOUR) * HOUR
      const runsC = slots(now, 2 * MINUTE, 30_000, 37, (r, at) => {
        if (at >= slowFrom && at < slowFrom + 6 * HOUR) return run(at, "SUCCESS", Math.round(8_000 + r() * 1_000))
        const x = r()
        if (x < 0.01) return run(at, "FAIL", 500)
        return run(at, "SUCCESS", x < 0.03 ? 5_001 + Math.round(r() * 2_000) : Math.round(1_000 + r() * 2_000))
      })
      // E: at the edge, to the millisecond: the window (now − 30 d, …) holds the third and later ones;
      // and at the turn of the first whole hour (the next one when that is within 10 minutes, so that
      // the engine's pass at the end, a little later, sees the same runs).
      const nextHour = Math.floor(edge / HOUR) * HOUR + HOUR
      const turn = nextHour - edge < 10 * MINUTE ? nextHour + HOUR : nextHour
      const runsE = [
        run(edge - 1, "SUCCESS", 900),
        run(edge, "SUCCESS", 900),
        run(edge + 1, "SUCCESS", 1_100),
        run(turn, "FAIL", 10),
        run(turn - 1, "SUCCESS", 10),
        run(now - 3 * DAY, "SUCCESS", 999),
        run(now - 3 * DAY + 1, "SUCCESS", 1_000),
        run(now - 3 * DAY + 2, "SUCCESS", 1_001)
      ]
      yield* insertRuns(a.id, runsA)
      yield* insertRuns(b.id, runsB)
      yield* insertRuns(c.id, runsC)
      yield* insertRuns(e.id, runsE)
      expect(runsA.length + runsB.length + runsC.length).toBeGreaterThan(30_000)

      // LATE incidents name some runs (one outside the window); MISSED and FAIL incidents are open.
      const lateOnes = [...runsA.filter((_, i) => i % 97 === 5).slice(0, 40), runsC[3]!, runsE[2]!, runsE[0]!]
      for (const late of lateOnes) {
        const owner = runsA.includes(late) ? a.id : runsC.includes(late) ? c.id : e.id
        yield* insertIncident(owner, "LATE", "RESOLVED", late.id)
      }
      yield* insertIncident(b.id, "FAIL", "OPEN", null)
      yield* insertIncident(d.id, "MISSED", "OPEN", null)
      yield* insertIncident(a.id, "MISSED", "RESOLVED", null)

      // The rollup catches up with all of it.
      yield* rollup.refreshAll
      const [rolled] = yield* sql<{ n: number }>`
        select count(*)::int as n from run_health_hourly where monitor_id = any(${ids}::uuid[])`
      expect(rolled!.n).toBeGreaterThan(2_000)

      const check = Effect.gen(function*() {
        const { direct, expected, rolledUp } = yield* countsThreeWays(ids, now)
        expect(direct).toEqual(expected)
        expect(rolledUp).toEqual(expected)
        // The scores, with the expectations of the schedules these runs follow (created 40 days ago).
        const schedules: Record<string, Schedule> = { [a.id]: every("5m"), [b.id]: cron("7 * * * *"), [c.id]: every("2m"), [d.id]: every("1h"), [e.id]: every("1d") }
        const scores: Record<string, number> = {}
        for (const id of ids) {
          const expectedRuns = expectedRunCount(schedules[id]!, Math.max(edge, now - 40 * DAY), now)
          const open = yield* openIncidents(id)
          scores[id] = scoreOf(rolledUp, id, expectedRuns, open)
          expect(scores[id]).toBe(scoreOf(direct, id, expectedRuns, open))
        }
        return { rolledUp, scores }
      })

      const first = yield* check
      expect(first.scores[a.id]).toBeLessThan(100)
      expect(first.scores[b.id]).toBeLessThan(90)
      expect(first.scores[d.id]).toBe(0)
      // E: edge + 1 ms (LATE, over its SLA), the hour's last millisecond (10 ms) and the next hour's
      // first (FAIL), 999, 1,000 and 1,001 ms; not those at the edge and before.
      expect(first.rolledUp.find((r) => r.monitor_id === e.id)).toEqual({
        monitor_id: e.id, received: 6, successful: 5, on_time: 5, sla_evaluated: 5, sla_met: 3
      })

      // The background refresher may run meanwhile (every minute): then the changes below may be
      // rolled up before they are counted, which only takes from what this shows is read raw.
      const refreshedAt = (yield* rollup.status).lastRefreshAt?.getTime()
      let dirty = 0

      // Changes the rollup has not seen: late runs written into old hours, successes turned into
      // failures, deleted runs, a long run that finished, a LATE incident named since, a new SLA.
      const lateRuns = Array.from({ length: 25 }, (_, i) => run(now - 5 * DAY - i * 17 * HOUR - 123, i % 3 === 0 ? "FAIL" : "SUCCESS", 40_000 + i * 1_000))
      yield* insertRuns(a.id, lateRuns)
      yield* sql`update runs set status = 'FAIL' where id = any(${runsC.filter((_, i) => i % 700 === 1).map((r) => r.id)}::uuid[])`
      yield* sql`delete from runs where id = any(${runsB.filter((_, i) => i % 50 === 2).map((r) => r.id)}::uuid[])`
      yield* sql`update runs set status = 'SUCCESS', duration_ms = 8000000, finished_at = now() where id = ${runsA.at(-2)!.id}`
      yield* insertIncident(c.id, "LATE", "RESOLVED", runsC[5_000]!.id)
      yield* sql`update monitors set sla = jsonb_set(sla, '{maxDurationMs}', '30000') where id = ${a.id}`
      // Runs of the last three hours that no sweep has marked yet (the table's sweep runs a minute late).
      if (rollup.incremental) {
        yield* sql`update run_duration_swept set until = date_trunc('hour', now(), 'UTC') - interval '3 hours'`
        yield* insertRuns(c.id, Array.from({ length: 30 }, (_, i) => run(now - 3 * HOUR + i * 5 * MINUTE, "SUCCESS", 6_000 + i)), false)
        const [marked] = yield* sql<{ n: number }>`
          select count(*)::int as n from run_duration_dirty where monitor_id = any(${ids}::uuid[])`
        dirty = marked!.n
      }
      // Hours that straddle an SLA: read raw.
      const [straddling] = yield* sql<{ n: number }>`
        select count(*)::int as n from run_health_hourly h join monitors m on m.id = h.monitor_id
        where h.monitor_id = any(${ids}::uuid[]) and h.min_ms <= (m.sla->>'maxDurationMs')::bigint
          and h.max_ms > (m.sla->>'maxDurationMs')::bigint`
      expect(straddling!.n).toBeGreaterThan(100)

      const second = yield* check
      expect(second.rolledUp).not.toEqual(first.rolledUp)
      if (rollup.incremental && (yield* rollup.status).lastRefreshAt?.getTime() === refreshedAt) {
        // The table's dirty hours were read raw: 25 late runs' hours, failures, deletions, the long run.
        expect(dirty).toBeGreaterThan(20)
      }

      // Caught up again, and again the same.
      yield* rollup.refreshAll
      const third = yield* check
      expect(third.rolledUp).toEqual(second.rolledUp)

      // The engine's own pass, after news from every monitor (a ping through the API each).
      const engine = yield* Engine
      for (const id of ids) expect((yield* sendPing(id, "success")).status).toBe(200)
      yield* Effect.promise(() => new Promise((resolve) => setTimeout(resolve, 50)))
      yield* engine.idle
      yield* engine.refreshHealth
      const at = Date.now()
      const { direct } = yield* countsThreeWays(ids, at)
      for (const monitor of [a, b, c, d, e]) {
        const stored = (yield* call("GET", `/api/monitors/${monitor.id}`)).body.healthScore
        const schedule = cron("0 0 1 1 *")
        const expectedRuns = expectedRunCount(schedule, Math.max(at - HEALTH_WINDOW_MS, Date.parse(monitor.createdAt)), at)
        expect(stored, monitor.name).toBe(scoreOf(direct, monitor.id, expectedRuns, yield* openIncidents(monitor.id)))
      }
    }), 180_000)

layer(TestServer(), { excludeTestServices: true, timeout: 240_000 })("health scores from the hourly rollup", (it) => {
  equivalenceTest(it)
})

// On a TimescaleDB server, plain mode too (TIMESCALEDB=off): the rollup is the service's table.
// Last in this file: the fixture sets the variable for the rest of this worker's process.
if (hasTimescale) {
  layer(TestServer({}, { TIMESCALEDB: "off" }), { excludeTestServices: true, timeout: 240_000 })(
    "health scores from the hourly rollup (plain PostgreSQL on a TimescaleDB server)",
    (it) => {
      equivalenceTest(it)
    }
  )
}
