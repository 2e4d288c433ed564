import { SqlClient } from "@effect/sql"
import { Effect } from "effect"
import type { IncidentStatus, IncidentType, Severity } from "../Engine/Model.js"

export interface IncidentRow {
  readonly id: string
  readonly org_id: string
  readonly monitor_id: string
  readonly type: IncidentType
  readonly severity: Severity
  readonly status: IncidentStatus
  readonly created_at: Date
  readonly acknowledged_at: Date | null
  readonly acknowledged_by: string | null
  readonly acknowledged_by_name: string | null
  readonly acknowledged_by_email: string | null
  readonly resolved_at: Date | null
  readonly resolved_by: string | null
  readonly resolved_by_name: string | null
  readonly occurrences: number
  readonly last_occurred_at: Date
  readonly run_id: string | null
  readonly details: Record<string, unknown>
}

export interface NoteRow {
  readonly incident_id: string
  readonly at: Date
  readonly text: string
  readonly user_id: string | null
  readonly user_name: string
}

export interface MonitorSummaryRow {
  readonly id: string
  readonly name: string
  readonly schedule_type: string
  readonly schedule_expression: string
}

export interface NewIncident {
  readonly orgId: string
  readonly monitorId: string
  readonly type: IncidentType
  readonly severity: Severity
  readonly at: Date
  readonly runId: string | null
  readonly details: Record<string, unknown>
}

export interface IncidentFilter {
  readonly orgId: string
  readonly status: IncidentStatus | undefined
  readonly type: IncidentType | undefined
  readonly monitorId: string | undefined
  readonly cursor: { readonly createdAt: Date; readonly id: string } | undefined
  readonly limit: number
}

export interface By {
  readonly userId: string | null
  readonly name: string
  readonly email: string | null
}

const columns = `id, org_id, monitor_id, type, severity, status, created_at, acknowledged_at, acknowledged_by,
  acknowledged_by_name, acknowledged_by_email, resolved_at, resolved_by, resolved_by_name, occurrences,
  last_occurred_at, run_id, details`

