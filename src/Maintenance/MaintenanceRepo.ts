import { SqlClient } from "@effect/sql"
import { Effect } from "effect"
import { lockAndCountLive } from "../Db/Quota.js"
import { withoutStatementTimeoutOn } from "../Db/StatementTimeout.js"
import type { Notifications } from "./Api.js"

/**
 * The SQL of maintenance windows (sql/0005_maintenance.sql): `maintenance_windows`, the history of
 * their periods (`maintenance_history`, unique per (window_id, started_at)) and the upcoming notices
 * recorded (`maintenance_notices`). SqlError becomes a defect: no caller can act on one.
 */

export interface WindowRow {
  readonly id: string
  readonly org_id: string
  readonly name: string
  readonly monitor_ids: ReadonlyArray<string>
  readonly start_at: Date
  readonly end_at: Date | null
  readonly rrule: string | null
  readonly duration_seconds: number | null
  readonly timezone: string
  readonly reason: string | null
  readonly notifications: Notifications
  readonly override_reason: string | null
  readonly override_started_at: Date | null
  readonly override_ends_at: Date | null
  readonly created_at: Date
  readonly updated_at: Date
}

export type EndReason = "completed" | "deleted" | "updated"

export interface OverrideEntry {
  readonly reason: string
  readonly startedAt: string
  readonly endedAt: string
}

export interface HistoryRow {
  readonly window_id: string
  readonly name: string
  readonly monitor_ids: ReadonlyArray<string>
  readonly started_at: Date
  readonly ends_at: Date
  readonly ended_at: Date | null
  readonly end_reason: EndReason | null
  readonly overrides: ReadonlyArray<OverrideEntry>
  readonly suppressed_incidents: number
}

export type OpenHistoryRow = Pick<HistoryRow, "window_id" | "name" | "monitor_ids" | "started_at" | "ends_at">

/** The stored form of a window's schedule: one-time (start, end) or recurring (start as DTSTART, rrule, duration). */
export interface ScheduleColumns {
  readonly start: Date
  readonly end: Date | null
  readonly rrule: string | null
  readonly duration: number | null
  readonly timezone: string
}

export interface WindowFields extends ScheduleColumns {
  readonly name: string
  readonly monitorIds: ReadonlyArray<string>
  readonly reason: string | null
  readonly notifications: Notifications
}

/** A period of a window as its history row records it. */
export interface PeriodRecord {
  readonly windowId: string
  readonly startedAt: Date
  readonly endsAt: Date
  readonly name: string
  readonly monitorIds: ReadonlyArray<string>
}

/**
 * The key of the advisory lock that serialises every maintenance write across instances (cluster
 * mode: `MaintenanceScheduler.serialized`). Other keys in use: src/Events/EventsRepo.ts.
 */
export const MAINTENANCE_LOCK_KEY = 7_316_402_123

/** What has been recorded of one window, as stored: its running period's row, the last upcoming notice. */
export interface RecordedRow {
  readonly open: OpenHistoryRow | undefined
  readonly upcomingFor: Date | undefined
}

const windowColumns = `id, org_id, name, monitor_ids, start_at, end_at, rrule, duration_seconds, timezone, reason,
  notifications, override_reason, override_started_at, override_ends_at, created_at, updated_at`

