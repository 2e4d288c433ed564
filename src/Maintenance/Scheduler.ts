import { SqlClient } from "@effect/sql"
import { Clock, Effect, Queue } from "effect"
import type { IncidentType } from "../Engine/Model.js"
import { iso } from "../Domain/Instant.js"
import { Events } from "../Events/Events.js"
import { MaintenanceIndex } from "./MaintenanceIndex.js"
import { type EndReason, MaintenanceRepo, type WindowRow } from "./MaintenanceRepo.js"
import { nextPeriodAfter, overrideCovers, type Period } from "./Model.js"
import { maintenanceEnded, maintenanceStarted, maintenanceUpcoming, type WindowFacts } from "./Payloads.js"
import { type IndexedWindow, periodOf } from "./WindowIndex.js"

/**
 * The transitions of maintenance windows and their record (docs/maintenance.md#lifecycle-and-the-scheduler).
 * One fiber sleeps on the Clock until the next transition of any window (a period's start or end, an
 * override's end, a maintenance.upcoming instant) and brings every window's history up to now then:
 * history rows, maintenance.upcoming / started / ended events, and overrides on the running period's
 * row. History rows are unique per (window, period start): a restart while a period runs finds its
 * row. Everything that writes a window or its history, the API included, runs under one lock
 * (`serialized`), so the API and the fiber never write the same window at once.
 */

/** The history row of a window's running period, as stored (ended_at null). */
interface OpenPeriod {
  readonly startedAt: number
  endsAt: number
  name: string
  monitorIds: ReadonlyArray<string>
}

/** What has been recorded of a window. */
interface Recorded {
  open: OpenPeriod | undefined
  /** The period start for which maintenance.upcoming was recorded. */
  upcomingFor: number | undefined
}

/** How long the scheduler sleeps at most, and after a failed pass. */
const MAX_SLEEP_MS = 3_600_000
const RETRY_MS = 5_000

const sameIds = (a: ReadonlyArray<string>, b: ReadonlyArray<string>) => a.length === b.length && a.every((x, i) => x === b[i])

const factsOf = (row: WindowRow): WindowFacts => ({
  id: row.id,
  orgId: row.org_id,
  name: row.name,
  monitorIds: row.monitor_ids,
  reason: row.reason,
  timezone: row.timezone,
  channels: row.notifications.channels
})

const periodRecord = (row: WindowRow, p: { readonly start: number; readonly end: number }) => ({
  windowId: row.id,
  startedAt: new Date(p.start),
  endsAt: new Date(p.end),
  name: row.name,
  monitorIds: row.monitor_ids
})

/** The next instant at which something about this window changes. */
const nextTransition = (w: IndexedWindow, upcomingFor: number | undefined, now: number): number | undefined => {
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
    if (before !== null && before > 0 && upcomingFor !== n.start) consider(n.start - before * 1000)
  }
  return next
}

