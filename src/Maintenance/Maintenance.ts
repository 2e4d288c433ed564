import { SqlClient } from "@effect/sql"
import { Clock, Effect, Either, Layer, Queue } from "effect"
import { AppConfig } from "../Config.js"
import { withoutStatementTimeoutOn } from "../Db/StatementTimeout.js"
import { Conflict, NotFound, ValidationError } from "../Domain/Errors.js"
import { isUuid } from "../Domain/Ids.js"
import { INSTANT_RANGE_TEXT } from "../Domain/Instant.js"
import { excerpt } from "../Domain/Text.js"
import { MaintenanceCheck } from "../Engine/Engine.js"
import type { IncidentType } from "../Engine/Model.js"
import { Events } from "../Events/Events.js"
import { MAINTENANCE_QUOTA_LOCK_CLASS } from "../Monitors/MonitorsRepo.js"
import type {
  CreateWindowRequest,
  HistoryEntry,
  MaintenanceWindow,
  Notifications,
  PreviewWindowRequest,
  UpdateWindowRequest,
  WindowStatus
} from "./Api.js"
import {
  DAY_MS,
  type FieldError,
  nextPeriodAfter,
  overrideCovers,
  parseDay,
  parseInstant,
  type Period,
  periodAt,
  periodsFrom,
  validateNotifications,
  validateWindowSchedule,
  type WindowSchedule
} from "./Model.js"
import { maintenanceEnded, maintenanceStarted, maintenanceUpcoming, type WindowFacts } from "./Payloads.js"
import { MaintenanceSuppressions } from "./Suppressions.js"

/**
 * Maintenance windows (docs/maintenance.md). Windows live in memory, indexed by monitor, so that
 * "is monitor M in maintenance at T" (the engine's MaintenanceCheck) is a map look-up and a period
 * computation; they are loaded at start-up and kept current by this instance's API calls. One
 * scheduler fiber sleeps on the Clock until the next transition of any window (a period's start or
 * end, an override's end, a maintenance.upcoming instant) and writes history rows and events then.
 * History rows are unique per (window, period start): a restart while a period runs finds its row.
 */