export class MaintenanceRepo extends Effect.Service<MaintenanceRepo>()("jobmon/MaintenanceRepo", {
  effect: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const columns = sql.literal(windowColumns)
    // Start-up reads every organization's windows: not bound by the API's statement timeout.
    const unbounded = withoutStatementTimeoutOn(sql)
    const ids = (monitorIds: ReadonlyArray<string>) => monitorIds as Array<string>

    // ---- windows ---------------------------------------------------------------------------------

    const loadWindows = sql<WindowRow>`select ${columns} from maintenance_windows where deleted_at is null`.pipe(
      unbounded,
      Effect.orDie,
      Effect.withSpan("MaintenanceRepo.loadWindows")
    )

    /** The window as stored now; undefined when it does not exist or was deleted. */
    const findWindow = (id: string) =>
      sql<WindowRow>`select ${columns} from maintenance_windows where id = ${id} and deleted_at is null`.pipe(
        Effect.map((rows) => rows[0]),
        Effect.orDie,
        Effect.withSpan("MaintenanceRepo.findWindow")
      )

    /**
     * In a transaction: waits for every other instance's maintenance writes (held until the
     * transaction ends).
     */
    const lockWrites = sql`select pg_advisory_xact_lock(${MAINTENANCE_LOCK_KEY})`.pipe(
      Effect.asVoid,
      Effect.orDie,
      Effect.withSpan("MaintenanceRepo.lockWrites")
    )

    /** Which of these ids are live monitors of the organization (lower case). */
    const existingMonitorIds = (orgId: string, monitorIds: ReadonlyArray<string>) =>
      sql<{ id: string }>`
        select id from monitors where org_id = ${orgId} and deleted_at is null and id = any(${ids(monitorIds)}::uuid[])`.pipe(
        Effect.map((rows) => new Set(rows.map((r) => r.id.toLowerCase()))),
        Effect.orDie,
        Effect.withSpan("MaintenanceRepo.existingMonitorIds")
      )

    /**
     * In a transaction: the organization's live windows, counted under its quota lock (src/Db/Quota.ts),
     * so that the count and the insert that follows are one step, also across instances.
     */
    const countWindowsLocked = (orgId: string) =>
      lockAndCountLive(sql, "maintenance_windows", orgId).pipe(Effect.withSpan("MaintenanceRepo.countWindowsLocked"))

    const insertWindow = (orgId: string, w: WindowFields, at: Date) =>
      sql<WindowRow>`
        insert into maintenance_windows (org_id, name, monitor_ids, start_at, end_at, rrule, duration_seconds, timezone,
          reason, notifications, created_at, updated_at)
        values (${orgId}, ${w.name}, ${ids(w.monitorIds)}::uuid[], ${w.start}, ${w.end}, ${w.rrule}, ${w.duration},
          ${w.timezone}, ${w.reason}, ${JSON.stringify(w.notifications)}::jsonb, ${at}, ${at})
        returning ${columns}`.pipe(Effect.map((rows) => rows[0]!), Effect.orDie, Effect.withSpan("MaintenanceRepo.insertWindow"))

    /** undefined when the window is gone. */
    const updateWindow = (id: string, w: WindowFields, at: Date) =>
      sql<WindowRow>`
        update maintenance_windows set name = ${w.name}, monitor_ids = ${ids(w.monitorIds)}::uuid[],
          start_at = ${w.start}, end_at = ${w.end}, rrule = ${w.rrule}, duration_seconds = ${w.duration},
          timezone = ${w.timezone}, reason = ${w.reason}, notifications = ${JSON.stringify(w.notifications)}::jsonb,
          updated_at = ${at}
        where id = ${id} and deleted_at is null
        returning ${columns}`.pipe(Effect.map((rows) => rows[0]), Effect.orDie, Effect.withSpan("MaintenanceRepo.updateWindow"))

    const softDeleteWindow = (id: string, at: Date) =>
      sql`update maintenance_windows set deleted_at = ${at} where id = ${id}`.pipe(
        Effect.asVoid,
        Effect.orDie,
        Effect.withSpan("MaintenanceRepo.softDeleteWindow")
      )

    const setOverride = (id: string, reason: string, startedAt: Date, endsAt: Date) =>
      sql<WindowRow>`
        update maintenance_windows set override_reason = ${reason}, override_started_at = ${startedAt},
          override_ends_at = ${endsAt}
        where id = ${id}
        returning ${columns}`.pipe(Effect.map((rows) => rows[0]!), Effect.orDie, Effect.withSpan("MaintenanceRepo.setOverride"))

    // ---- history ---------------------------------------------------------------------------------

    const loadOpenHistory = sql<OpenHistoryRow>`
      select window_id, name, monitor_ids, started_at, ends_at from maintenance_history where ended_at is null`.pipe(
      unbounded,
      Effect.orDie,
      Effect.withSpan("MaintenanceRepo.loadOpenHistory")
    )

    /**
     * Writes the row of a running period; true when it was written now, false when it was already
     * open (a restart while the period runs). A row that was ended (an update moved the period away
     * and back) opens again.
     */
    const openHistory = (orgId: string, p: PeriodRecord) =>
      sql<{ id: string }>`
        insert into maintenance_history (window_id, org_id, name, monitor_ids, started_at, ends_at)
        values (${p.windowId}, ${orgId}, ${p.name}, ${ids(p.monitorIds)}::uuid[], ${p.startedAt}, ${p.endsAt})
        on conflict (window_id, started_at) do update
          set ended_at = null, end_reason = null, ends_at = excluded.ends_at, name = excluded.name,
              monitor_ids = excluded.monitor_ids
          where maintenance_history.ended_at is not null
        returning id`.pipe(Effect.map((rows) => rows.length > 0), Effect.orDie, Effect.withSpan("MaintenanceRepo.openHistory"))

    /** A changed window's running period: its scheduled end, name and monitors as they are now. */
    const refreshOpenHistory = (p: PeriodRecord) =>
      sql`
        update maintenance_history set ends_at = ${p.endsAt}, name = ${p.name}, monitor_ids = ${ids(p.monitorIds)}::uuid[]
        where window_id = ${p.windowId} and started_at = ${p.startedAt} and ended_at is null`.pipe(
        Effect.asVoid,
        Effect.orDie,
        Effect.withSpan("MaintenanceRepo.refreshOpenHistory")
      )

    /** true when the row was open and is closed now. */
    const closeHistory = (windowId: string, startedAt: Date, endedAt: Date, reason: EndReason) =>
      sql<{ id: string }>`
        update maintenance_history set ended_at = ${endedAt}, end_reason = ${reason}
        where window_id = ${windowId} and started_at = ${startedAt} and ended_at is null
        returning id`.pipe(Effect.map((rows) => rows.length > 0), Effect.orDie, Effect.withSpan("MaintenanceRepo.closeHistory"))

    const appendOverride = (windowId: string, periodStart: Date, entry: OverrideEntry) =>
      sql`
        update maintenance_history set overrides = overrides || ${JSON.stringify([entry])}::jsonb
        where window_id = ${windowId} and started_at = ${periodStart}`.pipe(
        Effect.asVoid,
        Effect.orDie,
        Effect.withSpan("MaintenanceRepo.appendOverride")
      )

    /** One more suppressed incident on a period's row; false when the period has no row. */
    const countSuppressed = (windowId: string, periodStart: Date) =>
      sql<{ id: string }>`
        update maintenance_history set suppressed_incidents = suppressed_incidents + 1
        where window_id = ${windowId} and started_at = ${periodStart} returning id`.pipe(
        Effect.map((rows) => rows.length > 0),
        Effect.orDie,
        Effect.withSpan("MaintenanceRepo.countSuppressed")
      )

    /** A period nobody recorded (the service was down), written completed with one suppressed incident. */
    const insertSuppressedPeriod = (orgId: string, p: PeriodRecord, endedAt: Date) =>
      sql`
        insert into maintenance_history (window_id, org_id, name, monitor_ids, started_at, ends_at, ended_at, end_reason,
          suppressed_incidents)
        values (${p.windowId}, ${orgId}, ${p.name}, ${ids(p.monitorIds)}::uuid[], ${p.startedAt}, ${p.endsAt}, ${endedAt},
          'completed', 1)
        on conflict (window_id, started_at) do update
          set suppressed_incidents = maintenance_history.suppressed_incidents + 1`.pipe(
        Effect.asVoid,
        Effect.orDie,
        Effect.withSpan("MaintenanceRepo.insertSuppressedPeriod")
      )

    /** The organization's periods that started by `to` and had not ended before `from`, newest first. */
    const historyBetween = (orgId: string, from: Date, to: Date) =>
      sql<HistoryRow>`
        select window_id, name, monitor_ids, started_at, ends_at, ended_at, end_reason, overrides, suppressed_incidents
        from maintenance_history
        where org_id = ${orgId} and started_at <= ${to} and (ended_at is null or ended_at >= ${from})
        order by started_at desc, window_id
        limit 10000`.pipe(Effect.orDie, Effect.withSpan("MaintenanceRepo.historyBetween"))

    /** What has been recorded of one window: its open period's row and its latest upcoming notice. */
    const loadRecorded = (windowId: string) =>
      sql<OpenHistoryRow & { readonly upcoming_for: Date | null }>`
        select h.window_id, h.name, h.monitor_ids, h.started_at, h.ends_at,
          (select max(period_start) from maintenance_notices where window_id = ${windowId}) as upcoming_for
        from (select 1) as one
        left join lateral (
          select window_id, name, monitor_ids, started_at, ends_at from maintenance_history
          where window_id = ${windowId} and ended_at is null order by started_at desc limit 1
        ) as h on true`.pipe(
        Effect.map(([row]): RecordedRow => ({
          open: row === undefined || row.window_id === null ? undefined : row,
          upcomingFor: row?.upcoming_for ?? undefined
        })),
        Effect.orDie,
        Effect.withSpan("MaintenanceRepo.loadRecorded")
      )

    // ---- notices ---------------------------------------------------------------------------------

    /** The latest period start for which each window's maintenance.upcoming was recorded. */
    const loadUpcomingNotices = sql<{ window_id: string; period_start: Date }>`
      select window_id, max(period_start) as period_start from maintenance_notices group by window_id`.pipe(
      Effect.orDie,
      Effect.withSpan("MaintenanceRepo.loadUpcomingNotices")
    )

    /** true when this period's upcoming notice was not recorded before. */
    const recordUpcomingNotice = (windowId: string, periodStart: Date) =>
      sql<{ window_id: string }>`
        insert into maintenance_notices (window_id, period_start, kind) values (${windowId}, ${periodStart}, 'upcoming')
        on conflict do nothing returning window_id`.pipe(
        Effect.map((rows) => rows.length > 0),
        Effect.orDie,
        Effect.withSpan("MaintenanceRepo.recordUpcomingNotice")
      )

    return {
      loadWindows,
      findWindow,
      lockWrites,
      existingMonitorIds,
      countWindowsLocked,
      insertWindow,
      updateWindow,
      softDeleteWindow,
      setOverride,
      loadOpenHistory,
      loadRecorded,
      openHistory,
      refreshOpenHistory,
      closeHistory,
      appendOverride,
      countSuppressed,
      insertSuppressedPeriod,
      historyBetween,
      loadUpcomingNotices,
      recordUpcomingNotice
    } as const
  })
}) {}