export class MaintenanceScheduler extends Effect.Service<MaintenanceScheduler>()("jobmon/MaintenanceScheduler", {
  dependencies: [MaintenanceRepo.Default, MaintenanceIndex.Default, Events.Default],
  scoped: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const repo = yield* MaintenanceRepo
    const index = yield* MaintenanceIndex
    const events = yield* Events
    const lock = yield* Effect.makeSemaphore(1)
    const wake = yield* Queue.sliding<void>(1)
    const recorded = new Map<string, Recorded>()
    let busy = false

    const recordOf = (windowId: string): Recorded => {
      let r = recorded.get(windowId)
      if (r === undefined) recorded.set(windowId, (r = { open: undefined, upcomingFor: undefined }))
      return r
    }

    /** Writes the running period's history row (and maintenance.started); idempotent per (window, start). */
    const openPeriod = (w: IndexedWindow, p: Period, now: number) =>
      Effect.gen(function*() {
        const row = w.row
        yield* sql.withTransaction(
          Effect.gen(function*() {
            const written = yield* repo.openHistory(row.org_id, periodRecord(row, p))
            if (written && row.notifications.onStart) yield* events.record(maintenanceStarted(factsOf(row), p, now))
          })
        )
        recordOf(row.id).open = { startedAt: p.start, endsAt: p.end, name: row.name, monitorIds: row.monitor_ids }
      })

    /** Closes the running period's history row (and maintenance.ended). */
    const closePeriod = (w: IndexedWindow, endedAt: number, reason: EndReason, now: number) =>
      Effect.gen(function*() {
        const r = recordOf(w.row.id)
        const open = r.open
        if (open === undefined) return
        const row = w.row
        yield* sql.withTransaction(
          Effect.gen(function*() {
            const closed = yield* repo.closeHistory(row.id, new Date(open.startedAt), new Date(endedAt), reason)
            if (closed && row.notifications.onEnd) {
              yield* events.record(maintenanceEnded(factsOf(row), { start: open.startedAt, end: open.endsAt }, endedAt, reason, now))
            }
          })
        )
        r.open = undefined
      })

    /** maintenance.upcoming once per period, beforeStart seconds before it. */
    const noticeUpcoming = (w: IndexedWindow, now: number) =>
      Effect.gen(function*() {
        const before = w.row.notifications.beforeStart
        if (before === null || before <= 0) return
        const next = nextPeriodAfter(w.schedule, now)
        const r = recordOf(w.row.id)
        if (next === undefined || r.upcomingFor === next.start || next.start - before * 1000 > now) return
        const row = w.row
        yield* sql.withTransaction(
          Effect.gen(function*() {
            const fresh = yield* repo.recordUpcomingNotice(row.id, new Date(next.start))
            if (fresh) yield* events.record(maintenanceUpcoming(factsOf(row), next, before, now))
          })
        )
        r.upcomingFor = next.start
      })

    /**
     * Brings a window's history up to `now`: closes a period that is over (completed at its end) or
     * no longer the running one (`reason`, now), opens the running one, keeps its row current.
     */
    const reconcile = (w: IndexedWindow, now: number, reason: "updated" | "completed" = "updated") =>
      Effect.gen(function*() {
        const p = periodOf(w, now)
        const r = recordOf(w.row.id)
        const open = r.open
        if (open !== undefined && (p === undefined || p.start !== open.startedAt)) {
          const over = now >= open.endsAt
          yield* closePeriod(w, over ? open.endsAt : now, over ? "completed" : reason, now)
        }
        if (p !== undefined) {
          const current = r.open
          if (current === undefined) {
            yield* openPeriod(w, p, now)
          } else if (current.endsAt !== p.end || current.name !== w.row.name || !sameIds(current.monitorIds, w.row.monitor_ids)) {
            yield* repo.refreshOpenHistory(periodRecord(w.row, { start: current.startedAt, end: p.end }))
            current.endsAt = p.end
            current.name = w.row.name
            current.monitorIds = w.row.monitor_ids
          }
        }
        yield* noticeUpcoming(w, now)
      })

    /** A deleted window: what is over is closed first, then the running period ends now, "deleted". */
    const endByDeletion = (w: IndexedWindow, now: number) =>
      Effect.zipRight(
        reconcile(w, now, "updated"),
        Effect.suspend(() => (recordOf(w.row.id).open !== undefined ? closePeriod(w, now, "deleted", now) : Effect.void))
      )

    /** The window left the index: nothing more is recorded of it. */
    const forget = (windowId: string) => {
      recorded.delete(windowId)
    }

    /** Lets alerts through from `now` to `endsAt` in the running `period`: on the window and on the period's row. */
    const override = (w: IndexedWindow, period: Period, reason: string, now: number, endsAt: number) =>
      Effect.gen(function*() {
        const entry = { reason, startedAt: iso(now), endedAt: iso(endsAt) }
        const updated = yield* sql.withTransaction(
          Effect.zipRight(
            repo.appendOverride(w.row.id, new Date(period.start), entry),
            repo.setOverride(w.row.id, reason, new Date(now), new Date(endsAt))
          )
        )
        index.overridden(w, updated)
      })

    // ---- the fiber ---------------------------------------------------------------------------------

    const pass = Effect.gen(function*() {
      const now = yield* Clock.currentTimeMillis
      let failed = false
      for (const w of index.all()) {
        yield* reconcile(w, now, "completed").pipe(
          Effect.catchAllCause((cause) =>
            Effect.sync(() => {
              failed = true
            }).pipe(Effect.zipRight(Effect.logError(`maintenance window ${w.row.id}: could not record its transition`, cause)))
          )
        )
      }
      let next: number | undefined
      for (const w of index.all()) {
        const t = nextTransition(w, recorded.get(w.row.id)?.upcomingFor, now)
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

    /** Wakes the fiber: a window changed, its next transition may be sooner. */
    const poke = Queue.offer(wake, undefined)

    /** The engine suppressed an incident: count it on each suppressing period's history row. */
    const countSuppressed = (monitorId: string, _type: IncidentType, at: number) =>
      lock.withPermits(1)(Effect.gen(function*() {
        const suppressing = index.suppressing(monitorId, at)
        if (suppressing.length === 0) return
        const now = yield* Clock.currentTimeMillis
        for (const { p, w } of suppressing) {
          const bump = repo.countSuppressed(w.row.id, new Date(p.start))
          if (yield* bump) continue
          if (p.start <= now && now < p.end) {
            // The period began a moment ago and the scheduler has not written it yet.
            yield* reconcile(w, now)
            yield* bump
          } else {
            // A period that ended while nobody recorded it (the service was down): record it now.
            yield* repo.insertSuppressedPeriod(w.row.org_id, periodRecord(w.row, p), new Date(Math.min(p.end, now)))
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

    // ---- start-up ----------------------------------------------------------------------------------

    // The index holds the windows; what was recorded of them before this start comes from the history.
    for (const h of yield* repo.loadOpenHistory) {
      if (index.get(h.window_id) === undefined) continue
      const startedAt = h.started_at.getTime()
      recordOf(h.window_id).open = { startedAt, endsAt: h.ends_at.getTime(), name: h.name, monitorIds: h.monitor_ids }
    }
    for (const u of yield* repo.loadUpcomingNotices) {
      if (index.get(u.window_id) !== undefined) recordOf(u.window_id).upcomingFor = u.period_start.getTime()
    }
    yield* Effect.forkScoped(scheduler)

    return {
      serialized: lock.withPermits(1),
      reconcile,
      endByDeletion,
      forget,
      override,
      poke,
      countSuppressed,
      idle
    } as const
  })
}) {}