interface WindowRow {
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

interface HistoryRow {
  readonly window_id: string
  readonly name: string
  readonly monitor_ids: ReadonlyArray<string>
  readonly started_at: Date
  readonly ends_at: Date
  readonly ended_at: Date | null
  readonly end_reason: "completed" | "deleted" | "updated" | null
  readonly overrides: ReadonlyArray<{ reason: string; startedAt: string; endedAt: string }>
  readonly suppressed_incidents: number
}

interface OpenPeriod {
  readonly startedAt: number
  endsAt: number
  name: string
  monitorIds: ReadonlyArray<string>
}

interface WindowState {
  row: WindowRow
  schedule: WindowSchedule
  override: { readonly reason: string; readonly startedAt: number; readonly endsAt: number } | null
  /** The history row of the running period, as stored (ended_at null). */
  open: OpenPeriod | undefined
  /** The last period computed: most checks fall in it. */
  cached: Period | undefined
  /** The period start for which maintenance.upcoming was recorded. */
  upcomingFor: number | undefined
}

const windowColumns = `id, org_id, name, monitor_ids, start_at, end_at, rrule, duration_seconds, timezone, reason,
  notifications, override_reason, override_started_at, override_ends_at, created_at, updated_at`

const iso = (t: number | Date | null): string | null => (t === null ? null : new Date(t).toISOString())
const sameIds = (a: ReadonlyArray<string>, b: ReadonlyArray<string>) => a.length === b.length && a.every((x, i) => x === b[i])

const scheduleOfRow = (row: WindowRow): Either.Either<WindowSchedule, FieldError> =>
  validateWindowSchedule(
    {
      start: row.start_at.toISOString(),
      end: row.end_at === null ? null : row.end_at.toISOString(),
      rrule: row.rrule,
      duration: row.duration_seconds,
      timezone: row.timezone
    },
    row.created_at.getTime()
  )

const overrideOf = (row: WindowRow) =>
  row.override_started_at === null || row.override_ends_at === null
    ? null
    : { reason: row.override_reason ?? "", startedAt: row.override_started_at.getTime(), endsAt: row.override_ends_at.getTime() }

const factsOf = (row: WindowRow): WindowFacts => ({
  id: row.id,
  orgId: row.org_id,
  name: row.name,
  monitorIds: row.monitor_ids,
  reason: row.reason,
  timezone: row.timezone,
  channels: row.notifications.channels
})

const invalid = (error: FieldError) => new ValidationError({ path: error.path, message: error.message })
const windowNotFound = (id: string) => new NotFound({ message: `Maintenance window ${excerpt(id)} does not exist` })

/** How long the scheduler sleeps at most, and after a failed pass. */
const MAX_SLEEP_MS = 3_600_000
const RETRY_MS = 5_000

export class Maintenance extends Effect.Service<Maintenance>()("jobmon/Maintenance", {
  dependencies: [Events.Default],
  scoped: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const maxWindows = (yield* AppConfig).maxMaintenanceWindowsPerOrg
    const events = yield* Events
    const windows = new Map<string, WindowState>()
    const byMonitor = new Map<string, Set<string>>()
    const lock = yield* Effect.makeSemaphore(1)
    const wake = yield* Queue.sliding<void>(1)
    let busy = false

    // ---- memory ---------------------------------------------------------------------------------

    const index = (w: WindowState) => {
      for (const m of w.row.monitor_ids) {
        let set = byMonitor.get(m)
        if (set === undefined) byMonitor.set(m, (set = new Set()))
        set.add(w.row.id)
      }
    }
    const unindex = (w: WindowState) => {
      for (const m of w.row.monitor_ids) {
        const set = byMonitor.get(m)
        set?.delete(w.row.id)
        if (set !== undefined && set.size === 0) byMonitor.delete(m)
      }
    }

    const periodOf = (w: WindowState, at: number): Period | undefined => {
      const c = w.cached
      if (c !== undefined && c.start <= at && at < c.end) return c
      const p = periodAt(w.schedule, at)
      if (p !== undefined) w.cached = p
      return p
    }

    /** The period that suppresses incidents at `at`: a running period not overridden at that instant. */
    const suppressingPeriod = (w: WindowState, at: number): Period | undefined => {
      const p = periodOf(w, at)
      return p === undefined || overrideCovers(w.override, p, at) ? undefined : p
    }

    const inMaintenance = (monitorId: string, at: number): boolean => {
      const ids = byMonitor.get(monitorId)
      if (ids === undefined) return false
      for (const id of ids) {
        const w = windows.get(id)
        if (w !== undefined && suppressingPeriod(w, at) !== undefined) return true
      }
      return false
    }

    /** What the monitors API shows: the suppressing window that ends last, or null. */
    const monitorInfo = (monitorId: string, now: number) => {
      const ids = byMonitor.get(monitorId)
      if (ids === undefined) return null
      let best: { w: WindowState; p: Period } | undefined
      for (const id of ids) {
        const w = windows.get(id)
        const p = w === undefined ? undefined : suppressingPeriod(w, now)
        if (w !== undefined && p !== undefined && (best === undefined || p.end > best.p.end)) best = { w, p }
      }
      if (best === undefined) return null
      return {
        windowId: best.w.row.id,
        name: best.w.row.name,
        endsAt: new Date(best.p.end).toISOString(),
        remainingSeconds: Math.max(0, Math.ceil((best.p.end - now) / 1000))
      }
    }

    const statusOf = (w: WindowState, now: number) => {
      const p = periodOf(w, now)
      const next = nextPeriodAfter(w.schedule, now)
      const overridden = p !== undefined && overrideCovers(w.override, p, now)
      const status: WindowStatus = p !== undefined ? (overridden ? "overridden" : "active") : next !== undefined ? "scheduled" : "ended"
      return { status, period: p, next, overridden }
    }

    const toApi = (w: WindowState, now: number): MaintenanceWindow => {
      const { next, overridden, period, status } = statusOf(w, now)
      const row = w.row
      return {
        id: row.id,
        name: row.name,
        monitorIds: row.monitor_ids,
        kind: row.rrule === null ? "one-time" : "recurring",
        start: row.start_at.toISOString(),
        end: iso(row.end_at),
        rrule: row.rrule,
        duration: row.duration_seconds,
        timezone: row.timezone,
        reason: row.reason,
        notifications: row.notifications,
        status,
        nextStart: next === undefined ? null : iso(next.start),
        currentEnd: period === undefined ? null : iso(period.end),
        overrideEndsAt: overridden && w.override !== null ? iso(Math.min(w.override.endsAt, period!.end)) : null,
        overrideReason: overridden && w.override !== null ? w.override.reason : null,
        createdAt: row.created_at.toISOString(),
        updatedAt: row.updated_at.toISOString()
      }
    }

    // ---- history and events ---------------------------------------------------------------------

    /** Writes the running period's history row (and maintenance.started); idempotent per (window, start). */
    const openPeriod = (w: WindowState, p: Period, now: number) =>
      Effect.gen(function*() {
        const row = w.row
        yield* sql.withTransaction(
          Effect.gen(function*() {
            const written = yield* sql<{ id: string }>`
              insert into maintenance_history (window_id, org_id, name, monitor_ids, started_at, ends_at)
              values (${row.id}, ${row.org_id}, ${row.name}, ${row.monitor_ids as Array<string>}::uuid[],
                ${new Date(p.start)}, ${new Date(p.end)})
              on conflict (window_id, started_at) do update
                set ended_at = null, end_reason = null, ends_at = excluded.ends_at, name = excluded.name,
                    monitor_ids = excluded.monitor_ids
                where maintenance_history.ended_at is not null
              returning id`
            if (written.length > 0 && row.notifications.onStart) yield* events.record(maintenanceStarted(factsOf(row), p, now))
          })
        )
        w.open = { startedAt: p.start, endsAt: p.end, name: row.name, monitorIds: row.monitor_ids }
      })

    /** Closes the running period's history row (and maintenance.ended). */
    const closePeriod = (w: WindowState, endedAt: number, reason: "completed" | "deleted" | "updated", now: number) =>
      Effect.gen(function*() {
        const open = w.open
        if (open === undefined) return
        const row = w.row
        yield* sql.withTransaction(
          Effect.gen(function*() {
            const closed = yield* sql<{ id: string }>`
              update maintenance_history set ended_at = ${new Date(endedAt)}, end_reason = ${reason}
              where window_id = ${row.id} and started_at = ${new Date(open.startedAt)} and ended_at is null
              returning id`
            if (closed.length > 0 && row.notifications.onEnd) {
              yield* events.record(maintenanceEnded(factsOf(row), { start: open.startedAt, end: open.endsAt }, endedAt, reason, now))
            }
          })
        )
        w.open = undefined
      })

    /** maintenance.upcoming once per period, beforeStart seconds before it. */
    const noticeUpcoming = (w: WindowState, now: number) =>
      Effect.gen(function*() {
        const before = w.row.notifications.beforeStart
        if (before === null || before <= 0) return
        const next = nextPeriodAfter(w.schedule, now)
        if (next === undefined || w.upcomingFor === next.start || next.start - before * 1000 > now) return
        const row = w.row
        yield* sql.withTransaction(
          Effect.gen(function*() {
            const fresh = yield* sql<{ window_id: string }>`
              insert into maintenance_notices (window_id, period_start, kind) values (${row.id}, ${new Date(next.start)}, 'upcoming')
              on conflict do nothing returning window_id`
            if (fresh.length > 0) yield* events.record(maintenanceUpcoming(factsOf(row), next, before, now))
          })
        )
        w.upcomingFor = next.start
      })

    /**
     * Brings a window's history up to `now`: closes a period that is over (completed at its end) or
     * no longer the running one (`reason`, now), opens the running one, keeps its row current.
     */
    const reconcile = (w: WindowState, now: number, reason: "updated" | "completed" = "updated") =>
      Effect.gen(function*() {
        const p = periodOf(w, now)
        const open = w.open
        if (open !== undefined && (p === undefined || p.start !== open.startedAt)) {
          const over = now >= open.endsAt
          yield* closePeriod(w, over ? open.endsAt : now, over ? "completed" : reason, now)
        }
        if (p !== undefined) {
          const current = w.open
          if (current === undefined) {
            yield* openPeriod(w, p, now)
          } else if (current.endsAt !== p.end || current.name !== w.row.name || !sameIds(current.monitorIds, w.row.monitor_ids)) {
            yield* sql`
              update maintenance_history set ends_at = ${new Date(p.end)}, name = ${w.row.name},
                monitor_ids = ${w.row.monitor_ids as Array<string>}::uuid[]
              where window_id = ${w.row.id} and started_at = ${new Date(current.startedAt)} and ended_at is null`
            current.endsAt = p.end
            current.name = w.row.name
            current.monitorIds = w.row.monitor_ids
          }
        }
        yield* noticeUpcoming(w, now)
      })

    /** The next instant at which something about this window changes. */
    const nextTransition = (w: WindowState, now: number): number | undefined => {
      let next: number | undefined
      const consider = (t: number) => {
        if (t > now && (next === undefined || t < next)) next = t
      }
      const p = periodOf(w, now)
      if (p !== undefined) {
        consider(p.end)
        if (w.override !== null && overrideCovers(w.override, p, now)) consider(w.override.endsAt)
      }
      const n = nextPeriodAfter(w.schedule, now)
      if (n !== undefined) {
        consider(n.start)
        const before = w.row.notifications.beforeStart
        if (before !== null && before > 0 && w.upcomingFor !== n.start) consider(n.start - before * 1000)
      }
      return next
    }

    // ---- the scheduler ---------------------------------------------------------------------------

    const pass = Effect.gen(function*() {
      const now = yield* Clock.currentTimeMillis
      let failed = false
      for (const w of [...windows.values()]) {
        yield* reconcile(w, now, "completed").pipe(
          Effect.catchAllCause((cause) =>
            Effect.sync(() => {
              failed = true
            }).pipe(Effect.zipRight(Effect.logError(`maintenance window ${w.row.id}: could not record its transition`, cause)))
          )
        )
      }
      let next: number | undefined
      for (const w of windows.values()) {
        const t = nextTransition(w, now)
        if (t !== undefined && (next === undefined || t < next)) next = t
      }
      const wait = next === undefined ? MAX_SLEEP_MS : Math.min(MAX_SLEEP_MS, Math.max(1, next - now))
      return failed ? Math.min(wait, RETRY_MS) : wait
    })

    const scheduler = Effect.gen(function*() {
      for (;;) {
        busy = true
        const wait = yield* lock.withPermits(1)(pass).pipe(
          Effect.catchAllCause((cause) => Effect.as(Effect.logError("maintenance scheduler pass failed", cause), RETRY_MS))
        )
        busy = false
        yield* Effect.raceFirst(Effect.sleep(wait), Queue.take(wake))
      }
    })

    const poke = Queue.offer(wake, undefined)

    // ---- start-up ----------------------------------------------------------------------------------

    const load = (row: WindowRow): WindowState | undefined => {
      const schedule = scheduleOfRow(row)
      if (Either.isLeft(schedule)) return undefined
      return { row, schedule: schedule.right, override: overrideOf(row), open: undefined, cached: undefined, upcomingFor: undefined }
    }

    // Start-up reads every organization's windows: not bound by the API's statement timeout.
    const unbounded = withoutStatementTimeoutOn(sql)
    const rows = yield* sql<WindowRow>`
      select ${sql.literal(windowColumns)} from maintenance_windows where deleted_at is null`.pipe(unbounded, Effect.orDie)
    const openRows = yield* sql<HistoryRow>`
      select window_id, name, monitor_ids, started_at, ends_at from maintenance_history where ended_at is null`.pipe(
      unbounded,
      Effect.orDie
    )
    const upcoming = yield* sql<{ window_id: string; period_start: Date }>`
      select window_id, max(period_start) as period_start from maintenance_notices group by window_id`.pipe(Effect.orDie)
    for (const row of rows) {
      const w = load(row)
      if (w === undefined) {
        yield* Effect.logError(`maintenance window ${row.id} has a schedule that no longer parses; it is ignored`)
        continue
      }
      windows.set(row.id, w)
      index(w)
    }
    for (const h of openRows) {
      const w = windows.get(h.window_id)
      if (w !== undefined) {
        w.open = { startedAt: h.started_at.getTime(), endsAt: h.ends_at.getTime(), name: h.name, monitorIds: h.monitor_ids }
      }
    }
    for (const u of upcoming) {
      const w = windows.get(u.window_id)
      if (w !== undefined) w.upcomingFor = u.period_start.getTime()
    }
    yield* Effect.forkScoped(scheduler)

    // ---- the API -----------------------------------------------------------------------------------

    const find = (orgId: string, id: string) =>
      Effect.gen(function*() {
        const w = isUuid(id) ? windows.get(id.toLowerCase()) : undefined
        if (w === undefined || w.row.org_id !== orgId) return yield* windowNotFound(id)
        return w
      })

    const checkMonitors = (orgId: string, ids: ReadonlyArray<string>) =>
      Effect.gen(function*() {
        if (ids.length === 0) {
          return yield* new ValidationError({ path: "monitorIds", message: "monitorIds must list at least one monitor." })
        }
        if (ids.length > 1000) {
          return yield* new ValidationError({ path: "monitorIds", message: "monitorIds may list at most 1000 monitors." })
        }
        const valid = ids.filter(isUuid)
        const found = valid.length === 0
          ? []
          : yield* sql<{ id: string }>`
              select id from monitors where org_id = ${orgId} and deleted_at is null and id = any(${valid}::uuid[])`.pipe(Effect.orDie)
        const known = new Set(found.map((r) => r.id.toLowerCase()))
        for (let i = 0; i < ids.length; i++) {
          if (!known.has(ids[i]!.toLowerCase())) {
            return yield* new ValidationError({
              path: `monitorIds.${i}`,
              message: `monitorIds.${i}: monitor ${excerpt(ids[i]!)} does not exist in this organization.`
            })
          }
        }
        return [...new Set(ids.map((id) => id.toLowerCase()))]
      })

    const checkSchedule = (fields: Parameters<typeof validateWindowSchedule>[0], now: number) =>
      Either.match(validateWindowSchedule(fields, now), { onLeft: (e) => Effect.fail(invalid(e)), onRight: Effect.succeed })

    const checkNotifications = (input: CreateWindowRequest["notifications"]) =>
      Either.match(validateNotifications(input), { onLeft: (e) => Effect.fail(invalid(e)), onRight: Effect.succeed })

    const scheduleColumns = (s: WindowSchedule) => ({
      start: new Date(s.start),
      end: s.kind === "one-time" ? new Date(s.end) : null,
      rrule: s.kind === "recurring" ? s.rrule : null,
      duration: s.kind === "recurring" ? s.durationSeconds : null
    })

    const create = (orgId: string, input: CreateWindowRequest) =>
      Effect.gen(function*() {
        const now = yield* Clock.currentTimeMillis
        const monitorIds = yield* checkMonitors(orgId, input.monitorIds)
        const schedule = yield* checkSchedule(input, now)
        const notifications = yield* checkNotifications(input.notifications)
        const c = scheduleColumns(schedule)
        return yield* lock.withPermits(1)(Effect.gen(function*() {
          // The quota check and the insert are one step, also across instances (the lock is per organization).
          const row = yield* sql.withTransaction(Effect.gen(function*() {
            if (maxWindows > 0) {
              yield* sql`select pg_advisory_xact_lock(${MAINTENANCE_QUOTA_LOCK_CLASS}::int4, hashtext(${orgId}))`
              const [count] = yield* sql<{ n: number }>`
                select count(*)::int as n from maintenance_windows where org_id = ${orgId} and deleted_at is null`
              if (count!.n >= maxWindows) {
                return yield* new Conflict({
                  message: `This organization already has ${maxWindows.toLocaleString("en-US")} maintenance windows, the most it ` +
                    `may have (the operator's MAX_MAINTENANCE_WINDOWS_PER_ORG); delete windows it no longer needs before creating more.`
                })
              }
            }
            const [row] = yield* sql<WindowRow>`
              insert into maintenance_windows (org_id, name, monitor_ids, start_at, end_at, rrule, duration_seconds, timezone,
                reason, notifications, created_at, updated_at)
              values (${orgId}, ${input.name.trim()}, ${monitorIds}::uuid[], ${c.start}, ${c.end}, ${c.rrule}, ${c.duration},
                ${schedule.timezone}, ${input.reason ?? null}, ${JSON.stringify(notifications)}::jsonb, ${new Date(now)}, ${new Date(now)})
              returning ${sql.literal(windowColumns)}`
            return row!
          })).pipe(Effect.catchTag("SqlError", (e) => Effect.die(e)))
          const w: WindowState = { row, schedule, override: null, open: undefined, cached: undefined, upcomingFor: undefined }
          windows.set(w.row.id, w)
          index(w)
          yield* reconcile(w, now).pipe(Effect.orDie)
          yield* poke
          return toApi(w, now)
        }))
      })

    const update = (orgId: string, id: string, input: UpdateWindowRequest) =>
      Effect.gen(function*() {
        const w = yield* find(orgId, id)
        const now = yield* Clock.currentTimeMillis
        const row = w.row
        const monitorIds = input.monitorIds === undefined ? row.monitor_ids : yield* checkMonitors(orgId, input.monitorIds)
        const pick = <A>(given: A | undefined, current: A) => (given === undefined ? current : given)
        const schedule = yield* checkSchedule({
          start: pick(input.start, row.start_at.toISOString()),
          end: pick(input.end, iso(row.end_at)),
          rrule: pick(input.rrule, row.rrule),
          duration: pick(input.duration, row.duration_seconds),
          timezone: pick(input.timezone, row.timezone)
        }, now)
        const notifications = input.notifications === undefined ? row.notifications : yield* checkNotifications(input.notifications)
        const c = scheduleColumns(schedule)
        const name = input.name?.trim() ?? row.name
        const reason = input.reason === undefined ? row.reason : input.reason
        return yield* lock.withPermits(1)(Effect.gen(function*() {
          if (windows.get(w.row.id) !== w) return yield* windowNotFound(id)
          const [updated] = yield* sql<WindowRow>`
            update maintenance_windows set name = ${name}, monitor_ids = ${monitorIds as Array<string>}::uuid[],
              start_at = ${c.start}, end_at = ${c.end}, rrule = ${c.rrule}, duration_seconds = ${c.duration},
              timezone = ${schedule.timezone}, reason = ${reason}, notifications = ${JSON.stringify(notifications)}::jsonb,
              updated_at = ${new Date(now)}
            where id = ${row.id} and deleted_at is null
            returning ${sql.literal(windowColumns)}`.pipe(Effect.orDie)
          if (updated === undefined) return yield* windowNotFound(id)
          unindex(w)
          w.row = updated
          w.schedule = schedule
          w.cached = undefined
          index(w)
          yield* reconcile(w, now, "updated").pipe(Effect.orDie)
          yield* poke
          return toApi(w, now)
        }))
      })

    const remove = (orgId: string, id: string) =>
      Effect.gen(function*() {
        const w = yield* find(orgId, id)
        yield* lock.withPermits(1)(Effect.gen(function*() {
          if (windows.get(w.row.id) !== w) return yield* windowNotFound(id)
          const now = yield* Clock.currentTimeMillis
          // Close what is over first, then end the running period by deletion, in one commit.
          yield* sql.withTransaction(Effect.gen(function*() {
            yield* reconcile(w, now, "updated")
            if (w.open !== undefined) yield* closePeriod(w, now, "deleted", now)
            yield* sql`update maintenance_windows set deleted_at = ${new Date(now)} where id = ${w.row.id}`
          })).pipe(Effect.orDie)
          windows.delete(w.row.id)
          unindex(w)
          yield* poke
        }))
      })

    const override = (orgId: string, id: string, input: { readonly reason: string; readonly durationSeconds: number }) =>
      Effect.gen(function*() {
        const w = yield* find(orgId, id)
        if (input.durationSeconds <= 0) {
          return yield* new ValidationError({
            path: "durationSeconds",
            message: `durationSeconds must be a whole number of seconds greater than 0 (got ${input.durationSeconds}).`
          })
        }
        return yield* lock.withPermits(1)(Effect.gen(function*() {
          if (windows.get(w.row.id) !== w) return yield* windowNotFound(id)
          const now = yield* Clock.currentTimeMillis
          yield* reconcile(w, now).pipe(Effect.orDie)
          const { period, status } = statusOf(w, now)
          if (status !== "active" || period === undefined) {
            return yield* new Conflict({
              message: status === "overridden"
                ? `Maintenance window ${id} is already overridden until ${iso(w.override!.endsAt)}; only an active window can be overridden.`
                : `Maintenance window ${id} is ${status}, not active; only an active window can be overridden.`
            })
          }
          const endsAt = now + input.durationSeconds * 1000
          const entry = { reason: input.reason, startedAt: iso(now)!, endedAt: iso(endsAt)! }
          const [updated] = yield* sql.withTransaction(Effect.gen(function*() {
            yield* sql`
              update maintenance_history set overrides = overrides || ${JSON.stringify([entry])}::jsonb
              where window_id = ${w.row.id} and started_at = ${new Date(period.start)}`
            return yield* sql<WindowRow>`
              update maintenance_windows set override_reason = ${input.reason}, override_started_at = ${new Date(now)},
                override_ends_at = ${new Date(endsAt)}
              where id = ${w.row.id}
              returning ${sql.literal(windowColumns)}`
          })).pipe(Effect.orDie)
          w.row = updated!
          w.override = overrideOf(updated!)
          yield* poke
          return toApi(w, now)
        }))
      })

    const get = (orgId: string, id: string) =>
      Effect.gen(function*() {
        const w = yield* find(orgId, id)
        return toApi(w, yield* Clock.currentTimeMillis)
      })

    const list = (orgId: string) =>
      Effect.gen(function*() {
        const now = yield* Clock.currentTimeMillis
        return [...windows.values()]
          .filter((w) => w.row.org_id === orgId)
          .sort((a, b) => a.row.created_at.getTime() - b.row.created_at.getTime() || (a.row.id < b.row.id ? -1 : 1))
          .map((w) => toApi(w, now))
      })

    const active = (orgId: string) =>
      Effect.gen(function*() {
        const now = yield* Clock.currentTimeMillis
        const out: Array<{ id: string; name: string; monitorIds: ReadonlyArray<string>; startedAt: string; endsAt: string; remainingSeconds: number }> = []
        for (const w of windows.values()) {
          if (w.row.org_id !== orgId) continue
          const p = suppressingPeriod(w, now)
          if (p === undefined) continue
          out.push({
            id: w.row.id,
            name: w.row.name,
            monitorIds: w.row.monitor_ids,
            startedAt: iso(p.start)!,
            endsAt: iso(p.end)!,
            remainingSeconds: Math.max(0, Math.ceil((p.end - now) / 1000))
          })
        }
        return out.sort((a, b) => a.endsAt.localeCompare(b.endsAt) || a.id.localeCompare(b.id))
      })

    const history = (orgId: string, params: { readonly from?: string | undefined; readonly to?: string | undefined }) =>
      Effect.gen(function*() {
        const now = yield* Clock.currentTimeMillis
        const day = (value: string, path: "from" | "to") => {
          const t = parseDay(value)
          return t === undefined
            ? Effect.fail(new ValidationError({ path, message: `${path} must be a date of the form YYYY-MM-DD ${INSTANT_RANGE_TEXT} (got '${excerpt(value)}').` }))
            : Effect.succeed(t)
        }
        const to = params.to === undefined ? Math.floor(now / DAY_MS) * DAY_MS : yield* day(params.to, "to")
        const from = params.from === undefined ? to - 30 * DAY_MS : yield* day(params.from, "from")
        if (from > to) {
          return yield* new ValidationError({ path: "from", message: `from (${params.from}) must not be after to (${params.to ?? iso(to)!.slice(0, 10)}).` })
        }
        const rows = yield* sql<HistoryRow>`
          select window_id, name, monitor_ids, started_at, ends_at, ended_at, end_reason, overrides, suppressed_incidents
          from maintenance_history
          where org_id = ${orgId} and started_at <= ${new Date(to + DAY_MS)}
            and (ended_at is null or ended_at >= ${new Date(from)})
          order by started_at desc, window_id
          limit 10000`.pipe(Effect.orDie)
        return rows.map((r): HistoryEntry => {
          const end = r.ended_at?.getTime() ?? r.ends_at.getTime()
          return {
            windowId: r.window_id,
            name: r.name,
            monitorIds: r.monitor_ids,
            startedAt: r.started_at.toISOString(),
            endedAt: iso(r.ended_at),
            endsAt: r.ends_at.toISOString(),
            endReason: r.end_reason,
            overrides: r.overrides.map((o) => ({
              reason: o.reason,
              startedAt: o.startedAt,
              endedAt: Date.parse(o.endedAt) > end ? iso(end)! : o.endedAt
            })),
            suppressedIncidents: r.suppressed_incidents
          }
        })
      })

    const parseFrom = (value: string | undefined, now: number) =>
      value === undefined
        ? Effect.succeed(now)
        : Either.match(parseInstant(value, "from"), { onLeft: (e) => Effect.fail(invalid(e)), onRight: Effect.succeed })

    const toPeriods = (periods: ReadonlyArray<Period>) => ({
      occurrences: periods.map((p) => ({ start: iso(p.start)!, end: iso(p.end)! }))
    })

    const occurrences = (orgId: string, id: string, params: { readonly from?: string | undefined; readonly count?: number | undefined }) =>
      Effect.gen(function*() {
        const w = yield* find(orgId, id)
        const from = yield* parseFrom(params.from, yield* Clock.currentTimeMillis)
        return toPeriods(periodsFrom(w.schedule, from, params.count ?? 10))
      })

    const preview = (input: PreviewWindowRequest) =>
      Effect.gen(function*() {
        const now = yield* Clock.currentTimeMillis
        const schedule = yield* checkSchedule(input, now)
        const from = yield* parseFrom(input.from, now)
        return toPeriods(periodsFrom(schedule, from, input.count ?? 10))
      })

    /** The engine suppressed an incident: count it on each suppressing period's history row. */
    const countSuppressed = (monitorId: string, _type: IncidentType, at: number) =>
      lock.withPermits(1)(Effect.gen(function*() {
        const ids = byMonitor.get(monitorId)
        if (ids === undefined) return
        const now = yield* Clock.currentTimeMillis
        for (const id of [...ids]) {
          const w = windows.get(id)
          const p = w === undefined ? undefined : suppressingPeriod(w, at)
          if (w === undefined || p === undefined) continue
          const bump = sql<{ id: string }>`
            update maintenance_history set suppressed_incidents = suppressed_incidents + 1
            where window_id = ${w.row.id} and started_at = ${new Date(p.start)} returning id`
          if ((yield* bump).length > 0) continue
          if (p.start <= now && now < p.end) {
            // The period began a moment ago and the scheduler has not written it yet.
            yield* reconcile(w, now)
            yield* bump
          } else {
            // A period that ended while nobody recorded it (the service was down): record it now.
            yield* sql`
              insert into maintenance_history (window_id, org_id, name, monitor_ids, started_at, ends_at, ended_at, end_reason,
                suppressed_incidents)
              values (${w.row.id}, ${w.row.org_id}, ${w.row.name}, ${w.row.monitor_ids as Array<string>}::uuid[],
                ${new Date(p.start)}, ${new Date(p.end)}, ${new Date(Math.min(p.end, now))}, 'completed', 1)
              on conflict (window_id, started_at) do update
                set suppressed_incidents = maintenance_history.suppressed_incidents + 1`
          }
        }
      })).pipe(Effect.catchAllCause((cause) => Effect.logError(`could not count a suppressed incident of monitor ${monitorId}`, cause)))

    /** Resolves once the scheduler has nothing in hand (tests). Polls in real time, whatever the Clock. */
    const idle = Effect.gen(function*() {
      for (;;) {
        if (!busy) {
          // Take and give back the lock: anything in hand finishes first.
          yield* lock.withPermits(1)(Effect.void)
          if (!busy) return
        }
        yield* Effect.promise(() => new Promise((resolve) => setTimeout(resolve, 2)))
      }
    })

    return {
      inMaintenance,
      monitorInfo,
      countSuppressed,
      create,
      update,
      remove,
      override,
      get,
      list,
      active,
      history,
      occurrences,
      preview,
      idle,
      size: () => windows.size
    } as const
  })
}) {}

/** The maintenance service, with the engine's MaintenanceCheck and MaintenanceSuppressions over it. */
export const MaintenanceLive = Layer.mergeAll(
  Layer.effect(MaintenanceCheck, Effect.map(Maintenance, (m) => ({ inMaintenance: m.inMaintenance }))),
  Layer.effect(MaintenanceSuppressions, Effect.map(Maintenance, (m) => ({ count: m.countSuppressed })))
).pipe(Layer.provideMerge(Maintenance.Default))
