import { SqlClient } from "@effect/sql"
import { Effect } from "effect"
import { lockAndCountLive } from "../Db/Quota.js"
import type { SortKey } from "../Domain/Cursor.js"
import { MAX_SUMMARY_TAGS, STATUS_ORDER } from "./Api.js"
import type { ListQuery, SortField } from "./Listing.js"

export interface MonitorRow {
  readonly id: string
  readonly org_id: string
  readonly name: string
  readonly schedule_type: "cron" | "interval"
  readonly schedule_expression: string
  readonly timezone: string
  readonly grace_seconds: number
  readonly max_runtime_seconds: number | null
  readonly max_output_size_kb: number
  readonly capture_output: boolean
  readonly sla: { durationTarget: "p95" | "p99"; maxDurationMs: number } | null
  readonly tags: ReadonlyArray<string>
  readonly auto_resolve: boolean
  readonly failure_threshold: number
  readonly recovery_threshold: number
  readonly paused: boolean
  readonly status: string
  readonly health_score: number
  readonly last_ping_at: Date | null
  readonly next_expected_at: Date | null
  readonly created_at: Date
  readonly updated_at: Date
  /** The ping capability (/ping/<ping_id>); never in events or logs. */
  readonly ping_id: string
  readonly slug: string | null
}

/** The settings a user writes; everything else is derived by the service. */
export interface MonitorSettings {
  readonly name: string
  readonly scheduleType: "cron" | "interval"
  readonly scheduleExpression: string
  readonly timezone: string
  readonly graceSeconds: number
  readonly maxRuntimeSeconds: number | null
  readonly maxOutputSizeKb: number
  readonly captureOutput: boolean
  readonly sla: { durationTarget: "p95" | "p99"; maxDurationMs: number } | null
  readonly tags: ReadonlyArray<string>
  readonly autoResolve: boolean
  readonly failureThreshold: number
  readonly recoveryThreshold: number
  readonly slug: string | null
}

/** A listed monitor and its key in the list's order (what its cursor carries). */
export interface ListedRow extends MonitorRow {
  readonly sort_key: SortKey
}

/** The status the API shows: PAUSED while paused, whatever the engine last judged. */
const EFFECTIVE_STATUS = "(case when paused then 'PAUSED' else status end)"

/** Instants go into cursors as text with microseconds, as PostgreSQL keeps them (a Date would round). */
const instantText = (column: string) => `to_char(${column} at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"')`

/**
 * Each sort's key: the expression rows are ordered by (then by id), whether it may be null, the
 * type a cursor's key is cast to, and what is selected for the cursor when not the expression.
 * No index serves these orders but createdAt's: the page's `total` counts every matching monitor of
 * the organization anyway, and indexes on the columns the engine writes at every ping would cost
 * the ping path more than they save here (docs/performance.md, "Listing monitors").
 */
const SORT_KEYS: Record<SortField, { expr: string; nullable: boolean; cast: string; select?: string }> = {
  createdAt: { expr: "created_at", nullable: false, cast: "timestamptz", select: instantText("created_at") },
  name: { expr: `lower(name) collate "C"`, nullable: false, cast: "text" },
  status: {
    expr: `(case ${EFFECTIVE_STATUS} ${STATUS_ORDER.map((s, i) => `when '${s}' then ${i}`).join(" ")} else ${STATUS_ORDER.length} end)`,
    nullable: false,
    cast: "int"
  },
  lastPingAt: { expr: "last_ping_at", nullable: true, cast: "timestamptz", select: instantText("last_ping_at") },
  nextExpectedAt: { expr: "next_expected_at", nullable: true, cast: "timestamptz", select: instantText("next_expected_at") },
  healthScore: { expr: "health_score", nullable: false, cast: "float8" }
}

const columns = `id, org_id, name, schedule_type, schedule_expression, timezone, grace_seconds,
  max_runtime_seconds, max_output_size_kb, capture_output, sla, tags, auto_resolve, failure_threshold,
  recovery_threshold, paused, status, health_score, last_ping_at, next_expected_at, created_at, updated_at, ping_id, slug`

