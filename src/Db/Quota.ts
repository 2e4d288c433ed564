import type { SqlClient } from "@effect/sql"
import { Effect } from "effect"

/**
 * Per-organization quotas on live rows (MAX_MONITORS_PER_ORG, MAX_MAINTENANCE_WINDOWS_PER_ORG): the
 * count and the insert that follows it must be one step, also across instances, or two creations at
 * once could both pass the check.
 *
 * The first key of the two-key advisory lock that serialises an organization's creations, one per
 * table (the second key is the organization id's hash; two-key locks never meet the one-key locks
 * listed in src/Events/EventsRepo.ts).
 */
const QUOTA_LOCK_CLASS = {
  monitors: 731_640_201,
  maintenance_windows: 731_640_202
} as const

export type QuotaTable = keyof typeof QUOTA_LOCK_CLASS

/**
 * In a transaction: waits for the organization's other creations in `table` (the lock is held until
 * the transaction ends), then counts its live rows there (`deleted_at is null`).
 */
export const lockAndCountLive = (sql: SqlClient.SqlClient, table: QuotaTable, orgId: string): Effect.Effect<number> =>
  Effect.zipRight(
    sql`select pg_advisory_xact_lock(${QUOTA_LOCK_CLASS[table]}::int4, hashtext(${orgId}))`,
    sql<{ n: number }>`select count(*)::int as n from ${sql(table)} where org_id = ${orgId} and deleted_at is null`
  ).pipe(Effect.map((rows) => rows[0]!.n), Effect.orDie)
