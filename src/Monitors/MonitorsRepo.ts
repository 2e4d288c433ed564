import { SqlClient } from "@effect/sql"
import { Effect } from "effect"
import { lockAndCountLive } from "../Db/Quota.js"

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
  readonly paused: boolean
  readonly status: string
  readonly health_score: number
  readonly last_ping_at: Date | null
  readonly next_expected_at: Date | null
  readonly created_at: Date
  readonly updated_at: Date
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
}

const columns = `id, org_id, name, schedule_type, schedule_expression, timezone, grace_seconds,
  max_runtime_seconds, max_output_size_kb, capture_output, sla, tags, auto_resolve, paused, status,
  health_score, last_ping_at, next_expected_at, created_at, updated_at`

export class MonitorsRepo extends Effect.Service<MonitorsRepo>()("jobmon/MonitorsRepo", {
  effect: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const cols = sql.literal(columns)

    const insert = (orgId: string, s: MonitorSettings, nextExpectedAt: Date | null, createdAt: Date) =>
      sql<MonitorRow>`
        insert into monitors (org_id, name, schedule_type, schedule_expression, timezone, grace_seconds,
          max_runtime_seconds, max_output_size_kb, capture_output, sla, tags, auto_resolve, next_expected_at,
          created_at, updated_at)
        values (${orgId}, ${s.name}, ${s.scheduleType}, ${s.scheduleExpression}, ${s.timezone}, ${s.graceSeconds},
          ${s.maxRuntimeSeconds}, ${s.maxOutputSizeKb}, ${s.captureOutput},
          ${s.sla === null ? null : JSON.stringify(s.sla)}::jsonb, ${s.tags as Array<string>}::text[],
          ${s.autoResolve}, ${nextExpectedAt}, ${createdAt}, ${createdAt})
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

    const page = (orgId: string, offset: number, limit: number) =>
      Effect.all({
        rows: sql<MonitorRow>`
          select ${cols} from monitors
          where org_id = ${orgId} and deleted_at is null
          order by created_at, id
          limit ${limit} offset ${offset}`,
        total: sql<{ count: number }>`
          select count(*)::int as count from monitors where org_id = ${orgId} and deleted_at is null`.pipe(
          Effect.map((rows) => rows[0]?.count ?? 0)
        )
      }, { concurrency: 2 }).pipe(Effect.orDie, Effect.withSpan("MonitorsRepo.page"))

    const update = (orgId: string, id: string, s: MonitorSettings, nextExpectedAt: Date | null, now: Date) =>
      sql<MonitorRow>`
        update monitors set name = ${s.name}, schedule_type = ${s.scheduleType},
          schedule_expression = ${s.scheduleExpression}, timezone = ${s.timezone}, grace_seconds = ${s.graceSeconds},
          max_runtime_seconds = ${s.maxRuntimeSeconds}, max_output_size_kb = ${s.maxOutputSizeKb},
          capture_output = ${s.captureOutput}, sla = ${s.sla === null ? null : JSON.stringify(s.sla)}::jsonb,
          tags = ${s.tags as Array<string>}::text[], auto_resolve = ${s.autoResolve},
          next_expected_at = ${nextExpectedAt}, updated_at = ${now}
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

    return { insert, lockAndCount, findById, page, update, setPaused, softDelete } as const
  })
}) {}
