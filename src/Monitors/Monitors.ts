import { SqlClient } from "@effect/sql"
import { Clock, Effect, Either, Option, Queue } from "effect"
import { type Change, News } from "../Cluster/News.js"
import { AppConfig } from "../Config.js"
import { Conflict, notFound, ValidationError } from "../Domain/Errors.js"
import { isUuid } from "../Domain/Ids.js"
import { iso } from "../Domain/Instant.js"
import { Engine } from "../Engine/Engine.js"
import { Events } from "../Events/Events.js"
import { changedMonitorFields, monitorCreated, monitorDeleted, monitorUpdated } from "../Events/Payloads.js"
import {
  type CreateMonitorRequest,
  type ListMonitorsParams,
  type Monitor,
  MonitorStatus,
  type MonitorSummary,
  type UpdateMonitorRequest
} from "./Api.js"
import { listQuery, pageNumber, pageOf } from "./Listing.js"
import { MonitorCache } from "./MonitorCache.js"
import { scheduleOf } from "./StoredSchedule.js"
import { type MonitorRow, MonitorsRepo, type MonitorSettings } from "./MonitorsRepo.js"
import { nextOccurrence, type Schedule, type ScheduleInput, validateSchedule } from "./Schedule.js"

export const DEFAULT_GRACE_SECONDS = 60
export const DEFAULT_MAX_OUTPUT_KB = 10

/** The first time a run is expected after `from`: the next cron occurrence, or from + interval. */
export const firstExpected = (schedule: Schedule, from: number): Date | null => {
  const next = nextOccurrence(schedule, from)
  return next === undefined ? null : new Date(next)
}

/**
 * The Monitor resource. `maintenance` is the maintenance window suppressing the monitor's incidents
 * now (Maintenance.monitorInfo), or null / omitted when none does.
 */
export const toMonitor = (row: MonitorRow, maintenance: Monitor["maintenance"] = null): Monitor => ({
  id: row.id,
  name: row.name,
  slug: row.slug,
  schedule: { type: row.schedule_type, expression: row.schedule_expression, timezone: row.timezone },
  status: (row.paused ? "PAUSED" : row.status) as Monitor["status"],
  healthScore: row.health_score,
  createdAt: row.created_at.toISOString(),
  updatedAt: row.updated_at.toISOString(),
  graceSeconds: row.grace_seconds,
  maxRuntimeSeconds: row.max_runtime_seconds,
  maxOutputSizeKb: row.max_output_size_kb,
  captureOutput: row.capture_output,
  sla: row.sla,
  tags: row.tags,
  autoResolve: row.auto_resolve,
  failureThreshold: row.failure_threshold,
  recoveryThreshold: row.recovery_threshold,
  paused: row.paused,
  lastPingAt: iso(row.last_ping_at),
  nextExpectedAt: iso(row.next_expected_at),
  inMaintenance: maintenance !== null,
  maintenance
})

export const checkSchedule = (input: ScheduleInput, path = "schedule") =>
  Either.match(validateSchedule(input), {
    onLeft: (error) =>
      Effect.fail(new ValidationError({ path: `${path}.${error.field}`, message: `${path}.${error.field}: ${error.message}` })),
    onRight: (schedule) => Effect.succeed(schedule)
  })

const monitorNotFound = (id: string) => notFound("Monitor", id)

/** A unique index refused the row: the only one a monitor's settings can break is the slug's. */
const isUniqueViolation = (e: unknown): boolean => {
  const cause = (e as { cause?: { code?: string; constraint_name?: string } } | undefined)?.cause
  return cause?.code === "23505"
}
const slugTaken = (slug: string | null) =>
  Effect.fail(
    new Conflict({
      message: `Another monitor of this organization already has the slug ${JSON.stringify(slug)}; slugs are unique: ` +
        "choose another, or change that monitor (GET /api/monitors?slug=... finds it)."
    })
  )

