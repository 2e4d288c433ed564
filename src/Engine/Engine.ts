import { SqlClient } from "@effect/sql"
import { type Cause, Clock, Context, Effect, Layer, Option, Queue, Runtime, Schedule } from "effect"
import { withoutStatementTimeoutOn } from "../Db/StatementTimeout.js"
import { Incidents } from "../Incidents/Incidents.js"
import { IncidentRelay } from "../Incidents/Listener.js"
import { scheduleOf } from "../Monitors/StoredSchedule.js"
import type { MonitorRow } from "../Monitors/MonitorsRepo.js"
import { DurationHistory } from "./DurationHistory.js"
import { DeadlineHeap, type HeapEntry } from "./Heap.js"
import { MaintenanceSuppressions } from "../Maintenance/Suppressions.js"
import {
  type ActiveIncident,
  type Decision,
  DURATION_MEMORY,
  type EngineEffect,
  type EngineEvent,
  type MonitorConfig,
  type MonitorState,
  type OpenRunState
} from "./Model.js"
import { decide, initialState, nextDeadline } from "./Rules.js"
import { expectedRunCount, HEALTH_WINDOW_MS, healthScore } from "./Health.js"

/**
 * The monitor actors. Each monitor is an actor: its state (MonitorState), a mailbox of events, and
 * a deadline on the Clock. Messages to one actor are handled one at a time, in order; different
 * actors run concurrently on a small pool of worker fibers, and one scheduler fiber sleeps until
 * the earliest deadline of all actors. An idle actor costs a state object, not a fiber: a fiber per
 * monitor measured 17 KB each here (1.7 GB for 100,000 monitors) against a 512 MB budget.
 * `send(monitorId, event)` is the whole interface, so running actors as @effect/cluster entities
 * later is a change of wiring.
 */

/** Whether a maintenance window covers a monitor at an instant. The maintenance module provides it. */
export class MaintenanceCheck extends Context.Tag("jobmon/MaintenanceCheck")<
  MaintenanceCheck,
  { readonly inMaintenance: (monitorId: string, at: number) => boolean }
>() {}

/** Before maintenance windows exist, nothing is ever in maintenance. */
export const NoMaintenance = Layer.succeed(MaintenanceCheck, { inMaintenance: () => false })

interface Actor {
  readonly id: string
  state: MonitorState
  durationsLoaded: boolean
  readonly mailbox: Array<EngineEvent>
  /** In the ready queue or being processed by a worker. */
  busy: boolean
  /** Bumped whenever the actor's deadline changes; stale heap entries are skipped. */
  version: number
  deadline: number | null
  stopped: boolean
}

/** A run of a loaded history; its start as epoch ms (a number, not a Date: thousands are read at start-up). */
interface LoadedRun {
  readonly id: string
  readonly duration_ms: number
  readonly started_ms: number
}

const WORKERS = 16
/**
 * Least time between two writes of the monitors' derived fields. With 1,000 monitors pinged a few
 * times a second each, every write updates nearly every row: at 200 ms that cost PostgreSQL about
 * 13 µs per ping, at 1 s about 6 (docs/performance.md). Incidents are not delayed by it (they are
 * written at once); a monitor's lastPingAt and status reach the API within a second.
 */
export const MONITOR_FLUSH_MS = 1_000
/** How often health scores of monitors with news are recomputed. */
export const HEALTH_REFRESH = "30 seconds"
/**
 * How soon the health score follows an incident that opened or resolved: a monitor shown FAILING
 * should not keep its score of 100 for the rest of a HEALTH_REFRESH period.
 */
export const HEALTH_SOON = "1 second"

export interface EngineStats {
  processed: number
  restarts: number
  effects: number
}

const configOf = (row: MonitorRow): MonitorConfig => ({
  id: row.id,
  orgId: row.org_id,
  name: row.name,
  schedule: scheduleOf(row),
  graceSeconds: row.grace_seconds,
  maxRuntimeSeconds: row.max_runtime_seconds,
  sla: row.sla,
  autoResolve: row.auto_resolve,
  paused: row.paused,
  createdAt: row.created_at.getTime()
})

interface EngineRow extends MonitorRow {
  readonly last_run_status: "SUCCESS" | "FAIL" | null
}

