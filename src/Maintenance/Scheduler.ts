import { SqlClient } from "@effect/sql"
import { Clock, Effect, Either, Exit, Queue } from "effect"
import { Background } from "../Cluster/Cluster.js"
import { News } from "../Cluster/News.js"
import type { IncidentType } from "../Engine/Model.js"
import { iso } from "../Domain/Instant.js"
import { Events } from "../Events/Events.js"
import { MaintenanceIndex } from "./MaintenanceIndex.js"
import { type EndReason, MaintenanceRepo, type RecordedRow } from "./MaintenanceRepo.js"
import { nextPeriodAfter, type Period } from "./Model.js"
import { maintenanceEnded, maintenanceStarted, maintenanceUpcoming } from "./Payloads.js"
import { due, factsOf, nextTransition, openOf, type Recorded, periodRecord, sameIds } from "./Transitions.js"
import { type IndexedWindow, periodOf, scheduleOfRow } from "./WindowIndex.js"

/**
 * The transitions of maintenance windows and their record (docs/maintenance.md#lifecycle-and-the-scheduler).
 * One fiber sleeps on the Clock until the next transition of any window (a period's start or end, an
 * override's end, a maintenance.upcoming instant) and brings every window's history up to now then:
 * history rows, maintenance.upcoming / started / ended events, and overrides on the running period's
 * row. History rows are unique per (window, period start): a restart while a period runs finds its
 * row. Everything that writes a window or its history, the API included, runs under one lock
 * (`serialized`), so the API and the fiber never write the same window at once.
 *
 * Several instances (docs/maintenance.md#several-instances): the fiber is a cluster singleton (it
 * reloads what was recorded when it starts on an instance); `serialized` also holds a PostgreSQL
 * advisory lock for its transaction, so writes are one at a time across the instances, and every
 * write first reloads its window and what was recorded of it from the database (`current`,
 * `pass`). A change made through the API is published (`changed`); the other instances reload
 * that window into their index. With one instance memory is the truth and none of this happens.
 */

/** How long the scheduler sleeps at most, and after a failed pass. */
const MAX_SLEEP_MS = 3_600_000
const RETRY_MS = 5_000