export class MonitorsRepo extends Effect.Service<MonitorsRepo>()("jobmon/MonitorsRepo", {
  effect: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const cols = sql.literal(columns)

    const insert = (orgId: string, s: MonitorSettings, nextExpectedAt: Date | null, createdAt: Date) =>
      sql<MonitorRow>`
        insert into monitors (org_id, name, schedule_type, schedule_expression, timezone, grace_seconds,
          max_runtime_seconds, max_output_size_kb, capture_output, sla, tags, auto_resolve, failure_threshold,
          recovery_threshold, next_expected_at, created_at, updated_at, slug)
        values (${orgId}, ${s.name}, ${s.scheduleType}, ${s.scheduleExpression}, ${s.timezone}, ${s.graceSeconds},
          ${s.maxRuntimeSeconds}, ${s.maxOutputSizeKb}, ${s.captureOutput},
          ${s.sla === null ? null : JSON.stringify(s.sla)}::jsonb, ${s.tags as Array<string>}::text[],
          ${s.autoResolve}, ${s.failureThreshold}, ${s.recoveryThreshold}, ${nextExpectedAt}, ${createdAt}, ${createdAt}, ${s.slug})
        returning ${cols}`.pipe(Effect.map((rows) => rows[0]!), Effect.orDie, Effect.withSpan("MonitorsRepo.insert"))

    /**
     * In a transaction: waits for the organization's other monitor creations (a transaction-level
     * lock, so a quota check and its insert are one step; src/Db/Quota.ts) and counts its monitors.
     */
    const lockAndCount = (orgId: string) =>
      lockAndCountLive(sql, "monitors", orgId).pipe(Effect.withSpan("MonitorsRepo.lockAndCount"))

    const findById = (orgId: string, id: string) =>
      sql<MonitorRow>`
        select ${cols} from monitors
        where id = ${id} and org_id = ${orgId} and deleted_at is null`.pipe(
        Effect.map((rows) => rows[0]),
        Effect.orDie,
        Effect.withSpan("MonitorsRepo.findById")
      )

    /** The monitors of one page (`limit + 1` rows: one more tells that a next page exists) and the counts. */
    const list = (orgId: string, query: ListQuery) => {
      const key = SORT_KEYS[query.field]
      const expr = sql.literal(key.expr)
      const direction = sql.literal(query.descending ? "desc" : "asc")
      const where = filters(orgId, query)
      const after = query.after === undefined ? undefined : afterBoundary(query.field, query.descending, query.after)
      return Effect.all({
        rows: sql<ListedRow>`
          select ${cols}, ${sql.literal(key.select ?? key.expr)} as sort_key from monitors
          where ${where} ${after === undefined ? sql`` : sql`and ${after}`}
          order by ${expr} ${direction}${sql.literal(key.nullable ? " nulls last" : "")}, id ${direction}
          limit ${query.limit + 1} offset ${query.offset}`,
        counts: sql<{ total: number; up_to_cursor: number }>`
          select count(*)::int as total,
                 ${after === undefined ? sql`0` : sql`count(*) filter (where not ${after})::int`} as up_to_cursor
          from monitors where ${where}`.pipe(Effect.map((rows) => rows[0]!))
      }, { concurrency: 2 }).pipe(Effect.orDie, Effect.withSpan("MonitorsRepo.list"))
    }

    /** The condition every listed monitor meets: the organization's, not deleted, the filters. */
    const filters = (orgId: string, query: ListQuery) =>
      sql.and([
        sql`org_id = ${orgId}`,
        sql`deleted_at is null`,
        ...(query.q === undefined ? [] : [sql`strpos(lower(name), lower(${query.q})) > 0`]),
        ...(query.statuses === undefined ? [] : [sql`${sql.literal(EFFECTIVE_STATUS)} = any(${query.statuses as Array<string>}::text[])`]),
        ...(query.tags === undefined ? [] : [sql`tags @> ${query.tags as Array<string>}::text[]`]),
        ...(query.slug === undefined ? [] : [sql`slug = ${query.slug}`])
      ])

    /**
     * The rows after (key, id) in the order: a row comparison, and for a key that may be null (nulls
     * come last in either direction) the rows without one after every row with one.
     */
    const afterBoundary = (field: SortField, descending: boolean, boundary: { key: SortKey; id: string }) => {
      const { expr, nullable, cast } = SORT_KEYS[field]
      const e = sql.literal(expr)
      const op = sql.literal(descending ? "<" : ">")
      const key = sql`${boundary.key}::${sql.literal(cast)}`
      if (!nullable) return sql`(${e}, id) ${op} (${key}, ${boundary.id}::uuid)`
      return boundary.key === null
        ? sql`(${e} is null and id ${op} ${boundary.id}::uuid)`
        : sql`(${e} is null or (${e}, id) ${op} (${key}, ${boundary.id}::uuid))`
    }

    /** How many of the organization's monitors have each status, and its tags with their counts. */
    const summary = (orgId: string) =>
      Effect.all({
        statuses: sql<{ status: string; count: number }>`
          select ${sql.literal(EFFECTIVE_STATUS)} as status, count(*)::int as count from monitors
          where org_id = ${orgId} and deleted_at is null
          group by 1`,
        tags: sql<{ tag: string; monitors: number }>`
          select tag, count(*)::int as monitors
          from monitors, unnest(tags) as tag
          where org_id = ${orgId} and deleted_at is null
          group by tag
          order by monitors desc, tag collate "C"
          limit ${MAX_SUMMARY_TAGS}`
      }, { concurrency: 2 }).pipe(Effect.orDie, Effect.withSpan("MonitorsRepo.summary"))

    const update = (orgId: string, id: string, s: MonitorSettings, nextExpectedAt: Date | null, now: Date) =>
      sql<MonitorRow>`
        update monitors set name = ${s.name}, schedule_type = ${s.scheduleType},
          schedule_expression = ${s.scheduleExpression}, timezone = ${s.timezone}, grace_seconds = ${s.graceSeconds},
          max_runtime_seconds = ${s.maxRuntimeSeconds}, max_output_size_kb = ${s.maxOutputSizeKb},
          capture_output = ${s.captureOutput}, sla = ${s.sla === null ? null : JSON.stringify(s.sla)}::jsonb,
          tags = ${s.tags as Array<string>}::text[], auto_resolve = ${s.autoResolve},
          failure_threshold = ${s.failureThreshold}, recovery_threshold = ${s.recoveryThreshold},
          slug = ${s.slug}, next_expected_at = ${nextExpectedAt}, updated_at = ${now}
        where id = ${id} and org_id = ${orgId} and deleted_at is null
        returning ${cols}`.pipe(Effect.map((rows) => rows[0]), Effect.orDie, Effect.withSpan("MonitorsRepo.update"))

    const setPaused = (orgId: string, id: string, paused: boolean, nextExpectedAt: Date | null, now: Date) =>
      sql<MonitorRow>`
        update monitors set paused = ${paused}, updated_at = ${now},
          next_expected_at = case when ${paused} then next_expected_at else ${nextExpectedAt} end,
          -- Resumed: the status the last run implies, until the engine judges again.
          status = case when ${paused} or status <> 'PAUSED' then status
                        when last_run_status = 'SUCCESS' then 'OK'
                        when last_run_status = 'FAIL' then 'FAILING'
                        else 'NEW' end
        where id = ${id} and org_id = ${orgId} and deleted_at is null
        returning ${cols}`.pipe(Effect.map((rows) => rows[0]), Effect.orDie, Effect.withSpan("MonitorsRepo.setPaused"))

    const softDelete = (orgId: string, id: string, now: Date) =>
      sql<{ id: string }>`
        update monitors set deleted_at = ${now}
        where id = ${id} and org_id = ${orgId} and deleted_at is null
        returning id`.pipe(Effect.map((rows) => rows.length > 0), Effect.orDie, Effect.withSpan("MonitorsRepo.softDelete"))

    /** A new ping capability for the monitor: the old /ping/<id> answers 404 from now on. */
    const rotatePingId = (orgId: string, id: string, now: Date) =>
      sql<MonitorRow>`
        update monitors set ping_id = gen_random_uuid(), updated_at = ${now}
        where id = ${id} and org_id = ${orgId} and deleted_at is null
        returning ${cols}`.pipe(Effect.map((rows) => rows[0]), Effect.orDie, Effect.withSpan("MonitorsRepo.rotatePingId"))

    /** The organization's monitor with this slug (at most one: a unique index). */
    const findBySlug = (orgId: string, slug: string) =>
      sql<MonitorRow>`
        select ${cols} from monitors
        where org_id = ${orgId} and slug = ${slug} and deleted_at is null`.pipe(
        Effect.map((rows) => rows[0]),
        Effect.orDie,
        Effect.withSpan("MonitorsRepo.findBySlug")
      )

    return { insert, lockAndCount, findById, findBySlug, list, summary, update, setPaused, softDelete, rotatePingId } as const
  })
}) {}
