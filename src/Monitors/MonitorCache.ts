import { SqlClient } from "@effect/sql"
import { Effect, Runtime } from "effect"
import { isUuid } from "../Domain/Ids.js"

/**
 * What the ping hot path needs to know about a monitor, in memory: loaded at start-up, kept
 * current by the Monitors service on this instance, and loaded on a miss (a monitor created by
 * another instance).
 */
export interface MonitorInfo {
  readonly id: string
  readonly orgId: string
  readonly captureOutput: boolean
  readonly maxOutputSizeKb: number
}

interface InfoRow {
  readonly id: string
  readonly org_id: string
  readonly capture_output: boolean
  readonly max_output_size_kb: number
}

const toInfo = (row: InfoRow): MonitorInfo => ({
  id: row.id,
  orgId: row.org_id,
  captureOutput: row.capture_output,
  maxOutputSizeKb: row.max_output_size_kb
})

export class MonitorCache extends Effect.Service<MonitorCache>()("jobmon/MonitorCache", {
  scoped: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const runtime = yield* Effect.runtime<never>()
    const known = new Map<string, MonitorInfo>()
    const rows = yield* sql<InfoRow>`
      select id, org_id, capture_output, max_output_size_kb from monitors where deleted_at is null`.pipe(Effect.orDie)
    for (const row of rows) known.set(row.id, toInfo(row))

    const loadEffect = (id: string) =>
      sql<InfoRow>`
        select id, org_id, capture_output, max_output_size_kb from monitors
        where id = ${id} and deleted_at is null`.pipe(
        Effect.map((rows) => (rows[0] === undefined ? undefined : toInfo(rows[0]))),
        Effect.tap((info) => Effect.sync(() => info !== undefined && known.set(info.id, info))),
        Effect.orDie
      )

    /** Synchronous look-up; `undefined` means "not in memory", not "does not exist". */
    const get = (id: string): MonitorInfo | undefined => known.get(id)

    /** Look-up that falls back to the database; calls back with undefined when there is no such monitor. */
    const lookup = (id: string, callback: (info: MonitorInfo | undefined, error?: unknown) => void): void => {
      const hit = known.get(id)
      if (hit !== undefined) return callback(hit)
      if (!isUuid(id)) return callback(undefined)
      Runtime.runCallback(runtime)(loadEffect(id), {
        onExit: (exit) => (exit._tag === "Success" ? callback(exit.value) : callback(undefined, exit.cause))
      })
    }

    const put = (row: InfoRow) => Effect.sync(() => known.set(row.id, toInfo(row)))
    const remove = (id: string) => Effect.sync(() => known.delete(id))

    return { get, lookup, put, remove, size: () => known.size } as const
  })
}) {}