export class MaintenanceScheduler extends Effect.Service<MaintenanceScheduler>()("jobmon/MaintenanceScheduler", {
  dependencies: [MaintenanceRepo.Default, MaintenanceIndex.Default, Events.Default, News.Default],
  scoped: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const repo = yield* MaintenanceRepo
    const index = yield* MaintenanceIndex
    const events = yield* Events
    const news = yield* News
    const background = yield* Background
    const clustered = news.clustered
    const lock = yield* Effect.makeSemaphore(1)
    const local = lock.withPermits(1)
    const wake = yield* Queue.sliding<void>(1)
    const recorded = new Map<string, Recorded>()
    let busy = false
    /**
     * Cluster mode: memory may be ahead of or behind the database (a write rolled back, the
     * singleton moved here): the next `serialized` reloads every window and its record first.
     */
    let stale = false

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

    // ---- what is stored: reloads (cluster mode) ------------------------------------------------------

    const setRecorded = (windowId: string, r: RecordedRow) => {
      recorded.set(windowId, { open: r.open === undefined ? undefined : openOf(r.open), upcomingFor: r.upcomingFor?.getTime() })
    }

    /** What was recorded of the windows in the index: their running periods' rows and upcoming notices. */
    const loadRecorded = Effect.gen(function*() {
      const open = yield* repo.loadOpenHistory
      const upcoming = yield* repo.loadUpcomingNotices
      recorded.clear()
      for (const h of open) {
        if (index.get(h.window_id) !== undefined) recordOf(h.window_id).open = openOf(h)
      }
      for (const u of upcoming) {
        if (index.get(u.window_id) !== undefined) recordOf(u.window_id).upcomingFor = u.period_start.getTime()
      }
    })

    /** Every window and its record, as stored (under the lock). */
    const reloadAll = Effect.gen(function*() {
      const rows = yield* repo.loadWindows
      const seen = new Set<string>()
      for (const row of rows) {
        const schedule = scheduleOfRow(row)
        if (Either.isLeft(schedule)) {
          yield* Effect.logError(`maintenance window ${row.id} has a schedule that no longer parses; it is ignored`)
          continue
        }
        seen.add(row.id)
        index.put(row, schedule.right)
      }
      for (const w of index.all()) {
        if (!seen.has(w.row.id)) index.remove(w)
      }
      yield* loadRecorded
      stale = false
    })

    /**
     * One window and its record, as stored (under the lock): the index follows (a deleted window
     * leaves it). Answers the window, or undefined when it no longer exists.
     */
    const refresh = (windowId: string) =>
      Effect.gen(function*() {
        const row = yield* repo.findWindow(windowId)
        const schedule = row === undefined ? undefined : scheduleOfRow(row)
        if (row === undefined || schedule === undefined || Either.isLeft(schedule)) {
          const gone = index.get(windowId)
          if (gone !== undefined) index.remove(gone)
          recorded.delete(windowId)
          return undefined
        }
        const w = index.put(row, schedule.right)
        setRecorded(windowId, yield* repo.loadRecorded(windowId))
        return w
      })

    /** Windows changed by the `serialized` call in progress, told to the other instances once it commits. */
    let unpublished: Array<{ readonly orgId: string; readonly id: string }> = []

    /**
     * Runs `effect` alone: under this instance's lock and, in cluster mode, in a transaction holding
     * the advisory lock of maintenance writes (every write waits for the other instances'). A
     * failure of `effect` commits what it wrote before failing (as its own transactions would with
     * one instance); a defect rolls everything back and memory is reloaded on the next call. The
     * windows it `changed` are published once it committed.
     * Never call `synced` inside: the news waits for this lock.
     */
    const serialized = <A, E, R>(effect: Effect.Effect<A, E, R>): Effect.Effect<A, E, R> =>
      clustered
        ? local(
          Effect.suspend(() => {
            unpublished = []
            return sql.withTransaction(Effect.gen(function*() {
              yield* repo.lockWrites
              if (stale) yield* reloadAll
              return yield* Effect.either(effect)
            }))
          }).pipe(
            Effect.orDie,
            Effect.onExit((exit) => {
              const done = unpublished
              unpublished = []
              return Exit.isFailure(exit)
                ? Effect.sync(() => {
                  stale = true
                })
                : Effect.forEach(done, (c) => news.publish({ k: "maintenance", orgId: c.orgId, id: c.id }), { discard: true })
            }),
            Effect.flatMap(Either.match({ onLeft: (e) => Effect.fail(e), onRight: (a) => Effect.succeed(a) }))
          )
        )
        : local(effect)

    /** Under `serialized`: the window as stored now (cluster mode), or as this instance holds it. */
    const current = (windowId: string): Effect.Effect<IndexedWindow | undefined> =>
      clustered ? refresh(windowId) : Effect.sync(() => index.get(windowId))

    /** Wakes the fiber: a window changed, its next transition may be sooner. */
    const poke = Queue.offer(wake, undefined)

    /** A window was changed here (inside `serialized`): the fiber wakes; the other instances hear it after the commit. */
    const changed = (orgId: string, windowId: string) =>
      Effect.zipRight(
        Effect.sync(() => {
          if (clustered) unpublished.push({ orgId, id: windowId })
        }),
        poke
      )

    // ---- the news of the other instances (cluster mode) -------------------------------------------

    /** Changes heard, and applied to the index: `synced` waits until the second catches up with the first. */
    let heard = 0
    let applied = 0
    let syncWaiters: Array<{ readonly target: number; readonly resume: () => void }> = []

    /**
     * Resolves once this instance's index holds every window change committed before the call, on
     * any instance (cluster mode; at once with one instance): reads answer what was just written.
     */
    const synced: Effect.Effect<void> = clustered
      ? Effect.async<void>((resume) =>
        news.afterCatchUp(() => {
          const target = heard
          if (applied >= target) resume(Effect.void)
          else syncWaiters.push({ target, resume: () => resume(Effect.void) })
        })
      )
      : Effect.void

    if (clustered) {
      const changes = yield* Queue.unbounded<string>()
      yield* news.onChange((change) => {
        if (change.k !== "maintenance") return
        heard++
        Queue.unsafeOffer(changes, change.id)
      })
      // Whatever was committed while nobody listened: everything is read again.
      yield* news.onResync(
        Effect.sync(() => {
          stale = true
        }).pipe(Effect.zipRight(local(reloadAll)), Effect.zipRight(poke))
      )
      // One batch at a time, in order: each window changed is reloaded once.
      const apply = Effect.gen(function*() {
        const first = yield* Queue.take(changes)
        const rest = yield* Queue.takeAll(changes)
        const ids = new Set([first, ...rest])
        yield* local(Effect.forEach(ids, (id) =>
          refresh(id).pipe(Effect.catchAllCause((cause) =>
            Effect.sync(() => {
              stale = true
            }).pipe(Effect.zipRight(Effect.logError(`cluster: could not reload maintenance window ${id}`, cause)))
          )), { discard: true }))
        applied += 1 + rest.length
        const ready = syncWaiters.filter((w) => w.target <= applied)
        syncWaiters = syncWaiters.filter((w) => w.target > applied)
        for (const w of ready) w.resume()
        yield* poke
      })
      yield* Effect.forkScoped(Effect.forever(apply))
      // The index was loaded before the news was heard: what changed in between is read again.
      yield* local(reloadAll)
    }

    // ---- the fiber ---------------------------------------------------------------------------------

    /**
     * One window's transition in a pass. Cluster mode: only a window with something due is reloaded
     * (another instance may have recorded it, or changed the window), then reconciled in a savepoint
     * of the pass's transaction; after a failure everything is read again before the next pass.
     */
    const reconcileInPass = (w: IndexedWindow, now: number) =>
      !clustered ? reconcile(w, now, "completed") : !due(w, recorded.get(w.row.id), now)
        ? Effect.void
        : sql.withTransaction(Effect.flatMap(refresh(w.row.id), (fresh) => (fresh === undefined ? Effect.void : reconcile(fresh, now, "completed")))).pipe(
          Effect.orDie,
          Effect.onError(() =>
            Effect.sync(() => {
              stale = true
            })
          )
        )

    const pass = Effect.gen(function*() {
      const now = yield* Clock.currentTimeMillis
      let failed = false
      for (const w of index.all()) {
        yield* reconcileInPass(w, now).pipe(
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
      // Cluster mode: it may have run on another instance until now; what it recorded there is read first.
      if (clustered) stale = true
      for (;;) {
        busy = true
        const wait = yield* serialized(pass).pipe(
          Effect.catchAllCause((cause) => Effect.as(Effect.logError("maintenance scheduler pass failed", cause), RETRY_MS))
        )
        busy = false
        yield* Effect.raceFirst(Effect.sleep(wait), Queue.take(wake))
      }
    }).pipe(Effect.ensuring(Effect.sync(() => {
      busy = false
    })))

    /**
     * The engine suppressed an incident: count it on each suppressing period's history row. Most
     * counts are one update of a row that exists; a period without its row yet is written under the
     * lock (on any instance: the engine calls this on the monitor's owner).
     */
    const countSuppressed = (monitorId: string, _type: IncidentType, at: number) =>
      Effect.gen(function*() {
        const suppressing = index.suppressing(monitorId, at)
        const missing: Array<(typeof suppressing)[number]> = []
        for (const s of suppressing) {
          if (!(yield* repo.countSuppressed(s.w.row.id, new Date(s.p.start)))) missing.push(s)
        }
        if (missing.length === 0) return
        yield* serialized(Effect.gen(function*() {
          const now = yield* Clock.currentTimeMillis
          for (const { p, w } of missing) {
            const bump = repo.countSuppressed(w.row.id, new Date(p.start))
            if (yield* bump) continue
            if (p.start <= now && now < p.end) {
              // The period began a moment ago and the scheduler has not written it yet.
              const fresh = yield* current(w.row.id)
              if (fresh !== undefined) yield* reconcile(fresh, now)
              yield* bump
            } else {
              // A period that ended while nobody recorded it (the service was down): record it now.
              yield* repo.insertSuppressedPeriod(w.row.org_id, periodRecord(w.row, p), new Date(Math.min(p.end, now)))
            }
          }
        }))
      }).pipe(Effect.catchAllCause((cause) => Effect.logError(`could not count a suppressed incident of monitor ${monitorId}`, cause)))

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

    // The index holds the windows; what was recorded of them before this start comes from the history
    // (cluster mode: already read again above, with the windows).
    if (!clustered) yield* loadRecorded
    // One fiber across the instances (with one instance: here).
    yield* background.singleton("maintenance-scheduler", scheduler)

    return {
      clustered,
      serialized,
      current,
      synced,
      reconcile,
      endByDeletion,
      forget,
      override,
      changed,
      countSuppressed,
      idle
    } as const
  })
}) {}
