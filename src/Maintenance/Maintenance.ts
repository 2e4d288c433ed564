import { SqlClient } from "@effect/sql"
import { Clock, Effect, Either, Layer } from "effect"
import { AppConfig } from "../Config.js"
import { Conflict, NotFound, ValidationError } from "../Domain/Errors.js"
import { isUuid } from "../Domain/Ids.js"
import { INSTANT_RANGE_TEXT, iso } from "../Domain/Instant.js"
import { excerpt } from "../Domain/Text.js"
import { MaintenanceCheck } from "../Engine/Engine.js"
import { Events } from "../Events/Events.js"
import type {
  ActiveWindow,
  CreateWindowRequest,
  HistoryEntry,
  MaintenanceWindow,
  PreviewWindowRequest,
  UpdateWindowRequest
} from "./Api.js"
import { MaintenanceIndex } from "./MaintenanceIndex.js"
import { type HistoryRow, MaintenanceRepo, type ScheduleColumns } from "./MaintenanceRepo.js"
import {
  DAY_MS,
  type FieldError,
  parseDay,
  parseInstant,
  type Period,
  periodsFrom,
  validateNotifications,
  validateWindowSchedule,
  type WindowSchedule
} from "./Model.js"
import { MaintenanceScheduler } from "./Scheduler.js"
import { type IndexedWindow, remainingSeconds, statusOf, suppressingPeriod } from "./WindowIndex.js"

/**
 * Maintenance windows through the API (docs/maintenance.md): create, change, delete, override,
 * preview, occurrences, history. A change is written, put in the index (MaintenanceIndex) and
 * brought up to now by the scheduler (MaintenanceScheduler) in one step under the scheduler's lock,
 * then the scheduler is woken for the window's next transition and the other instances are told
 * (`changed`). Under the lock a change starts from the window as stored (`current`: with several
 * instances another one may have changed it); reads wait until this instance has heard every change
 * committed before them (`synced`).
 */

const invalid = (error: FieldError) => new ValidationError({ path: error.path, message: error.message })
const windowNotFound = (id: string) => new NotFound({ message: `Maintenance window ${excerpt(id)} does not exist` })

const fromEither = <A>(result: Either.Either<A, FieldError>) =>
  Either.match(result, { onLeft: (e) => Effect.fail(invalid(e)), onRight: Effect.succeed })

const scheduleColumns = (s: WindowSchedule): ScheduleColumns => ({
  start: new Date(s.start),
  end: s.kind === "one-time" ? new Date(s.end) : null,
  rrule: s.kind === "recurring" ? s.rrule : null,
  duration: s.kind === "recurring" ? s.durationSeconds : null,
  timezone: s.timezone
})

const toApi = (w: IndexedWindow, now: number): MaintenanceWindow => {
  const { next, overridden, period, status } = statusOf(w, now)
  const row = w.row
  return {
    id: row.id,
    name: row.name,
    monitorIds: row.monitor_ids,
    kind: row.rrule === null ? "one-time" : "recurring",
    start: iso(row.start_at),
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
    createdAt: iso(row.created_at),
    updatedAt: iso(row.updated_at)
  }
}

/** A history row as the API shows it: an override never reaches past the end of its period. */
const toHistoryEntry = (r: HistoryRow): HistoryEntry => {
  const end = r.ended_at?.getTime() ?? r.ends_at.getTime()
  return {
    windowId: r.window_id,
    name: r.name,
    monitorIds: r.monitor_ids,
    startedAt: iso(r.started_at),
    endedAt: iso(r.ended_at),
    endsAt: iso(r.ends_at),
    endReason: r.end_reason,
    overrides: r.overrides.map((o) => ({
      reason: o.reason,
      startedAt: o.startedAt,
      endedAt: Date.parse(o.endedAt) > end ? iso(end) : o.endedAt
    })),
    suppressedIncidents: r.suppressed_incidents
  }
}

const toOccurrences = (periods: ReadonlyArray<Period>) => ({
  occurrences: periods.map((p) => ({ start: iso(p.start), end: iso(p.end) }))
})