export class Monitors extends Effect.Service<Monitors>()("jobmon/Monitors", {
  dependencies: [MonitorsRepo.Default, MonitorCache.Default, Events.Default, Engine.Default, News.Default],
  scoped: Effect.gen(function*() {
    const repo = yield* MonitorsRepo
    const cache = yield* MonitorCache
    const sql = yield* SqlClient.SqlClient
    const events = yield* Events
    const engine = yield* Engine
    const news = yield* News
    const maxMonitors = (yield* AppConfig).maxMonitorsPerOrg

    const find = (orgId: string, id: string) =>
      Effect.gen(function*() {
        if (!isUuid(id)) return yield* monitorNotFound(id)
        const row = yield* repo.findById(orgId, id)
        if (row === undefined) return yield* monitorNotFound(id)
        return row
      })

    const create = (orgId: string, input: CreateMonitorRequest) =>
      Effect.gen(function*() {
        const schedule = yield* checkSchedule(input.schedule)
        const now = yield* Clock.currentTimeMillis
        const settings: MonitorSettings = {
          name: input.name.trim(),
          scheduleType: schedule.type,
          scheduleExpression: schedule.expression,
          timezone: schedule.timezone,
          graceSeconds: input.graceSeconds ?? DEFAULT_GRACE_SECONDS,
          maxRuntimeSeconds: input.maxRuntimeSeconds ?? null,
          maxOutputSizeKb: input.maxOutputSizeKb ?? DEFAULT_MAX_OUTPUT_KB,
          captureOutput: input.captureOutput ?? true,
          sla: input.sla ?? null,
          tags: input.tags ?? [],
          autoResolve: input.autoResolve ?? true,
          failureThreshold: input.failureThreshold ?? 1,
          recoveryThreshold: input.recoveryThreshold ?? 1,
          slug: input.slug ?? null
        }
        // The quota check, the change and its event commit together (docs/events.md).
        const row = yield* sql.withTransaction(
          Effect.gen(function*() {
            if (maxMonitors > 0 && (yield* repo.lockAndCount(orgId)) >= maxMonitors) {
              return yield* new Conflict({
                message: `This organization already has ${maxMonitors.toLocaleString("en-US")} monitors, the most it may have ` +
                  `(the operator's MAX_MONITORS_PER_ORG); delete monitors it no longer needs before creating more.`
              })
            }
            const row = yield* repo.insert(orgId, settings, firstExpected(schedule, now), new Date(now))
            yield* events.record(monitorCreated(orgId, toMonitor(row), now))
            return row
          })
        ).pipe(
          Effect.catchTag("SqlError", (e) => Effect.die(e)),
          Effect.catchSomeDefect((d) => isUniqueViolation(d) ? Option.some(slugTaken(settings.slug)) : Option.none())
        )
        yield* cache.put(row)
        yield* engine.upsert(row, now)
        yield* news.publish({ k: "monitor", orgId, id: row.id })
        return row
      })

    const update = (orgId: string, id: string, input: UpdateMonitorRequest) =>
      Effect.gen(function*() {
        const current = yield* find(orgId, id)
        const schedule = input.schedule === undefined ? scheduleOf(current) : yield* checkSchedule(input.schedule)
        const now = yield* Clock.currentTimeMillis
        const scheduleChanged = schedule.type !== current.schedule_type ||
          schedule.expression !== current.schedule_expression || schedule.timezone !== current.timezone
        const settings: MonitorSettings = {
          name: input.name?.trim() ?? current.name,
          scheduleType: schedule.type,
          scheduleExpression: schedule.expression,
          timezone: schedule.timezone,
          graceSeconds: input.graceSeconds ?? current.grace_seconds,
          maxRuntimeSeconds: input.maxRuntimeSeconds === undefined ? current.max_runtime_seconds : input.maxRuntimeSeconds,
          maxOutputSizeKb: input.maxOutputSizeKb ?? current.max_output_size_kb,
          captureOutput: input.captureOutput ?? current.capture_output,
          sla: input.sla === undefined ? current.sla : input.sla,
          tags: input.tags ?? current.tags,
          autoResolve: input.autoResolve ?? current.auto_resolve,
          failureThreshold: input.failureThreshold ?? current.failure_threshold,
          recoveryThreshold: input.recoveryThreshold ?? current.recovery_threshold,
          slug: input.slug === undefined ? current.slug : input.slug
        }
        // A new schedule is expected afresh from now (or from the last ping, for intervals).
        const nextExpectedAt = scheduleChanged
          ? firstExpected(schedule, schedule.type === "interval" ? (current.last_ping_at?.getTime() ?? now) : now)
          : current.next_expected_at
        const row = yield* sql.withTransaction(
          Effect.tap(repo.update(orgId, id, settings, nextExpectedAt, new Date(now)), (row) => {
            const changes = row === undefined ? [] : changedMonitorFields(toMonitor(current), toMonitor(row))
            return row === undefined || changes.length === 0
              ? Effect.void
              : events.record(monitorUpdated(orgId, toMonitor(row), changes, now))
          })
        ).pipe(
          Effect.orDie,
          Effect.catchSomeDefect((d) => isUniqueViolation(d) ? Option.some(slugTaken(settings.slug)) : Option.none())
        )
        if (row === undefined) return yield* monitorNotFound(id)
        yield* cache.put(row)
        yield* engine.upsert(row, now)
        yield* news.publish({ k: "monitor", orgId, id })
        return row
      })

    const setPaused = (orgId: string, id: string, paused: boolean) =>
      Effect.gen(function*() {
        const current = yield* find(orgId, id)
        const now = yield* Clock.currentTimeMillis
        // Resuming expects the next run from now on: what fell due while paused is not held against the job.
        const next = paused ? current.next_expected_at : firstExpected(scheduleOf(current), now)
        const row = yield* sql.withTransaction(
          Effect.tap(repo.setPaused(orgId, id, paused, next, new Date(now)), (row) =>
            row === undefined || row.paused === current.paused
              ? Effect.void
              : events.record(monitorUpdated(orgId, toMonitor(row), ["paused"], now)))
        ).pipe(Effect.orDie)
        if (row === undefined) return yield* monitorNotFound(id)
        yield* engine.upsert(row, now)
        yield* news.publish({ k: "monitor", orgId, id })
        return row
      })

    const remove = (orgId: string, id: string) =>
      Effect.gen(function*() {
        const current = yield* find(orgId, id)
        const now = yield* Clock.currentTimeMillis
        const deleted = yield* sql.withTransaction(
          Effect.tap(repo.softDelete(orgId, id, new Date(now)), (deleted) =>
            deleted ? events.record(monitorDeleted(orgId, toMonitor(current), now)) : Effect.void)
        ).pipe(Effect.orDie)
        if (!deleted) return yield* monitorNotFound(id)
        yield* cache.remove(id)
        yield* engine.stop(id)
        yield* news.publish({ k: "monitorDeleted", orgId, id })
      })

    // Cluster mode: a monitor changed on another instance. Its ping cache follows, and its actor if
    // this instance owns it. One change at a time, in the order they were published.
    if (news.clustered) {
      const changes = yield* Queue.unbounded<Change>()
      yield* news.onChange((change) => {
        if (change.k === "monitor" || change.k === "monitorDeleted") Queue.unsafeOffer(changes, change)
      })
      const apply = (change: Change) =>
        Effect.gen(function*() {
          if (change.k === "monitorDeleted") {
            yield* cache.remove(change.id)
            yield* engine.stop(change.id)
            return
          }
          if (change.k !== "monitor") return
          const row = yield* repo.findById(change.orgId, change.id)
          const now = yield* Clock.currentTimeMillis
          if (row === undefined) {
            yield* cache.remove(change.id)
            yield* engine.stop(change.id)
            return
          }
          yield* cache.put(row)
          yield* engine.upsert(row, now)
        }).pipe(Effect.catchAllCause((cause) => Effect.logError(`cluster: could not apply a change of monitor ${change.k === "monitor" || change.k === "monitorDeleted" ? change.id : ""}`, cause)))
      yield* Queue.take(changes).pipe(Effect.flatMap(apply), Effect.forever, Effect.forkScoped)
    }

    /** A page of the list the parameters ask for (src/Monitors/Listing.ts), or a 400 naming a parameter. */
    const list = (orgId: string, params: ListMonitorsParams) =>
      Effect.gen(function*() {
        const query = yield* listQuery(params)
        const { rows, counts } = yield* repo.list(orgId, query)
        const page = pageOf(query, rows)
        return {
          rows: page.rows,
          total: counts.total,
          page: pageNumber(query, counts.up_to_cursor),
          limit: query.limit,
          nextCursor: page.nextCursor
        }
      })

    /** The organization's monitors counted by status, and its tags. */
    const summary = (orgId: string) =>
      Effect.map(repo.summary(orgId), ({ statuses, tags }): MonitorSummary => {
        const byStatus: Record<string, number> = Object.fromEntries(MonitorStatus.literals.map((s) => [s, 0]))
        for (const { status, count } of statuses) {
          // A status the API does not know (written by hand) counts in the total only.
          if (status in byStatus) byStatus[status] = count
        }
        return {
          total: statuses.reduce((sum, s) => sum + s.count, 0),
          byStatus: byStatus as MonitorSummary["byStatus"],
          tags
        }
      })

    /** A new ping capability: the monitor's old ping URL stops working at once (404). */
    const rotatePingId = (orgId: string, id: string) =>
      Effect.gen(function*() {
        yield* find(orgId, id)
        const now = yield* Clock.currentTimeMillis
        const row = yield* repo.rotatePingId(orgId, id, new Date(now))
        if (row === undefined) return yield* monitorNotFound(id)
        yield* cache.put(row)
        yield* news.publish({ k: "monitor", orgId, id })
        return row
      })

    const findBySlug = (orgId: string, slug: string) => repo.findBySlug(orgId, slug)

    return { find, findBySlug, create, update, setPaused, remove, list, summary, rotatePingId } as const
  })
}) {}
