import { SqlClient } from "@effect/sql"
import { Effect } from "effect"

export interface EventRow {
  readonly id: string
  readonly seq: number
  readonly org_id: string
  readonly type: string
  readonly created_at: Date
  readonly data: Record<string, unknown>
  readonly monitor_ids: ReadonlyArray<string>
  readonly severity: string | null
}

export interface NewEventRow {
  readonly orgId: string
  readonly type: string
  readonly createdAt: Date
  readonly data: Record<string, unknown>
  readonly monitorIds: ReadonlyArray<string>
  readonly severity: string | null
}

export interface EventQuery {
  readonly orgId: string
  /** Events with seq > after, oldest first; without it, newest first. */
  readonly after: number | undefined
  readonly before: number | undefined
  readonly limit: number
  readonly type: string | undefined
  readonly monitorId: string | undefined
}

/**
 * A key of pg_advisory_xact_lock taken by every event insert and held until its transaction ends,
 * so `seq` values become visible in the order they were drawn (no gap a reader could skip past).
 * Other keys in use: 7_316_402_113 (migrator), 7_316_402_114 (bootstrap), 7_316_402_115 (storage
 * policies), 7_316_402_122 (the rollup sweep, src/Stats/StatsRepo.ts), 7_316_402_123 (maintenance
 * writes, src/Maintenance/MaintenanceRepo.ts), 7_316_402_124 (creating @effect/cluster's tables,
 * src/Cluster/Cluster.ts), 7_316_402_131 (the continuous aggregate refresh,
 * src/Stats/StatsRepo.ts).
 */
export const EVENTS_LOCK_KEY = 7_316_402_120

/** The same for `ping_events` (src/Pings/RunWriter.ts): their own lock, so pings never wait for domain events. */
export const PING_EVENTS_LOCK_KEY = 7_316_402_121

const columns = "id, seq, org_id, type, created_at, data, monitor_ids, severity"

export class EventsRepo extends Effect.Service<EventsRepo>()("jobmon/EventsRepo", {
  effect: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const cols = sql.literal(columns)

    /**
     * One statement: the advisory lock first (the CTE is scanned before any row is projected, so
     * before `seq` is drawn), then the rows, in input order. It runs on the ambient transaction's
     * connection when there is one, and is a transaction of its own otherwise.
     */
    const insertMany = (rows: ReadonlyArray<NewEventRow>) =>
      rows.length === 0
        ? Effect.succeed([] as ReadonlyArray<EventRow>)
        : sql<EventRow>`
          with lock as (select pg_advisory_xact_lock(${sql.literal(String(EVENTS_LOCK_KEY))}))
          insert into events (org_id, type, created_at, data, monitor_ids, severity)
          select t.org_id, t.type, t.created_at, t.data, t.monitor_ids, t.severity
          from lock, rows from (jsonb_to_recordset(${
          JSON.stringify(rows.map((r) => ({
            org_id: r.orgId,
            type: r.type,
            created_at: r.createdAt.toISOString(),
            data: r.data,
            monitor_ids: r.monitorIds,
            severity: r.severity
          })))
        }::jsonb) as (org_id uuid, type text, created_at timestamptz, data jsonb, monitor_ids uuid[], severity text))
            with ordinality as t(org_id, type, created_at, data, monitor_ids, severity, ord)
          order by t.ord
          returning ${cols}`.pipe(
          Effect.map((inserted) => [...inserted].sort((a, b) => a.seq - b.seq)),
          Effect.orDie,
          Effect.withSpan("EventsRepo.insertMany")
        )

    const list = (q: EventQuery) => listStatement(sql, q).pipe(Effect.orDie, Effect.withSpan("EventsRepo.list"))

    return { insertMany, list } as const
  })
}) {}

/**
 * The statement of EventsRepo.list (exported so that a test can EXPLAIN it). ping.received events
 * live in `ping_events` (sql/0011_ping_events.sql) with a seq of their own: they are listed when
 * asked for by type, never mixed into the other events' stream. Every variant is an index range
 * scan within the organization (sql/0015_event_query_indexes.sql): `(org_id, seq)`,
 * `(org_id, type, seq)` on `events`, and `(monitor_id, seq)` for a monitor's pings.
 */
export const listStatement = (sql: SqlClient.SqlClient, q: EventQuery) => {
  const pings = q.type === "ping.received"
  return sql<EventRow>`
    select ${sql.literal(columns)} from ${pings ? sql`ping_received_events` : sql`events`}
    where org_id = ${q.orgId}
      ${q.after === undefined ? sql`` : sql`and seq > ${q.after}`}
      ${q.before === undefined ? sql`` : sql`and seq < ${q.before}`}
      ${q.type === undefined || pings ? sql`` : sql`and type = ${q.type}`}
      ${
    q.monitorId === undefined
      ? sql``
      : pings
      ? sql`and monitor_id = ${q.monitorId}::uuid`
      : sql`and monitor_ids @> array[${q.monitorId}::uuid]`
  }
    order by seq ${sql.literal(q.after === undefined ? "desc" : "asc")}
    limit ${q.limit}`
}