export class Maintenance extends Effect.Service<Maintenance>()("jobmon/Maintenance", {
  dependencies: [MaintenanceRepo.Default, MaintenanceIndex.Default, MaintenanceScheduler.Default],
  effect: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const maxWindows = (yield* AppConfig).maxMaintenanceWindowsPerOrg
    const repo = yield* MaintenanceRepo
    const index = yield* MaintenanceIndex
    const scheduler = yield* MaintenanceScheduler

    /** The organization's window as this instance holds it, once it has heard the changes made before. */
    const find = (orgId: string, id: string) =>
      Effect.zipRight(
        scheduler.synced,
        Effect.suspend(() => {
          const w = index.find(orgId, id)
          return w === undefined ? Effect.fail(windowNotFound(id)) : Effect.succeed(w)
        })
      )

    /** Runs `change` under the lock on the organization's window as it is now (404 when it is gone). */
    const withWindow = <A, E, R>(orgId: string, id: string, change: (w: IndexedWindow) => Effect.Effect<A, E, R>) =>
      isUuid(id)
        ? scheduler.serialized(
          Effect.flatMap(scheduler.current(id.toLowerCase()), (w): Effect.Effect<A, E | NotFound, R> =>
            w === undefined || w.row.org_id !== orgId ? Effect.fail(windowNotFound(id)) : change(w))
        )
        : Effect.fail(windowNotFound(id))

    const checkMonitors = (orgId: string, ids: ReadonlyArray<string>) =>
      Effect.gen(function*() {
        if (ids.length === 0) {
          return yield* new ValidationError({ path: "monitorIds", message: "monitorIds must list at least one monitor." })
        }
        if (ids.length > 1000) {
          return yield* new ValidationError({ path: "monitorIds", message: "monitorIds may list at most 1000 monitors." })
        }
        const valid = ids.filter(isUuid)
        const known = valid.length === 0 ? new Set<string>() : yield* repo.existingMonitorIds(orgId, valid)
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
      fromEither(validateWindowSchedule(fields, now))

    const checkNotifications = (input: CreateWindowRequest["notifications"]) => fromEither(validateNotifications(input))

    const parseFrom = (value: string | undefined, now: number) =>
      value === undefined ? Effect.succeed(now) : fromEither(parseInstant(value, "from"))

    const create = (orgId: string, input: CreateWindowRequest) =>
      Effect.gen(function*() {
        const now = yield* Clock.currentTimeMillis
        const monitorIds = yield* checkMonitors(orgId, input.monitorIds)
        const schedule = yield* checkSchedule(input, now)
        const notifications = yield* checkNotifications(input.notifications)
        const fields = {
          ...scheduleColumns(schedule),
          name: input.name.trim(),
          monitorIds,
          reason: input.reason ?? null,
          notifications
        }
        return yield* scheduler.serialized(Effect.gen(function*() {
          const row = yield* sql.withTransaction(Effect.gen(function*() {
            if (maxWindows > 0 && (yield* repo.countWindowsLocked(orgId)) >= maxWindows) {
              return yield* new Conflict({
                message: `This organization already has ${maxWindows.toLocaleString("en-US")} maintenance windows, the most it ` +
                  `may have (the operator's MAX_MAINTENANCE_WINDOWS_PER_ORG); delete windows it no longer needs before creating more.`
              })
            }
            return yield* repo.insertWindow(orgId, fields, new Date(now))
          })).pipe(Effect.catchTag("SqlError", (e) => Effect.die(e)))
          const w = index.add(row, schedule)
          yield* scheduler.reconcile(w, now).pipe(Effect.orDie)
          yield* scheduler.changed(orgId, row.id)
          return toApi(w, now)
        }))
      })

    const update = (orgId: string, id: string, input: UpdateWindowRequest) =>
      withWindow(orgId, id, (w) => Effect.gen(function*() {
        const now = yield* Clock.currentTimeMillis
        const row = w.row
        const monitorIds = input.monitorIds === undefined ? row.monitor_ids : yield* checkMonitors(orgId, input.monitorIds)
        const pick = <A>(given: A | undefined, current: A) => (given === undefined ? current : given)
        const schedule = yield* checkSchedule({
          start: pick(input.start, iso(row.start_at)),
          end: pick(input.end, iso(row.end_at)),
          rrule: pick(input.rrule, row.rrule),
          duration: pick(input.duration, row.duration_seconds),
          timezone: pick(input.timezone, row.timezone)
        }, now)
        const notifications = input.notifications === undefined ? row.notifications : yield* checkNotifications(input.notifications)
        const fields = {
          ...scheduleColumns(schedule),
          name: input.name?.trim() ?? row.name,
          monitorIds,
          reason: input.reason === undefined ? row.reason : input.reason,
          notifications
        }
        const updated = yield* repo.updateWindow(row.id, fields, new Date(now))
        if (updated === undefined) return yield* windowNotFound(id)
        index.change(w, updated, schedule)
        yield* scheduler.reconcile(w, now, "updated").pipe(Effect.orDie)
        yield* scheduler.changed(orgId, row.id)
        return toApi(w, now)
      }))

    const remove = (orgId: string, id: string) =>
      withWindow(orgId, id, (w) => Effect.gen(function*() {
        const now = yield* Clock.currentTimeMillis
        // The history up to now and the deletion, in one commit.
        yield* sql.withTransaction(
          Effect.zipRight(scheduler.endByDeletion(w, now), repo.softDeleteWindow(w.row.id, new Date(now)))
        ).pipe(Effect.orDie)
        index.remove(w)
        scheduler.forget(w.row.id)
        yield* scheduler.changed(orgId, w.row.id)
      }))

    const override = (orgId: string, id: string, input: { readonly reason: string; readonly durationSeconds: number }) =>
      withWindow(orgId, id, (w) => Effect.gen(function*() {
        if (input.durationSeconds <= 0) {
          return yield* new ValidationError({
            path: "durationSeconds",
            message: `durationSeconds must be a whole number of seconds greater than 0 (got ${input.durationSeconds}).`
          })
        }
        const now = yield* Clock.currentTimeMillis
        yield* scheduler.reconcile(w, now).pipe(Effect.orDie)
        const { period, status } = statusOf(w, now)
        if (status !== "active" || period === undefined) {
          return yield* new Conflict({
            message: status === "overridden"
              ? `Maintenance window ${id} is already overridden until ${iso(w.override!.endsAt)}; only an active window can be overridden.`
              : `Maintenance window ${id} is ${status}, not active; only an active window can be overridden.`
          })
        }
        yield* scheduler.override(w, period, input.reason, now, now + input.durationSeconds * 1000).pipe(Effect.orDie)
        yield* scheduler.changed(orgId, w.row.id)
        return toApi(w, now)
      }))

    const get = (orgId: string, id: string) =>
      Effect.gen(function*() {
        const w = yield* find(orgId, id)
        return toApi(w, yield* Clock.currentTimeMillis)
      })

    const list = (orgId: string) =>
      Effect.map(Effect.zipRight(scheduler.synced, Clock.currentTimeMillis), (now) =>
        [...index.ofOrg(orgId)]
          .sort((a, b) => a.row.created_at.getTime() - b.row.created_at.getTime() || (a.row.id < b.row.id ? -1 : 1))
          .map((w) => toApi(w, now)))

    const active = (orgId: string) =>
      Effect.map(Effect.zipRight(scheduler.synced, Clock.currentTimeMillis), (now) => {
        const out: Array<typeof ActiveWindow.Type> = []
        for (const w of index.ofOrg(orgId)) {
          const p = suppressingPeriod(w, now)
          if (p === undefined) continue
          out.push({
            id: w.row.id,
            name: w.row.name,
            monitorIds: w.row.monitor_ids,
            startedAt: iso(p.start),
            endsAt: iso(p.end),
            remainingSeconds: remainingSeconds(p.end, now)
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
          return yield* new ValidationError({ path: "from", message: `from (${params.from}) must not be after to (${params.to ?? iso(to).slice(0, 10)}).` })
        }
        const rows = yield* repo.historyBetween(orgId, new Date(from), new Date(to + DAY_MS))
        return rows.map(toHistoryEntry)
      })

    const occurrences = (orgId: string, id: string, params: { readonly from?: string | undefined; readonly count?: number | undefined }) =>
      Effect.gen(function*() {
        const w = yield* find(orgId, id)
        const from = yield* parseFrom(params.from, yield* Clock.currentTimeMillis)
        return toOccurrences(periodsFrom(w.schedule, from, params.count ?? 10))
      })

    const preview = (input: PreviewWindowRequest) =>
      Effect.gen(function*() {
        const now = yield* Clock.currentTimeMillis
        const schedule = yield* checkSchedule(input, now)
        const from = yield* parseFrom(input.from, now)
        return toOccurrences(periodsFrom(schedule, from, input.count ?? 10))
      })

    return {
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
      /** What the monitors API shows: the suppressing window that ends last, or null. */
      monitorInfo: index.monitorInfo,
      /** Resolves once the scheduler has nothing in hand (tests). */
      idle: scheduler.idle
    } as const
  })
}) {}

/**
 * The maintenance services, with the engine's port over them: MaintenanceCheck (defined by the
 * engine; answered by the index, suppressions counted by the scheduler). The engine imports no
 * maintenance service, only its own tag.
 */
export const MaintenanceLive = Layer.mergeAll(
  Layer.effect(
    MaintenanceCheck,
    Effect.gen(function*() {
      const index = yield* MaintenanceIndex
      const scheduler = yield* MaintenanceScheduler
      return { inMaintenance: index.inMaintenance, countSuppressed: scheduler.countSuppressed }
    })
  ),
  Maintenance.DefaultWithoutDependencies
).pipe(
  Layer.provideMerge(MaintenanceScheduler.DefaultWithoutDependencies),
  Layer.provideMerge(MaintenanceIndex.DefaultWithoutDependencies),
  Layer.provideMerge(MaintenanceRepo.Default),
  Layer.provide(Events.Default)
)