const monitorColumns = `id, org_id, name, schedule_type, schedule_expression, timezone, grace_seconds,
  max_runtime_seconds, max_output_size_kb, capture_output, sla, tags, auto_resolve, paused, status,
  health_score, last_ping_at, next_expected_at, created_at, updated_at, last_run_status`

export class Engine extends Effect.Service<Engine>()("jobmon/Engine", {
  scoped: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const incidents = yield* Incidents
    const maintenance = yield* MaintenanceCheck
    const actors = new Map<string, Actor>()
    const heap = new DeadlineHeap()
    const ready = yield* Queue.unbounded<Actor>()
    const wake = yield* Queue.sliding<void>(1)
    const stats: EngineStats = { processed: 0, restarts: 0, effects: 0 }
    const healthDirty = new Set<string>()
    /** Monitors whose incidents changed: scored again after HEALTH_SOON, by a fiber that sleeps until then. */
    const healthSoon = new Set<string>()
    const healthWake = yield* Queue.sliding<void>(1)
    const scoreSoon = (monitorId: string) => {
      healthSoon.add(monitorId)
      Queue.unsafeOffer(healthWake, undefined)
    }
    const runtime = yield* Effect.runtime<never>()
    const ctx = { inMaintenance: (id: string, at: number) => maintenance.inMaintenance(id, at) }

    // ---- loading actors from the database ---------------------------------------------------

    const persistedFor = (
      row: EngineRow,
      openRuns: ReadonlyArray<OpenRunState>,
      active: ReadonlyArray<ActiveIncident>
    ) => ({
      nextExpectedAt: row.next_expected_at?.getTime() ?? null,
      lastPingAt: row.last_ping_at?.getTime() ?? null,
      openRuns,
      activeIncidents: active,
      recentDurations: [] as ReadonlyArray<number>,
      lastRunStatus: row.last_run_status
    })

    const loadOne = (id: string) =>
      Effect.gen(function*() {
        const rows = yield* sql<EngineRow>`
          select ${sql.literal(monitorColumns)} from monitors where id = ${id} and deleted_at is null`
        const row = rows[0]
        if (row === undefined) return undefined
        const runs = yield* sql<{ id: string; started_at: Date; late: boolean }>`
          select r.id, r.started_at,
                 exists (select 1 from incidents i where i.run_id = r.id and i.type = 'LATE') as late
          from runs r where r.monitor_id = ${id} and r.status = 'RUNNING'`
        const active = yield* sql<{ type: ActiveIncident["type"]; status: ActiveIncident["status"]; run_id: string | null }>`
          select type, status, run_id from incidents
          where monitor_id = ${id} and status in ('OPEN', 'ACKNOWLEDGED') order by created_at`
        return initialState(
          configOf(row),
          persistedFor(
            row,
            runs.map((r) => ({ id: r.id, startedAt: r.started_at.getTime(), lateReported: r.late })),
            active.map((a) => ({ type: a.type, status: a.status, runId: a.run_id }))
          )
        )
      }).pipe(Effect.orDie)

    /**
     * The history an actor judges with is the last DURATION_MEMORY successful durations of the
     * database, ordered by start (started_at, then duration, then run id), as the rules keep it
     * (DurationHistory). It is loaded after the runs it holds were committed, while a run's
     * RunFinished reaches the actor only after its commit: the event that made the actor load, and
     * those queued behind it, may be of runs the loaded history holds already, and must not add them
     * again. They are marked here. An event of such a run that was not queued yet (committed just
     * before the load read, sent just after) finds a run of its very start and duration in the
     * history: `mayBeHeld` loads the history again and it is marked then. So the history is the
     * database's whatever the timing, and the actor remembers no run ids.
     */
    const loadDurations = (actor: Actor, current: EngineEvent) =>
      sql<LoadedRun>`
        select id, duration_ms, floor(extract(epoch from started_at) * 1000)::float8 as started_ms from runs
        where monitor_id = ${actor.id} and status = 'SUCCESS' and duration_ms is not null
        order by started_at desc, duration_ms desc, id desc limit ${DURATION_MEMORY}`.pipe(
        Effect.map((rows) => {
          const n = rows.length
          const values = new Array<number>(n)
          const starts = new Array<number>(n)
          const loaded = new Set<string>()
          for (let i = 0; i < n; i++) {
            const row = rows[n - 1 - i]!
            values[i] = Number(row.duration_ms)
            starts[i] = row.started_ms
            loaded.add(row.id)
          }
          installDurations(actor, values, starts)
          return markLoaded(actor, loaded, current)
        }),
        Effect.orDie
      )

    /** Takes these durations (oldest first, with their runs' starts) as the actor's history. */
    const installDurations = (actor: Actor, values: ReadonlyArray<number>, starts: ReadonlyArray<number>) => {
      actor.state = { ...actor.state, recentDurations: DurationHistory.from(values, DURATION_MEMORY, starts) }
      actor.durationsLoaded = true
    }

    /**
     * After a load that read the runs `loaded`: marks the queued RunFinished events of those runs,
     * and answers the current event (its run was committed before the load read) marked, `kept` if
     * the history holds it, `notKept` if not.
     */
    const markLoaded = (actor: Actor, loaded: ReadonlySet<string>, current: EngineEvent): EngineEvent => {
      for (let i = 0; i < actor.mailbox.length; i++) {
        const event = actor.mailbox[i]!
        if (event._tag !== "RunFinished") continue
        // A run the history does not hold was committed after the load read (to be added), unless
        // it was marked at an earlier load (then it is too old to keep).
        const history = loaded.has(event.run.id) ? "kept" : event.history === undefined ? undefined : "notKept"
        if (history !== event.history) actor.mailbox[i] = { ...event, history }
      }
      if (current._tag !== "RunFinished") return current
      return { ...current, history: loaded.has(current.run.id) ? "kept" as const : "notKept" as const }
    }

    /**
     * Whether a finished run (not marked) has the start and duration of a run the history holds:
     * it may be that run (its event came after a load that read it), which only the database can
     * tell, so the actor loads the history again. Otherwise it is another run of the same
     * millisecond and duration (rare), interchangeable with it. One comparison for a run newer than
     * all kept, a binary search otherwise; no query.
     */
    const mayBeHeld = (actor: Actor, event: EngineEvent): boolean =>
      event._tag === "RunFinished" && event.history === undefined && event.run.status === "SUCCESS" &&
      typeof event.run.durationMs === "number" && actor.state.recentDurations.holds(event.run.durationMs, event.run.startedAt)

    // ---- scheduling -------------------------------------------------------------------------

    const reschedule = (actor: Actor) => {
      const deadline = actor.stopped ? null : nextDeadline(actor.state)
      if (deadline === actor.deadline) return
      actor.deadline = deadline
      actor.version++
      if (deadline !== null) {
        const top = heap.peek()
        heap.push({ at: deadline, key: actor.id, version: actor.version })
        if (top === undefined || deadline < top.at) Queue.unsafeOffer(wake, undefined)
        // Every ping moves its monitor's deadline, leaving the old entry behind until it surfaces
        // (an hour later for an hourly job): drop the stale entries before they pile up in memory.
        if (heap.size > 2 * actors.size + 1024) compactHeap()
      }
    }

    const compactHeap = () => {
      const live: Array<HeapEntry> = []
      for (const a of actors.values()) {
        if (a.deadline !== null) live.push({ at: a.deadline, key: a.id, version: a.version })
      }
      heap.rebuild(live)
      Queue.unsafeOffer(wake, undefined)
    }

    const enqueue = (actor: Actor, event: EngineEvent) => {
      if (actor.stopped) return
      actor.mailbox.push(event)
      if (!actor.busy) {
        actor.busy = true
        Queue.unsafeOffer(ready, actor)
      }
    }

    const scheduler = Effect.gen(function*() {
      for (;;) {
        const now = yield* Clock.currentTimeMillis
        let top = heap.peek()
        while (top !== undefined && top.at <= now) {
          heap.pop()
          const actor = actors.get(top.key)
          if (actor !== undefined && actor.version === top.version) {
            actor.deadline = null
            enqueue(actor, { _tag: "Tick", at: now })
          }
          top = heap.peek()
        }
        const wait = top === undefined ? 3_600_000 : Math.max(1, top.at - now)
        yield* Effect.raceFirst(Effect.sleep(wait), Queue.take(wake))
      }
    })

    // ---- carrying out effects -----------------------------------------------------------------

    const retryPolicy = Schedule.exponential("200 millis").pipe(Schedule.compose(Schedule.recurs(5)))

    const carryOut = (actor: Actor, effect: EngineEffect) => {
      const config = actor.state.config
      switch (effect._tag) {
        case "RaiseIncident":
          return incidents.raise({
            orgId: config.orgId,
            monitorId: config.id,
            type: effect.type,
            severity: effect.severity,
            at: effect.at,
            runId: effect.runId,
            details: effect.details
          }).pipe(Effect.tap(() => scoreSoon(config.id)))
        case "ResolveIncidents":
          return incidents.autoResolve({ monitorId: config.id, types: effect.types, at: effect.at, reason: effect.reason }).pipe(
            Effect.tap(() => scoreSoon(config.id))
          )
        case "UpdateMonitor":
          return Effect.sync(() => updateMonitor(actor, effect))
        case "Suppressed":
          // Counted on the history entry of each maintenance period covering the monitor (docs/maintenance.md).
          return Effect.flatMap(Effect.serviceOption(MaintenanceSuppressions), (counter) =>
            Option.isSome(counter)
              ? counter.value.count(config.id, effect.type, effect.at)
              : Effect.logDebug(`monitor ${config.id}: ${effect.type} suppressed by maintenance`))
      }
    }

    /** The monitor's new status and next expected time, for the next coalesced write. */
    const updateMonitor = (actor: Actor, effect: Extract<EngineEffect, { _tag: "UpdateMonitor" }>) => {
      const pending = pendingFor(actor.id)
      pending.status = effect.status
      pending.nextExpectedAt = effect.nextExpectedAt
      pending.setNext = true
    }

    /** Takes a decision's new state, and what it means for the monitor row and its health score. */
    const commit = (actor: Actor, event: EngineEvent, decision: Decision) => {
      if (event._tag === "RunStarted" || event._tag === "RunFinished") {
        const pending = pendingFor(actor.id)
        pending.lastPingAt = Math.max(pending.lastPingAt ?? 0, event.at)
        if (event._tag === "RunFinished") pending.lastRunStatus = event.run.status
      }
      actor.state = decision.state
      // A user's acknowledge or resolve has committed before it reaches the actor.
      if (event._tag === "IncidentChanged") scoreSoon(actor.id)
      if (event._tag !== "Tick" || decision.effects.some((e) => e._tag === "RaiseIncident" || e._tag === "ResolveIncidents")) {
        healthDirty.add(actor.id)
      }
    }

    /** Effects carried out on the spot, without a database round trip. */
    const isImmediate = (effect: EngineEffect) => effect._tag === "UpdateMonitor"

    const handle = (actor: Actor, received: EngineEvent) =>
      Effect.gen(function*() {
        let event = received
        // Durations matter to finished runs and to LATE limits of open runs; a MISSED check needs none.
        const needsDurations = event._tag !== "ConfigChanged" && !(event._tag === "Tick" && actor.state.openRuns.length === 0)
        if (needsDurations && (!actor.durationsLoaded || mayBeHeld(actor, event))) {
          event = yield* loadDurations(actor, event)
        }
        const decision = decide(actor.state, event, ctx)
        commit(actor, event, decision)
        for (const effect of decision.effects) {
          yield* (carryOut(actor, effect) as Effect.Effect<unknown, unknown>).pipe(Effect.retry(retryPolicy))
          stats.effects++
        }
        stats.processed++
      })

    /** A failing actor is rebuilt from the database; the others never notice. */
    const restart = (actor: Actor, cause: Cause.Cause<unknown>) =>
      Effect.gen(function*() {
        stats.restarts++
        yield* Effect.logError(`monitor actor ${actor.id} failed; rebuilding it from the database`, cause)
        actor.mailbox.length = 0
        const state = yield* loadOne(actor.id).pipe(Effect.catchAllCause(() => Effect.succeed(undefined)))
        if (state === undefined) {
          actor.stopped = true
          actors.delete(actor.id)
          return
        }
        actor.state = state
        actor.durationsLoaded = false
      })

    const worker = Effect.gen(function*() {
      for (;;) {
        const actor = yield* Queue.take(ready)
        while (actor.mailbox.length > 0 && !actor.stopped) {
          const event = actor.mailbox.shift()!
          yield* handle(actor, event).pipe(Effect.catchAllCause((cause) => restart(actor, cause)))
        }
        actor.busy = false
        reschedule(actor)
      }
    })

    // ---- what the actors change on their monitors, coalesced ----------------------------------

    /**
     * Status, next expected time, last ping and last run status of each monitor are written in one
     * statement for all monitors with news, at most every MONITOR_FLUSH_MS: a monitor pinged many
     * times a second costs one row update per flush, not one per ping.
     */
    interface PendingMonitor {
      status?: string
      setNext?: boolean
      nextExpectedAt?: number | null
      lastPingAt?: number
      lastRunStatus?: "SUCCESS" | "FAIL"
    }
    let pendingMonitors = new Map<string, PendingMonitor>()
    let flushing = false
    const flushWake = yield* Queue.sliding<void>(1)
    const pendingFor = (id: string): PendingMonitor => {
      let pending = pendingMonitors.get(id)
      if (pending === undefined) {
        pending = {}
        pendingMonitors.set(id, pending)
        if (pendingMonitors.size === 1) Queue.unsafeOffer(flushWake, undefined)
      }
      return pending
    }
    const flushMonitors = Effect.gen(function*() {
      if (pendingMonitors.size === 0) return
      const batch = pendingMonitors
      pendingMonitors = new Map()
      flushing = true
      const ids: Array<string> = []
      const statuses: Array<string | null> = []
      const setNext: Array<boolean> = []
      // Instants as epoch ms (float8): cheaper to send than Date objects.
      const next: Array<number | null> = []
      const lastPing: Array<number | null> = []
      const lastRun: Array<string | null> = []
      for (const [id, p] of batch) {
        ids.push(id)
        statuses.push(p.status ?? null)
        setNext.push(p.setNext === true)
        next.push(p.nextExpectedAt ?? null)
        lastPing.push(p.lastPingAt ?? null)
        lastRun.push(p.lastRunStatus ?? null)
      }
      yield* sql`
        update monitors m set
          status = coalesce(u.status, m.status),
          next_expected_at = case when u.set_next then to_timestamp(u.next_expected_ms / 1000.0) else m.next_expected_at end,
          last_ping_at = greatest(m.last_ping_at, to_timestamp(u.last_ping_ms / 1000.0)),
          last_run_status = coalesce(u.last_run_status, m.last_run_status)
        from unnest(${ids}::uuid[], ${statuses}::text[], ${setNext}::bool[], ${next}::float8[],
                    ${lastPing}::float8[], ${lastRun}::text[])
          as u(id, status, set_next, next_expected_ms, last_ping_ms, last_run_status)
        where m.id = u.id`.pipe(
        Effect.retry(retryPolicy),
        Effect.catchAllCause((cause) => Effect.logError("could not write monitor states", cause)),
        Effect.ensuring(Effect.sync(() => void (flushing = false)))
      )
    })
    const realDelay = (ms: number) =>
      Effect.async<void>((resume) => {
        const timer = setTimeout(() => resume(Effect.void), ms)
        return Effect.sync(() => clearTimeout(timer))
      })
    /** Ends the coalescing window early (idle: tests, and whoever waits for the writes). */
    const flushNow = yield* Queue.sliding<void>(1)
    const monitorFlusher = Effect.gen(function*() {
      for (;;) {
        if (pendingMonitors.size === 0) yield* Queue.take(flushWake)
        yield* flushMonitors
        // Coalescing window: real time, whatever the Clock (it is a write cadence, not a rule).
        yield* Effect.raceFirst(realDelay(MONITOR_FLUSH_MS), Queue.take(flushNow))
      }
    })

    // ---- health scores -------------------------------------------------------------------------

    /**
     * Health scores (src/Engine/Health.ts) are recomputed for the monitors that had news since the
     * last pass, in one query for all of them, every HEALTH_REFRESH: never on the ping path.
     */
    const refreshHealth = Effect.suspend(() => {
      const ids = [...healthDirty].slice(0, 5_000)
      for (const id of ids) healthDirty.delete(id)
      return scoreMonitors(ids)
    })

    /** The monitors whose incidents changed, HEALTH_SOON after the first change of a burst. */
    const refreshHealthSoon = Effect.gen(function*() {
      yield* Queue.take(healthWake)
      yield* Effect.sleep(HEALTH_SOON)
      const ids = [...healthSoon].slice(0, 5_000)
      for (const id of ids) healthSoon.delete(id)
      if (healthSoon.size > 0) Queue.unsafeOffer(healthWake, undefined)
      yield* scoreMonitors(ids)
    })

    // Background work over up to 30 days of runs: not bound by the API's statement timeout.
    const scoreMonitors = (ids: ReadonlyArray<string>) => ids.length === 0 ? Effect.void : Effect.gen(function*() {
      const now = yield* Clock.currentTimeMillis
      const from = new Date(now - HEALTH_WINDOW_MS)
      const counts = yield* sql<{
        monitor_id: string
        received: number
        successful: number
        on_time: number
        sla_evaluated: number
        sla_met: number
      }>`
        select r.monitor_id,
          count(*)::int as received,
          count(*) filter (where r.status = 'SUCCESS')::int as successful,
          count(*) filter (where not exists (
            select 1 from incidents i where i.run_id = r.id and i.type = 'LATE'))::int as on_time,
          count(*) filter (where m.sla is not null and r.status = 'SUCCESS' and r.duration_ms is not null)::int as sla_evaluated,
          count(*) filter (where m.sla is not null and r.status = 'SUCCESS'
            and r.duration_ms <= (m.sla->>'maxDurationMs')::bigint)::int as sla_met
        from runs r join monitors m on m.id = r.monitor_id
        where r.monitor_id in ${sql.in(ids)} and r.started_at > ${from}
        group by r.monitor_id`
      const open = yield* sql<{ monitor_id: string; severity: "HIGH" | "MEDIUM" | "LOW"; n: number }>`
        select monitor_id, severity, count(*)::int as n from incidents
        where monitor_id in ${sql.in(ids)} and status in ('OPEN', 'ACKNOWLEDGED')
        group by monitor_id, severity`
      const byId = new Map(counts.map((c) => [c.monitor_id, c]))
      const scores: Array<number> = []
      const scored: Array<string> = []
      for (const id of ids) {
        const actor = actors.get(id)
        if (actor === undefined) continue
        const c = byId.get(id)
        const incidentsBySeverity = { HIGH: 0, MEDIUM: 0, LOW: 0 }
        for (const o of open) if (o.monitor_id === id) incidentsBySeverity[o.severity] += o.n
        const config = actor.state.config
        scores.push(healthScore({
          expectedRuns: expectedRunCount(config.schedule, Math.max(from.getTime(), config.createdAt), now),
          receivedRuns: c?.received ?? 0,
          successfulRuns: c?.successful ?? 0,
          onTimeRuns: c?.on_time ?? 0,
          slaEvaluatedRuns: c?.sla_evaluated ?? 0,
          slaMetRuns: c?.sla_met ?? 0,
          openIncidents: incidentsBySeverity
        }))
        scored.push(id)
      }
      if (scored.length > 0) {
        yield* sql`
          update monitors m set health_score = s.score
          from unnest(${scored}::uuid[], ${scores}::float8[]) as s(id, score)
          where m.id = s.id`
      }
    }).pipe(withoutStatementTimeoutOn(sql), Effect.orDie)

    // ---- start-up: every actor from the database ----------------------------------------------

    const startedAt = yield* Clock.currentTimeMillis
    // Start-up reads every monitor: not bound by the API's statement timeout.
    const unbounded = withoutStatementTimeoutOn(sql)
    const rows = yield* sql<EngineRow>`
      select ${sql.literal(monitorColumns)} from monitors where deleted_at is null`.pipe(unbounded, Effect.orDie)
    const openRuns = yield* sql<{ id: string; monitor_id: string; started_at: Date; late: boolean }>`
      select r.id, r.monitor_id, r.started_at,
             exists (select 1 from incidents i where i.run_id = r.id and i.type = 'LATE') as late
      from runs r where r.status = 'RUNNING'`.pipe(unbounded, Effect.orDie)
    const activeIncidents = yield* sql<{ monitor_id: string; type: ActiveIncident["type"]; status: ActiveIncident["status"]; run_id: string | null }>`
      select monitor_id, type, status, run_id from incidents where status in ('OPEN', 'ACKNOWLEDGED')
      order by created_at`.pipe(unbounded, Effect.orDie)
    const runsBy = new Map<string, Array<OpenRunState>>()
    for (const r of openRuns) {
      const list = runsBy.get(r.monitor_id) ?? []
      list.push({ id: r.id, startedAt: r.started_at.getTime(), lateReported: r.late })
      runsBy.set(r.monitor_id, list)
    }
    const activeBy = new Map<string, Array<ActiveIncident>>()
    for (const a of activeIncidents) {
      const list = activeBy.get(a.monitor_id) ?? []
      list.push({ type: a.type, status: a.status, runId: a.run_id })
      activeBy.set(a.monitor_id, list)
    }
    for (const row of rows) {
      let state: MonitorState
      try {
        state = initialState(configOf(row), persistedFor(row, runsBy.get(row.id) ?? [], activeBy.get(row.id) ?? []))
      } catch (error) {
        yield* Effect.logError(`monitor ${row.id} cannot be judged: ${(error as Error).message}`)
        continue
      }
      const actor: Actor = { id: row.id, state, durationsLoaded: false, mailbox: [], busy: false, version: 0, deadline: null, stopped: false }
      actors.set(row.id, actor)
      reschedule(actor)
    }
    // A run in progress whose LATE limit is learned from past durations needs them now, not at the
    // actor's next event: load them for just those monitors.
    const learning = [...actors.values()].filter((a) => a.state.openRuns.length > 0 && a.state.config.maxRuntimeSeconds === null)
    if (learning.length > 0) {
      // The same history as loadDurations, one row of two arrays per monitor (the intake starts
      // after the engine: no event is queued, nothing to mark).
      const histories = yield* sql<{ monitor_id: string; durations: Array<number>; starts: Array<number> }>`
        select m.id as monitor_id,
               array_agg(d.duration_ms::float8 order by d.started_at, d.duration_ms, d.id) as durations,
               array_agg(floor(extract(epoch from d.started_at) * 1000)::float8 order by d.started_at, d.duration_ms, d.id) as starts
        from unnest(${learning.map((a) => a.id)}::uuid[]) as m(id)
        cross join lateral (
          select id, duration_ms, started_at from runs
          where monitor_id = m.id and status = 'SUCCESS' and duration_ms is not null
          order by started_at desc, duration_ms desc, id desc limit ${DURATION_MEMORY}
        ) d
        group by m.id`.pipe(unbounded, Effect.orDie)
      const byMonitor = new Map(histories.map((h) => [h.monitor_id, h]))
      for (const actor of learning) {
        const history = byMonitor.get(actor.id)
        installDurations(actor, history?.durations ?? [], history?.starts ?? [])
        reschedule(actor)
      }
    }
    const loadedMs = (yield* Clock.currentTimeMillis) - startedAt
    yield* Effect.logInfo(`incident engine: ${actors.size} monitor actors rebuilt in ${loadedMs} ms`)

    for (let i = 0; i < WORKERS; i++) yield* Effect.forkScoped(worker)
    yield* Effect.forkScoped(monitorFlusher)
    yield* Effect.addFinalizer(() => flushMonitors)
    yield* Effect.forkScoped(
      refreshHealth.pipe(
        Effect.catchAllCause((cause) => Effect.logError("health score refresh failed", cause)),
        Effect.repeat(Schedule.spaced(HEALTH_REFRESH))
      )
    )
    yield* Effect.forkScoped(
      refreshHealthSoon.pipe(
        Effect.catchAllCause((cause) => Effect.logError("health score refresh failed", cause)),
        Effect.forever
      )
    )
    yield* Effect.forkScoped(scheduler)

    // ---- the interface ------------------------------------------------------------------------

    /** Deliver an event to a monitor's actor (starting the actor if this instance has none yet). */
    const send = (monitorId: string, event: EngineEvent): void => {
      const actor = actors.get(monitorId)
      if (actor !== undefined) {
        // The common case, a ping that changes nothing but the monitor's row, is decided right here:
        // the actor is idle (nothing queued before this event), so this is still its next message,
        // handled alone. Anything that needs the database goes through the mailbox.
        if (!actor.busy && actor.mailbox.length === 0 && actor.durationsLoaded && !actor.stopped) {
          let decision: Decision | undefined
          try {
            decision = mayBeHeld(actor, event) ? undefined : decide(actor.state, event, ctx)
          } catch {
            decision = undefined
          }
          if (decision !== undefined && decision.effects.every(isImmediate)) {
            commit(actor, event, decision)
            // Plain calls: a fiber per ping (Effect.runSync) cost more than the decision itself.
            for (const effect of decision.effects) if (effect._tag === "UpdateMonitor") updateMonitor(actor, effect)
            stats.processed++
            stats.effects += decision.effects.length
            reschedule(actor)
            return
          }
        }
        return enqueue(actor, event)
      }
      // A monitor this instance has not seen (created elsewhere): load it, then deliver.
      Runtime.runFork(runtime)(
        loadOne(monitorId).pipe(
          Effect.map((state) => {
            if (state === undefined || actors.has(monitorId)) return actors.get(monitorId)
            const created: Actor = { id: monitorId, state, durationsLoaded: false, mailbox: [], busy: false, version: 0, deadline: null, stopped: false }
            actors.set(monitorId, created)
            return created
          }),
          Effect.map((a) => a !== undefined && enqueue(a, event)),
          Effect.catchAllCause((cause) => Effect.logError(`could not start the actor of monitor ${monitorId}`, cause))
        )
      )
    }

    /** A monitor was created, changed, paused or resumed: (re)start its actor with the new settings. */
    const upsert = (row: MonitorRow, at: number) =>
      Effect.gen(function*() {
        const existing = actors.get(row.id)
        if (existing !== undefined) return enqueue(existing, { _tag: "ConfigChanged", config: configOf(row), at })
        const state = yield* loadOne(row.id)
        if (state === undefined || actors.has(row.id)) return
        const actor: Actor = { id: row.id, state, durationsLoaded: false, mailbox: [], busy: false, version: 0, deadline: null, stopped: false }
        actors.set(row.id, actor)
        reschedule(actor)
      })

    /** A monitor was deleted: its actor stops. */
    const stop = (monitorId: string) =>
      Effect.sync(() => {
        const actor = actors.get(monitorId)
        if (actor === undefined) return
        actor.stopped = true
        actor.mailbox.length = 0
        actor.version++
        actors.delete(monitorId)
      })

    // Users' acknowledgements and resolutions reach the actor of the incident's monitor.
    const relay = yield* IncidentRelay
    yield* relay.connect({
      changed: (change) =>
        Effect.sync(() => send(change.monitorId, { _tag: "IncidentChanged", type: change.type, status: change.status, at: change.at }))
    })

    const stateOf = (monitorId: string) => Option.fromNullable(actors.get(monitorId)?.state)

    /** The recent successful durations an actor judges with, oldest first; undefined until it has loaded them (tests). */
    const durationsOf = (monitorId: string): ReadonlyArray<number> | undefined => {
      const actor = actors.get(monitorId)
      return actor === undefined || !actor.durationsLoaded ? undefined : actor.state.recentDurations.toArray()
    }

    /** Resolves once every actor's mailbox is empty (tests). Polls in real time, whatever the Clock. */
    const idle = Effect.gen(function*() {
      for (;;) {
        let busy = false
        for (const actor of actors.values()) if (actor.busy || actor.mailbox.length > 0) busy = true
        if (!busy && pendingMonitors.size === 0 && !flushing) return
        if (!busy && pendingMonitors.size > 0) Queue.unsafeOffer(flushNow, undefined)
        yield* Effect.promise(() => new Promise((resolve) => setTimeout(resolve, 2)))
      }
    })

    return { send, upsert, stop, stateOf, durationsOf, idle, refreshHealth, stats, size: () => actors.size } as const
  })
}) {}
