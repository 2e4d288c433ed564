import { SqlClient } from "@effect/sql"
import { Effect } from "effect"
import type { IncidentType, Severity } from "../../src/Engine/Model.js"
import { Incidents } from "../../src/Incidents/Incidents.js"

/** The default organization (the bootstrap admin token's) and its admin user. */
export const defaultOrg = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  const [org] = yield* sql<{ id: string }>`select id from organizations where slug = 'default'`
  const [user] = yield* sql<{ id: string; name: string; email: string }>`
    select id, name, email from users where email = 'admin@localhost'`
  return { orgId: org!.id, userId: user!.id, userName: user!.name, userEmail: user!.email }
}).pipe(Effect.orDie)

export interface RaiseOptions {
  readonly type?: IncidentType
  readonly severity?: Severity
  /** Epoch ms; default now. */
  readonly at?: number
  readonly runId?: string | null
  readonly details?: Record<string, unknown>
  readonly orgId?: string
}

/** What the engine will do: raise an incident through the service. */
export const raise = (monitorId: string, options: RaiseOptions = {}) =>
  Effect.gen(function*() {
    const incidents = yield* Incidents
    const orgId = options.orgId ?? (yield* defaultOrg).orgId
    return yield* incidents.raise({
      orgId,
      monitorId,
      type: options.type ?? "FAIL",
      severity: options.severity ?? "HIGH",
      at: options.at ?? Date.now(),
      runId: options.runId ?? null,
      details: options.details ?? { exitCode: 1, durationMs: 1200, output: "boom", expectedDurationMs: 1000 }
    })
  })

/** The stored events of a kind about one incident, oldest first. */
export const eventsAbout = (incidentId: string, type?: string) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    return yield* sql<{ id: string; seq: number; type: string; created_at: Date; data: any; monitor_ids: Array<string>; severity: string | null; org_id: string }>`
      select id, seq, type, created_at, data, monitor_ids, severity, org_id from events
      where data->'incident'->>'id' = ${incidentId}
        ${type === undefined ? sql`` : sql`and type = ${type}`}
      order by seq`
  }).pipe(Effect.orDie)

export const eventsOfMonitor = (monitorId: string, type?: string) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    return yield* sql<{ id: string; seq: number; type: string; created_at: Date; data: any; monitor_ids: Array<string>; severity: string | null; org_id: string }>`
      select id, seq, type, created_at, data, monitor_ids, severity, org_id from events
      where monitor_ids @> array[${monitorId}::uuid]
        ${type === undefined ? sql`` : sql`and type = ${type}`}
      order by seq`
  }).pipe(Effect.orDie)
