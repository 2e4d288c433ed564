import { expect, layer } from "@effect/vitest"
import { SqlClient } from "@effect/sql"
import { Effect } from "effect"
import { withoutStatementTimeout } from "../../src/Db/StatementTimeout.js"
import { type EventQuery, listStatement as eventsStatement } from "../../src/Events/EventsRepo.js"
import { type IncidentFilter, listStatement as incidentsStatement } from "../../src/Incidents/IncidentsRepo.js"
import { call, createMonitor, createOrganization, createToken, TestServer, validMonitor } from "../support/fixture.js"
import { defaultOrg, raise } from "../Incidents/support.js"

/**
 * A read token's event and incident queries must cost what its own organization holds, not what
 * the others hold (docs/events.md, "Indexes"): with 200,000 rows of another organization in
 * `ping_events`, `events` and `incidents` (and 20,000 active incidents), every variant the API
 * allows is an index range scan bounded by the caller's organization or monitor.
 */

const OTHER_ROWS = 200_000

interface PlanNode {
  readonly "Node Type": string
  readonly "Relation Name"?: string
  readonly "Index Name"?: string
  readonly "Index Cond"?: string
  readonly "Actual Rows"?: number
  readonly "Actual Loops"?: number
  readonly "Rows Removed by Filter"?: number
  readonly "Rows Removed by Index Recheck"?: number
  readonly Plans?: ReadonlyArray<PlanNode>
}

const scansOf = (node: PlanNode): Array<PlanNode> => [
  ...(node["Relation Name"] !== undefined || node["Index Name"] !== undefined ? [node] : []),
  ...(node.Plans ?? []).flatMap(scansOf)
]

/** The scans of a statement's plan, run by PostgreSQL with these parameters (EXPLAIN ANALYZE). */
const explain = (statement: ReturnType<typeof eventsStatement> | ReturnType<typeof incidentsStatement>) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const [row] = yield* sql<{ "QUERY PLAN": ReadonlyArray<{ Plan: PlanNode }> }>`explain (analyze, format json) ${statement}`
    const plan = row!["QUERY PLAN"][0]!.Plan
    return { plan, scans: scansOf(plan) }
  }).pipe(Effect.orDie)

/** The rows a scan node read: those it returned and those it read and dropped, over all its loops. */
const rowsRead = (scan: PlanNode) =>
  ((scan["Actual Rows"] ?? 0) + (scan["Rows Removed by Filter"] ?? 0) + (scan["Rows Removed by Index Recheck"] ?? 0)) *
  (scan["Actual Loops"] ?? 1)

/**
 * No sequential scan. For the quiet organization (`strict`), every scan is a range scan of one of
 * `allowed` whose condition names one of `bounds`, and reads no more than a page of rows: the other
 * organization's rows are never read. For the noisy one, a scan that is not bounded by one of
 * `bounds` (the planner may walk `seq` when nearly every row is the caller's) stops after a few
 * pages' worth of rows.
 */
const expectBoundedScans = (
  label: string,
  result: { plan: PlanNode; scans: ReadonlyArray<PlanNode> },
  limit: number,
  bounds: ReadonlyArray<string>,
  strict?: { readonly allowed: ReadonlyArray<string> }
) => {
  const described = JSON.stringify(result.plan)
  expect(result.scans.length, `${label}: ${described}`).toBeGreaterThan(0)
  for (const scan of result.scans) {
    expect(scan["Node Type"], `${label}: ${described}`).not.toBe("Seq Scan")
    // A bitmap heap scan reads what its bitmap index scans (checked on their own) found.
    if (scan["Node Type"] === "Bitmap Heap Scan") continue
    const bounded = bounds.some((column) => (scan["Index Cond"] ?? "").includes(column))
    if (strict !== undefined) {
      expect(strict.allowed, `${label}: ${described}`).toContain(scan["Index Name"])
      expect(bounded, `${label}: ${described}`).toBe(true)
      expect(rowsRead(scan), `${label}: ${described}`).toBeLessThanOrEqual(limit)
    } else if (!bounded) {
      expect(rowsRead(scan), `${label}: ${described}`).toBeLessThanOrEqual(3 * limit)
    }
  }
}