export class IncidentsRepo extends Effect.Service<IncidentsRepo>()("jobmon/IncidentsRepo", {
  effect: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const cols = sql.literal(columns)

    /**
     * Opens an incident, or counts one more occurrence on the active one of (monitor, type): the
     * partial unique index arbitrates, so concurrent raises never open two. A repeat keeps the first
     * occurrence's details and run, moves last_occurred_at forward and keeps the higher severity.
     * `created` is true when this call inserted the row.
     */
    const upsertActive = (input: NewIncident) =>
      sql<IncidentRow & { readonly created: boolean }>`
        insert into incidents (org_id, monitor_id, type, severity, status, created_at, last_occurred_at, run_id, details)
        values (${input.orgId}, ${input.monitorId}, ${input.type}, ${input.severity}, 'OPEN', ${input.at}, ${input.at},
          ${input.runId}, ${JSON.stringify(input.details)}::jsonb)
        on conflict (monitor_id, type) where status in ('OPEN', 'ACKNOWLEDGED')
        do update set
          occurrences = incidents.occurrences + 1,
          last_occurred_at = greatest(incidents.last_occurred_at, excluded.last_occurred_at),
          severity = case
            when array_position(array['LOW', 'MEDIUM', 'HIGH'], excluded.severity)
               > array_position(array['LOW', 'MEDIUM', 'HIGH'], incidents.severity)
            then excluded.severity else incidents.severity end
        returning ${cols}, (occurrences = 1) as created`.pipe(
        Effect.map((rows) => rows[0]!),
        Effect.orDie,
        Effect.withSpan("IncidentsRepo.upsertActive")
      )

    const findById = (orgId: string, id: string) =>
      sql<IncidentRow>`select ${cols} from incidents where id = ${id} and org_id = ${orgId}`.pipe(
        Effect.map((rows) => rows[0]),
        Effect.orDie,
        Effect.withSpan("IncidentsRepo.findById")
      )

    /** The row, locked until the transaction ends (a transition decides on a stable status). */
    const lock = (orgId: string, id: string) =>
      sql<IncidentRow>`select ${cols} from incidents where id = ${id} and org_id = ${orgId} for update`.pipe(
        Effect.map((rows) => rows[0]),
        Effect.orDie,
        Effect.withSpan("IncidentsRepo.lock")
      )

    /** OPEN → ACKNOWLEDGED; undefined when the incident is not OPEN (or not there). */
    const acknowledge = (orgId: string, id: string, at: Date, by: By) =>
      sql<IncidentRow>`
        update incidents set status = 'ACKNOWLEDGED', acknowledged_at = greatest(${at}, created_at),
          acknowledged_by = ${by.userId}, acknowledged_by_name = ${by.name}, acknowledged_by_email = ${by.email}
        where id = ${id} and org_id = ${orgId} and status = 'OPEN'
        returning ${cols}`.pipe(Effect.map((rows) => rows[0]), Effect.orDie, Effect.withSpan("IncidentsRepo.acknowledge"))

    /** OPEN or ACKNOWLEDGED → RESOLVED; undefined when already resolved (or not there). */
    const resolve = (orgId: string, id: string, at: Date, by: By) =>
      sql<IncidentRow>`
        update incidents set status = 'RESOLVED', resolved_at = greatest(${at}, created_at),
          resolved_by = ${by.userId}, resolved_by_name = ${by.name}
        where id = ${id} and org_id = ${orgId} and status in ('OPEN', 'ACKNOWLEDGED')
        returning ${cols}`.pipe(Effect.map((rows) => rows[0]), Effect.orDie, Effect.withSpan("IncidentsRepo.resolve"))

    /** Resolves the active incidents of these types of a monitor, as the system. */
    const resolveActive = (monitorId: string, types: ReadonlyArray<IncidentType>, at: Date) =>
      types.length === 0
        ? Effect.succeed([] as ReadonlyArray<IncidentRow>)
        : sql<IncidentRow>`
          update incidents set status = 'RESOLVED', resolved_at = greatest(${at}, created_at),
            resolved_by = null, resolved_by_name = 'system'
          where monitor_id = ${monitorId} and type = any(${types as Array<string>}::text[])
            and status in ('OPEN', 'ACKNOWLEDGED')
          returning ${cols}`.pipe(Effect.orDie, Effect.withSpan("IncidentsRepo.resolveActive"))

    const insertNote = (incidentId: string, at: Date, text: string, userId: string | null, userName: string) =>
      sql<NoteRow>`
        insert into incident_notes (incident_id, at, text, user_id, user_name)
        values (${incidentId}, ${at}, ${text}, ${userId}, ${userName})
        returning incident_id, at, text, user_id, user_name`.pipe(
        Effect.map((rows) => rows[0]!),
        Effect.orDie,
        Effect.withSpan("IncidentsRepo.insertNote")
      )

    const insertNotes = (notes: ReadonlyArray<{ incidentId: string; at: Date; text: string }>, userId: string | null, userName: string) =>
      notes.length === 0
        ? Effect.void
        : sql`
          insert into incident_notes (incident_id, at, text, user_id, user_name)
          select t.incident_id, t.at, t.text, ${userId}, ${userName}
          from unnest(${notes.map((n) => n.incidentId)}::uuid[], ${notes.map((n) => n.at.toISOString())}::timestamptz[],
            ${notes.map((n) => n.text)}::text[]) as t(incident_id, at, text)`.pipe(
          Effect.asVoid,
          Effect.orDie,
          Effect.withSpan("IncidentsRepo.insertNotes")
        )

    /** The notes of these incidents, oldest first. */
    const notesOf = (incidentIds: ReadonlyArray<string>) =>
      incidentIds.length === 0
        ? Effect.succeed([] as ReadonlyArray<NoteRow>)
        : sql<NoteRow>`
          select incident_id, at, text, user_id, user_name from incident_notes
          where incident_id = any(${incidentIds as Array<string>}::uuid[])
          order by at, seq`.pipe(Effect.orDie, Effect.withSpan("IncidentsRepo.notesOf"))

    /** Newest first: (created_at, id) descending, after the cursor. */
    const list = (f: IncidentFilter) => listStatement(sql, f).pipe(Effect.orDie, Effect.withSpan("IncidentsRepo.list"))

    /** The monitor as incident.opened names it (deleted monitors included: history). */
    const monitorSummary = (monitorId: string) =>
      sql<MonitorSummaryRow>`
        select id, name, schedule_type, schedule_expression from monitors where id = ${monitorId}`.pipe(
        Effect.map((rows) => rows[0]),
        Effect.orDie,
        Effect.withSpan("IncidentsRepo.monitorSummary")
      )

    return {
      upsertActive,
      findById,
      lock,
      acknowledge,
      resolve,
      resolveActive,
      insertNote,
      insertNotes,
      notesOf,
      list,
      monitorSummary
    } as const
  })
}) {}

/**
 * The statement of IncidentsRepo.list (exported so that a test can EXPLAIN it): an index range scan
 * within the organization, `(org_id, created_at, id)` or `(org_id, status, created_at, id)`, or
 * within the monitor, `(monitor_id, created_at, id)` (sql/0003_incidents_events.sql).
 */
export const listStatement = (sql: SqlClient.SqlClient, f: IncidentFilter) =>
  sql<IncidentRow>`
    select ${sql.literal(columns)} from incidents
    where org_id = ${f.orgId}
      ${f.status === undefined ? sql`` : sql`and status = ${f.status}`}
      ${f.type === undefined ? sql`` : sql`and type = ${f.type}`}
      ${f.monitorId === undefined ? sql`` : sql`and monitor_id = ${f.monitorId}`}
      ${f.cursor === undefined ? sql`` : sql`and (created_at, id) < (${f.cursor.createdAt}, ${f.cursor.id}::uuid)`}
    order by created_at desc, id desc
    limit ${f.limit}`
