import { Clock, Context, Effect, Layer, Option } from "effect"
import { Metrics } from "../Metrics/Metrics.js"
import type { MonitorRow } from "../Monitors/MonitorsRepo.js"
import { makeActors } from "./Actors.js"
import { HealthRefresh } from "./HealthRefresh.js"
import type { EngineEvent, IncidentType } from "./Model.js"
import { MonitorWriter } from "./MonitorWriter.js"
import { ShardSet } from "./Shards.js"
import { configOf, StateLoader } from "./StateLoader.js"

/**
 * The incident engine (docs/engine.md): every monitor an actor (src/Engine/Actors.ts) judged by
 * the pure rules (src/Engine/Rules.ts), rebuilt from the database by one loader
 * (src/Engine/StateLoader.ts), its monitor row written by a coalescing writer
 * (src/Engine/MonitorWriter.ts) and its health score refreshed apart (src/Engine/HealthRefresh.ts).
 * The seams a cluster of instances needs: `send(monitorId, event)` to deliver an event,
 * `startMonitors` / `stopMonitors` / `owns` for the monitors an instance runs, and the state loader.
 */

/**
 * What the engine needs of maintenance windows: whether one covers a monitor at an instant, and where
 * to count an incident one suppressed (on the history entry of each period covering the monitor).
 * The engine owns the tag; the maintenance module (MaintenanceLive) implements it and src/App.ts
 * wires the two: the way this codebase breaks an import cycle (docs/architecture.md).
 */
export class MaintenanceCheck extends Context.Tag("jobmon/MaintenanceCheck")<
  MaintenanceCheck,
  {
    readonly inMaintenance: (monitorId: string, at: number) => boolean
    readonly countSuppressed: (monitorId: string, type: IncidentType, at: number) => Effect.Effect<void>
  }
>() {}

/** Nothing is ever in maintenance (an engine built without the maintenance module). */
export const NoMaintenance = Layer.succeed(MaintenanceCheck, { inMaintenance: () => false, countSuppressed: () => Effect.void })

/**
 * Starting and stopping the actors of a set of monitors: today the start-up (every monitor) and
 * the API's creations and deletions; with @effect/cluster, the monitors of the shards an instance
 * acquires or loses.
 */
export interface MonitorOwnership {
  /**
   * Loads these monitors (every monitor when `ids` is undefined) and starts an actor for each one
   * this instance does not run yet; a deleted or unknown monitor is skipped. Answers how many started.
   */
  readonly startMonitors: (ids?: ReadonlyArray<string>) => Effect.Effect<number>
  /** Stops these monitors' actors: their queued events are dropped, their deadlines forgotten. */
  readonly stopMonitors: (ids: ReadonlyArray<string>) => Effect.Effect<void>
  /** Whether this instance runs the monitor's actor. */
  readonly owns: (monitorId: string) => boolean
}

/** How an event reaches a monitor's actor: a plain call, no fiber and no query on the common path. */
export interface EventDelivery {
  readonly send: (monitorId: string, event: EngineEvent) => void
}

export class Engine extends Effect.Service<Engine>()("jobmon/Engine", {
  scoped: Effect.gen(function*() {
    const maintenance = yield* MaintenanceCheck
    const writer = yield* MonitorWriter
    const shards = yield* ShardSet
    const health = yield* HealthRefresh
    const actors = yield* makeActors({ inMaintenance: (id, at) => maintenance.inMaintenance(id, at) }, maintenance.countSuppressed)

    // Start-up: every monitor's actor from the database, before the intake takes pings. In cluster
    // mode, only those of the shards this instance acquires, as it acquires them (src/Cluster/Cluster.ts).
    if (!shards.clustered) {
      const startedAt = yield* Clock.currentTimeMillis
      yield* actors.startMonitors()
      const loadedMs = (yield* Clock.currentTimeMillis) - startedAt
      yield* Effect.logInfo(`incident engine: ${actors.size()} monitor actors rebuilt in ${loadedMs} ms`)
    }
    yield* actors.run
    yield* health.run(actors.configOf)

    /** A monitor was created, changed, paused or resumed: (re)start its actor with the new settings. */
    const upsert = (row: MonitorRow, at: number) =>
      Effect.suspend(() =>
        actors.owns(row.id)
          ? Effect.sync(() => actors.send(row.id, { _tag: "ConfigChanged", config: configOf(row), at }))
          : Effect.asVoid(actors.startMonitors([row.id]))
      )

    /** A monitor was deleted: its actor stops. */
    const stop = (monitorId: string) => actors.stopMonitors([monitorId])

    /** Resolves once every actor's mailbox is empty and the monitor rows are written (tests). Polls in real time, whatever the Clock. */
    const idle = Effect.gen(function*() {
      for (;;) {
        const busy = actors.busy()
        if (!busy && writer.settled()) return
        if (!busy) writer.hurry()
        yield* Effect.promise(() => new Promise((resolve) => setTimeout(resolve, 2)))
      }
    })

    const seams: MonitorOwnership & EventDelivery = actors
    return {
      send: seams.send,
      startMonitors: seams.startMonitors,
      stopMonitors: seams.stopMonitors,
      owns: seams.owns,
      /** Cluster mode: the shards this instance acquires and releases (src/Cluster/Cluster.ts). */
      startShards: actors.startShards,
      stopShards: actors.stopShards,
      upsert,
      stop,
      stateOf: (monitorId: string) => Option.fromNullable(actors.stateOf(monitorId)),
      durationsOf: actors.durationsOf,
      idle,
      refreshHealth: health.refresh(actors.configOf),
      stats: actors.stats,
      size: actors.size
    } as const
  }),
  dependencies: [StateLoader.Default, MonitorWriter.Default, HealthRefresh.Default, ShardSet.Default, Metrics.Default]
}) {}