layer(TestServer(), { excludeTestServices: true, timeout: 300_000 })("event and incident queries", (it) => {
  it.effect("with 200,000 rows of another organization, every events and incidents query is an index range scan bounded by the caller", () =>
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const { orgId } = yield* defaultOrg
      const noisy = yield* createOrganization("noisy")
      const noisyMonitor = yield* call("POST", "/api/monitors", { token: noisy.token, body: validMonitor({ name: "noisy" }) })
      expect(noisyMonitor.status).toBe(201)
      const noisyMonitorId: string = noisyMonitor.body.id

      // Set-up writes a lot at once: without the service's statement timeout.
      yield* withoutStatementTimeout(Effect.gen(function*() {
        yield* sql`
          insert into ping_events (org_id, monitor_id, run_id, status, at)
          select ${noisy.orgId}::uuid, ${noisyMonitorId}::uuid, gen_random_uuid(), 'SUCCESS', now() - i * interval '1 second'
          from generate_series(1, ${OTHER_ROWS}) as i`
        yield* sql`
          insert into events (org_id, type, created_at, data, monitor_ids)
          select ${noisy.orgId}::uuid, case when i % 2 = 0 then 'monitor.updated' else 'incident.opened' end,
                 now() - i * interval '1 second', '{}'::jsonb, array[${noisyMonitorId}::uuid]
          from generate_series(1, ${OTHER_ROWS}) as i`
        yield* sql`
          insert into incidents (org_id, monitor_id, type, severity, status, created_at, last_occurred_at, resolved_at, resolved_by_name)
          select ${noisy.orgId}::uuid, ${noisyMonitorId}::uuid, 'FAIL', 'HIGH', 'RESOLVED',
                 now() - i * interval '1 minute', now() - i * interval '1 minute', now() - i * interval '1 minute', 'system'
          from generate_series(1, ${OTHER_ROWS}) as i`
        // …and 20,000 active ones, on 5,000 monitors (one active incident per monitor and type).
        yield* sql`
          with m as (
            insert into monitors (org_id, name, schedule_type, schedule_expression, deleted_at)
            select ${noisy.orgId}::uuid, 'noisy ' || i, 'interval', '1h', now() from generate_series(1, 5000) as i
            returning id
          )
          insert into incidents (org_id, monitor_id, type, severity, status, created_at, last_occurred_at)
          select ${noisy.orgId}::uuid, m.id, t.type, 'HIGH', 'OPEN', now(), now()
          from m cross join unnest(array['MISSED', 'LATE', 'FAIL', 'ANOMALY']) as t(type)`
      }))

      // The caller's own organization: a few pings (as the run writer records them while a webhook
      // subscribes to ping.received), events and an incident.
      const mine = yield* createMonitor({ name: "mine" })
      for (const status of ["RUNNING", "SUCCESS", "RUNNING", "FAIL"]) {
        yield* sql`
          insert into ping_events (org_id, monitor_id, run_id, status, at)
          values (${orgId}, ${mine.id}, gen_random_uuid(), ${status}, now())`
      }
      const { incident } = yield* raise(mine.id)
      yield* sql`analyze ping_events`
      yield* sql`analyze events`
      yield* sql`analyze incidents`

      // What a read token sees: its own rows only, newest first.
      const read = yield* createToken("read")
      const pings = yield* call("GET", "/api/events?type=ping.received&limit=10", { token: read.token })
      expect(pings.status).toBe(200)
      expect(pings.body.events.map((e: any) => e.data.ping.kind)).toEqual(["fail", "start", "success", "start"])
      const ofMonitor = yield* call("GET", `/api/events?type=ping.received&monitorId=${mine.id}&limit=2`, { token: read.token })
      expect(ofMonitor.body.events.map((e: any) => e.data.ping.kind)).toEqual(["fail", "start"])
      const older = yield* call("GET", `/api/events?type=ping.received&monitorId=${mine.id}&before=${ofMonitor.body.events[1].seq}`, { token: read.token })
      expect(older.body.events.map((e: any) => e.data.ping.kind)).toEqual(["success", "start"])
      const incidents = yield* call("GET", "/api/incidents", { token: read.token })
      expect(incidents.body.incidents.map((i: any) => i.id)).toEqual([incident.id])

      // Every variant of GET /api/events, for the quiet and for the noisy organization.
      const seqs = yield* sql<{ seq: number }>`select max(seq) as seq from ping_events`
      const middle = Math.floor(seqs[0]!.seq / 2)
      for (const [who, org, monitorId] of [["mine", orgId, mine.id], ["noisy", noisy.orgId, noisyMonitorId]] as const) {
        for (const type of [undefined, "ping.received", "incident.opened"] as const) {
          for (const monitor of [undefined, monitorId]) {
            for (const page of [{}, { after: middle }, { before: middle }, { after: 1, before: middle }]) {
              const q: EventQuery = { orgId: org, type, monitorId: monitor, limit: 100, after: undefined, before: undefined, ...page }
              const pingQuery = type === "ping.received"
              expectBoundedScans(
                `events ${who} ${JSON.stringify({ type, monitor: monitor !== undefined, ...page })}`,
                yield* explain(eventsStatement(sql, q)),
                q.limit,
                pingQuery ? ["org_id", "monitor_id"] : ["org_id"],
                who === "noisy" ? undefined : pingQuery
                  ? { allowed: ["ping_events_org_seq_idx", "ping_events_monitor_seq_idx"] }
                  : { allowed: ["events_org_seq_idx", "events_org_type_seq_idx"] }
              )
            }
          }
        }
      }

      // Every variant of GET /api/incidents.
      const cursor = { createdAt: new Date(Date.now() - 60 * 60_000), id: "ffffffff-ffff-4fff-bfff-ffffffffffff" }
      for (const [who, org, monitorId] of [["mine", orgId, mine.id], ["noisy", noisy.orgId, noisyMonitorId]] as const) {
        for (const status of [undefined, "OPEN", "RESOLVED"] as const) {
          for (const type of [undefined, "FAIL"] as const) {
            for (const monitor of [undefined, monitorId]) {
              for (const at of [undefined, cursor]) {
                const f: IncidentFilter = { orgId: org, status, type, monitorId: monitor, cursor: at, limit: 101 }
                expectBoundedScans(
                  `incidents ${who} ${JSON.stringify({ status, type, monitor: monitor !== undefined, cursor: at !== undefined })}`,
                  yield* explain(incidentsStatement(sql, f)),
                  f.limit,
                  ["org_id", "monitor_id"],
                  who === "noisy" ? undefined : {
                    allowed: ["incidents_org_list_idx", "incidents_org_status_idx", "incidents_monitor_idx", "incidents_one_active_idx"]
                  }
                )
              }
            }
          }
        }
      }
    }), { timeout: 300_000 })
})
