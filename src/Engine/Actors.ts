import { type Cause, Clock, Effect, Queue, Runtime, type Scope } from "effect"
import { Incidents } from "../Incidents/Incidents.js"
import { Metrics } from "../Metrics/Metrics.js"
import { HealthRefresh } from "./HealthRefresh.js"
import { DeadlineHeap, type HeapEntry } from "./Heap.js"
import { markLoaded, mayBeHeld, needsDurations, runsToMark } from "./HistoryLoad.js"
import type { Decision, EngineEffect, EngineEvent, IncidentType, MonitorConfig, MonitorState, RulesContext } from "./Model.js"
import { MonitorWriter, writeRetry } from "./MonitorWriter.js"
import { decide, nextDeadline } from "./Rules.js"
import { shardOf, ShardSet } from "./Shards.js"
import { type LoadedMonitors, StateLoader, withDurations } from "./StateLoader.js"

/**
 * The monitor actors. Each monitor is an actor: its state (MonitorState), a mailbox of events, and
 * a deadline on the Clock. Messages to one actor are handled one at a time, in order; different
 * actors run concurrently on a small pool of worker fibers, and one scheduler fiber sleeps until
 * the earliest deadline of all actors. An idle actor costs a state object, not a fiber
 * (docs/engine.md, "Why not a fiber per monitor").
 */

export interface EngineStats {
  processed: number
  restarts: number
  effects: number
}

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
  /** Cluster mode: the runs whose news this actor has had lately (news can come twice: from the database and from NOTIFY). */
  seen: Array<string> | undefined
}

/** Cluster mode: how many recent run ids an actor remembers to drop news it already had. */
const SEEN_MEMORY = 32

const WORKERS = 16

/** Effects carried out on the spot, without a database round trip. */
const isImmediate = (effect: EngineEffect) => effect._tag === "UpdateMonitor"

