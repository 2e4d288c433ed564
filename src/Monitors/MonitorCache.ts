import { SqlClient } from "@effect/sql"
import { Effect, Runtime } from "effect"
import { isUuid } from "../Domain/Ids.js"

/**
 * What the ping hot path needs to know about a monitor, in memory: loaded at start-up, kept
 * current by the Monitors service on this instance, and loaded on a miss (a monitor created by
 * another instance). Found by id, by ping id (the capability of /ping/<pingId>) and by slug.
 */
export interface MonitorInfo {
  readonly id: string
  readonly orgId: string
  readonly captureOutput: boolean
  readonly maxOutputSizeKb: number
  /** The ping capability: never logged. */
  readonly pingId: string
  readonly slug: string | null
}

interface InfoRow {
  readonly id: string
  readonly org_id: string
  readonly capture_output: boolean
  readonly max_output_size_kb: number
  readonly ping_id: string
  readonly slug: string | null
}

const toInfo = (row: InfoRow): MonitorInfo => ({
  id: row.id,
  orgId: row.org_id,
  captureOutput: row.capture_output,
  maxOutputSizeKb: row.max_output_size_kb,
  pingId: row.ping_id,
  slug: row.slug
})

const slugKey = (orgId: string, slug: string) => `${orgId}/${slug}`

/** What a slug may be (src/Monitors/Api.ts, SLUG_PATTERN): anything else is no monitor's. */
const SLUG = /^[a-z0-9][a-z0-9_-]{0,99}$/

export class MonitorCache extends Effect.Service<MonitorCache>()("jobmon/MonitorCache", {
  scoped: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const runtime = yield* Effect.runtime<never>()
    const known = new Map<string, MonitorInfo>()
    const byPingId = new Map<string, MonitorInfo>()
    const bySlug = new Map<string, MonitorInfo>()

    const forget = (id: string) => {
      const before = known.get(id)
      if (before === undefined) return
      known.delete(id)
      if (byPingId.get(before.pingId) === before) byPingId.delete(before.pingId)
      if (before.slug !== null && bySlug.get(slugKey(before.orgId, before.slug)) === before) bySlug.delete(slugKey(before.orgId, before.slug))
    }
    const remember = (info: MonitorInfo) => {
      forget(info.id)
      known.set(info.id, info)
      byPingId.set(info.pingId, info)
      if (info.slug !== null) bySlug.set(slugKey(info.orgId, info.slug), info)
      return info
    }

    const rows = yield* sql<InfoRow>`
      select id, org_id, capture_output, max_output_size_kb, ping_id, slug from monitors where deleted_at is null`.pipe(Effect.orDie)
    for (const row of rows) remember(toInfo(row))

    const loadWhere = (where: "id" | "ping" | "slug", a: string, b?: string) =>
      (where === "id"
        ? sql<InfoRow>`select id, org_id, capture_output, max_output_size_kb, ping_id, slug from monitors
            where id = ${a} and deleted_at is null`
        : where === "ping"
        ? sql<InfoRow>`select id, org_id, capture_output, max_output_size_kb, ping_id, slug from monitors
            where ping_id = ${a} and deleted_at is null`
        : sql<InfoRow>`select id, org_id, capture_output, max_output_size_kb, ping_id, slug from monitors
            where org_id = ${a} and slug = ${b!} and deleted_at is null`).pipe(
          Effect.map((rows) => (rows[0] === undefined ? undefined : remember(toInfo(rows[0])))),
          Effect.orDie
        )

    const runLoad = (
      effect: Effect.Effect<MonitorInfo | undefined>,
      callback: (info: MonitorInfo | undefined, error?: unknown) => void
    ) =>
      Runtime.runCallback(runtime)(effect, {
        onExit: (exit) => (exit._tag === "Success" ? callback(exit.value) : callback(undefined, exit.cause))
      })

    /** Synchronous look-up; `undefined` means "not in memory", not "does not exist". */
    const get = (id: string): MonitorInfo | undefined => known.get(id)

    /** Look-up that falls back to the database; calls back with undefined when there is no such monitor. */
    const lookup = (id: string, callback: (info: MonitorInfo | undefined, error?: unknown) => void): void => {
      const hit = known.get(id)
      if (hit !== undefined) return callback(hit)
      if (!isUuid(id)) return callback(undefined)
      runLoad(loadWhere("id", id), callback)
    }

    /** The monitor whose ping URL is /ping/<pingId> (a UUID, any letter case). */
    const lookupByPingId = (pingId: string, callback: (info: MonitorInfo | undefined, error?: unknown) => void): void => {
      const hit = byPingId.get(pingId)
      if (hit !== undefined) return callback(hit)
      if (!isUuid(pingId)) return callback(undefined)
      const lower = pingId.toLowerCase()
      if (lower !== pingId) return lookupByPingId(lower, callback)
      runLoad(loadWhere("ping", pingId), callback)
    }

    /** The organization's monitor with this slug. */
    const lookupBySlug = (orgId: string, slug: string, callback: (info: MonitorInfo | undefined, error?: unknown) => void): void => {
      const hit = bySlug.get(slugKey(orgId, slug))
      if (hit !== undefined) return callback(hit)
      if (!SLUG.test(slug)) return callback(undefined)
      runLoad(loadWhere("slug", orgId, slug), callback)
    }

    const put = (row: InfoRow) => Effect.sync(() => void remember(toInfo(row)))
    const remove = (id: string) => Effect.sync(() => forget(id))

    return { get, lookup, lookupByPingId, lookupBySlug, put, remove, size: () => known.size } as const
  })
}) {}