export const makeActors = (
  ctx: RulesContext,
  countSuppressed: (monitorId: string, type: IncidentType, at: number) => Effect.Effect<void>
) =>
  Effect.gen(function*() {
    const loader = yield* StateLoader
    const writer = yield* MonitorWriter
    const health = yield* HealthRefresh
    const incidents = yield* Incidents
    const shards = yield* ShardSet
    const { deadlineFired } = yield* Metrics
    const clustered = shards.clustered
    const runtime = yield* Effect.runtime<never>()
    const actors = new Map<string, Actor>()
    const heap = new DeadlineHeap()
    const ready = yield* Queue.unbounded<Actor>()
    const wake = yield* Queue.sliding<void>(1)
    const stats: EngineStats = { processed: 0, restarts: 0, effects: 0 }

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
            // How late the deadline fires: the timer's lateness, or a deadline that passed while
            // no instance ran the monitor (a restart, a failover) firing at once (docs/metrics.md).
            deadlineFired(now - top.at)
            enqueue(actor, { _tag: "Tick", at: now })
          }
          top = heap.peek()
        }
        const wait = top === undefined ? 3_600_000 : Math.max(1, top.at - now)
        yield* Effect.raceFirst(Effect.sleep(wait), Queue.take(wake))
      }
    })

    // ---- handling events --------------------------------------------------------------------

    /** Cluster mode: news of a run this actor has already judged (it can come from the database and from NOTIFY). */
    const alreadyHeard = (actor: Actor, event: EngineEvent): boolean => {
      if (event._tag === "RunFinished") return actor.seen !== undefined && actor.seen.includes(event.run.id)
      if (event._tag === "RunStarted") {
        return (actor.seen !== undefined && actor.seen.includes(event.runId)) || actor.state.openRuns.some((r) => r.id === event.runId)
      }
      return false
    }

    const remember = (actor: Actor, event: EngineEvent) => {
      if (event._tag !== "RunFinished") return
      const seen = actor.seen ??= []
      seen.push(event.run.id)
      if (seen.length > SEEN_MEMORY) seen.shift()
    }

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
          }).pipe(Effect.tap(() => health.changedIncidents(config.id)))
        case "ResolveIncidents":
          return incidents.autoResolve({ monitorId: config.id, types: effect.types, at: effect.at, reason: effect.reason }).pipe(
            Effect.tap(() => health.changedIncidents(config.id))
          )
        case "UpdateMonitor":
          return Effect.sync(() => writer.update(actor.id, effect.status, effect.nextExpectedAt))
        case "Suppressed":
          // Counted on the history entry of each maintenance period covering the monitor (docs/maintenance.md).
          return countSuppressed(config.id, effect.type, effect.at)
      }
    }

    /** Takes a decision's new state, and what it means for the monitor row and its health score. */
    const commit = (actor: Actor, event: EngineEvent, decision: Decision) => {
      if (event._tag === "RunStarted") writer.pinged(actor.id, event.at, undefined)
      else if (event._tag === "RunFinished") writer.pinged(actor.id, event.at, event.run.status)
      // The thresholds' counts live on the monitor row, for an actor rebuilt from the database.
      if (decision.state.streak !== actor.state.streak) writer.streak(actor.id, decision.state.streak)
      actor.state = decision.state
      // A user's acknowledge or resolve has committed before it reaches the actor.
      if (event._tag === "IncidentChanged") health.changedIncidents(actor.id)
      if (event._tag !== "Tick" || decision.effects.some((e) => e._tag === "RaiseIncident" || e._tag === "ResolveIncidents")) {
        health.changed(actor.id)
      }
    }

    /** Loads the actor's history at an event, and answers the event marked by what the load read. */
    const loadDurations = (actor: Actor, current: EngineEvent) =>
      Effect.map(loader.loadDurations([actor.id], runsToMark(actor.mailbox, current)), (durationsOf) => {
        const durations = durationsOf(actor.id)
        actor.state = withDurations(actor.state, durations)
        actor.durationsLoaded = true
        return markLoaded(actor.mailbox, durations.held, current)
      })

    /**
     * Cluster mode: before MISSED or LATE is raised (or a missed occurrence is counted toward a
     * failure threshold: a Tick changes the streak only so), the runs the database holds since the
     * last ping this actor heard of (news still on its way, or lost with an instance that died after
     * its commit): when there are some, they are judged first and the deadline again after them.
     */
    const unheardRuns = (actor: Actor, event: EngineEvent, decision: Decision) =>
      Effect.gen(function*() {
        if (!clustered || event._tag !== "Tick") return false
        const countsMiss = decision.state.streak !== actor.state.streak
        if (!countsMiss && !decision.effects.some((e) => e._tag === "RaiseIncident" && (e.type === "MISSED" || e.type === "LATE"))) return false
        const since = actor.state.lastPingAt ?? actor.state.config.createdAt
        const events = (yield* loader.eventsSince(actor.id, since)).filter((e) => !alreadyHeard(actor, e))
        if (events.length === 0) return false
        actor.mailbox.unshift(...events, { _tag: "Tick", at: event.at })
        return true
      })

    const handle = (actor: Actor, received: EngineEvent) =>
      Effect.gen(function*() {
        let event = received
        if (clustered && alreadyHeard(actor, event)) return
        if (event._tag === "RunFinished" && event.outputStored === true && event.run.status === "FAIL") {
          const output = yield* loader.runOutput(event.run.id)
          event = { ...event, run: { ...event.run, output }, outputStored: false }
        }
        if (needsDurations(actor.state, event) && (!actor.durationsLoaded || mayBeHeld(actor.state, event))) {
          event = yield* loadDurations(actor, event)
        }
        const decision = decide(actor.state, event, ctx)
        if (yield* unheardRuns(actor, event, decision)) return
        if (clustered) remember(actor, event)
        commit(actor, event, decision)
        for (const effect of decision.effects) {
          yield* (carryOut(actor, effect) as Effect.Effect<unknown, unknown>).pipe(Effect.retry(writeRetry))
          stats.effects++
        }
        stats.processed++
      })

    /** Monitors whose rows cannot be judged get no actor; the operator learns why. */
    const logInvalid = ({ invalid }: LoadedMonitors) =>
      Effect.forEach(invalid, ({ id, reason }) => Effect.logError(`monitor ${id} cannot be judged: ${reason}`), { discard: true })

    /** A failing actor is rebuilt from the database; the others never notice. */
    const restart = (actor: Actor, cause: Cause.Cause<unknown>) =>
      Effect.gen(function*() {
        stats.restarts++
        yield* Effect.logError(`monitor actor ${actor.id} failed; rebuilding it from the database`, cause)
        actor.mailbox.length = 0
        const fresh = yield* loader.loadMonitors([actor.id]).pipe(
          Effect.tap(logInvalid),
          Effect.catchAllCause(() => Effect.succeed(undefined))
        )
        const state = fresh?.states[0]
        if (fresh === undefined || state === undefined) {
          actor.stopped = true
          actors.delete(actor.id)
          return
        }
        actor.state = state
        actor.durationsLoaded = fresh.durationsLoaded.has(actor.id)
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

    // ---- starting and stopping actors ---------------------------------------------------------

    const startMonitors = (ids?: ReadonlyArray<string>) =>
      Effect.gen(function*() {
        const result = yield* loader.loadMonitors(ids)
        yield* logInvalid(result)
        let started = 0
        for (const state of result.states) {
          const id = state.config.id
          if (actors.has(id) || !shards.ownsMonitor(id)) continue
          const durationsLoaded = result.durationsLoaded.has(id)
          const actor: Actor = { id, state, durationsLoaded, mailbox: [], busy: false, version: 0, deadline: null, stopped: false, seen: undefined }
          actors.set(id, actor)
          reschedule(actor)
          started++
        }
        return started
      })

    const stopMonitors = (ids: ReadonlyArray<string>) =>
      Effect.sync(() => {
        for (const id of ids) {
          const actor = actors.get(id)
          if (actor === undefined) continue
          actor.stopped = true
          actor.mailbox.length = 0
          actor.version++
          actors.delete(id)
        }
      })

    const owns = (monitorId: string) => actors.has(monitorId)

    /**
     * Cluster mode: this instance now owns these shards; their monitors' actors are rebuilt from
     * the database (a deadline that passed while nobody owned them fires at once). Answers how many started.
     */
    const startShards = (ids: ReadonlyArray<number>) =>
      Effect.gen(function*() {
        for (const shard of ids) shards.add(shard)
        const monitorIds = yield* loader.monitorIdsOfShards(ids)
        if (monitorIds.length === 0) return 0
        const started = yield* startMonitors(monitorIds)
        yield* catchUp(ids)
        return started
      })

    /**
     * Cluster mode: the runs of these shards' monitors that finished after the last ping their rows
     * record, judged first (ahead of news queued since): a ping whose news came while the shard was
     * between owners was heard by neither. News of the same runs arriving by NOTIFY is dropped as
     * already heard.
     */
    const catchUp = (ids: ReadonlyArray<number>) =>
      Effect.gen(function*() {
        const missed = yield* loader.missedByShards(ids)
        let runs = 0
        for (const [monitorId, events] of missed) {
          const actor = actors.get(monitorId)
          if (actor === undefined || actor.stopped) continue
          const fresh = events.filter((e) => !alreadyHeard(actor, e))
          if (fresh.length === 0) continue
          runs += fresh.filter((e) => e._tag === "RunFinished").length
          actor.mailbox.unshift(...fresh)
          if (!actor.busy) {
            actor.busy = true
            Queue.unsafeOffer(ready, actor)
          }
        }
        if (runs > 0) yield* Effect.logInfo(`judging ${runs} run(s) that finished while their shards were between owners`)
      })

    /** Cluster mode: these shards go to another instance; their actors stop first. Answers how many stopped. */
    const stopShards = (ids: ReadonlyArray<number>) =>
      Effect.gen(function*() {
        for (const shard of ids) shards.remove(shard)
        const leaving = new Set(ids)
        const stopping: Array<Actor> = []
        for (const actor of actors.values()) if (leaving.has(shardOf(actor.id))) stopping.push(actor)
        yield* stopMonitors(stopping.map((a) => a.id))
        // An event being handled finishes (its incident, say) before the shard is let go.
        for (let waited = 0; waited < 5_000 && stopping.some((a) => a.busy); waited += 5) {
          yield* Effect.promise(() => new Promise((resolve) => setTimeout(resolve, 5)))
        }
        // The monitors' rows record the last ping their actors heard: the next owner judges what came after.
        yield* writer.flushNow
        return stopping.length
      })

    // ---- delivering events --------------------------------------------------------------------

    /** Delivers an event to a monitor's actor (starting the actor if this instance has none yet). */
    const send = (monitorId: string, event: EngineEvent): void => {
      const actor = actors.get(monitorId)
      if (actor !== undefined) {
        if (clustered && alreadyHeard(actor, event)) return
        // The common case, a ping that changes nothing but the monitor's row, is decided right here:
        // the actor is idle (nothing queued before this event), so this is still its next message,
        // handled alone. Anything that needs the database goes through the mailbox.
        if (!actor.busy && actor.mailbox.length === 0 && actor.durationsLoaded && !actor.stopped) {
          let decision: Decision | undefined
          try {
            decision = mayBeHeld(actor.state, event) ? undefined : decide(actor.state, event, ctx)
          } catch {
            decision = undefined
          }
          if (decision !== undefined && decision.effects.every(isImmediate)) {
            if (clustered) remember(actor, event)
            commit(actor, event, decision)
            // Plain calls: a fiber per ping (Effect.runSync) cost more than the decision itself.
            for (const effect of decision.effects) {
              if (effect._tag === "UpdateMonitor") writer.update(actor.id, effect.status, effect.nextExpectedAt)
            }
            stats.processed++
            stats.effects += decision.effects.length
            reschedule(actor)
            return
          }
        }
        return enqueue(actor, event)
      }
      // Another instance judges it (cluster mode): its owner hears of the event on its own.
      if (!shards.ownsMonitor(monitorId)) return
      // A monitor this instance has not seen (created elsewhere): load it, then deliver.
      Runtime.runFork(runtime)(
        startMonitors([monitorId]).pipe(
          Effect.map(() => {
            const started = actors.get(monitorId)
            if (started !== undefined) enqueue(started, event)
          }),
          Effect.catchAllCause((cause) => Effect.logError(`could not start the actor of monitor ${monitorId}`, cause))
        )
      )
    }

    /** The workers and the scheduler, in fibers of the caller's scope. */
    const run: Effect.Effect<void, never, Scope.Scope> = Effect.gen(function*() {
      for (let i = 0; i < WORKERS; i++) yield* Effect.forkScoped(worker)
      yield* Effect.forkScoped(scheduler)
    })

    return {
      send,
      startMonitors,
      stopMonitors,
      startShards,
      stopShards,
      owns,
      run,
      stats,
      size: () => actors.size,
      stateOf: (monitorId: string): MonitorState | undefined => actors.get(monitorId)?.state,
      configOf: (monitorId: string): MonitorConfig | undefined => actors.get(monitorId)?.state.config,
      /** The recent successful durations an actor judges with, oldest first; undefined until it has loaded them. */
      durationsOf: (monitorId: string): ReadonlyArray<number> | undefined => {
        const actor = actors.get(monitorId)
        return actor === undefined || !actor.durationsLoaded ? undefined : actor.state.recentDurations.toArray()
      },
      /** Whether some actor has mail or is handling it. */
      busy: (): boolean => {
        for (const actor of actors.values()) if (actor.busy || actor.mailbox.length > 0) return true
        return false
      }
    } as const
  })
