import { Clock, Context, Effect, Layer, Option } from "effect"
import { IncidentRelay } from "../Incidents/Listener.js"
import type { MonitorRow } from "../Monitors/MonitorsRepo.js"
import { makeActors } from "./Actors.js"
import { HealthRefresh } from "./HealthRefresh.js"
import type { EngineEvent } from "./Model.js"
import { MonitorWriter } from "./MonitorWriter.js"
import { configOf, StateLoader } from "./StateLoader.js"

/**
 * The incident engine (docs/engine.md): every monitor an actor (src/Engine/Actors.ts) judged by
 * the pure rules (src/Engine/Rules.ts), rebuilt from the database by one loader
 * (src/Engine/StateLoader.ts), its monitor row written by a coalescing writer
 * (src/Engine/MonitorWriter.ts) and its health score refreshed apart (src/Engine/HealthRefresh.ts).
 * The seams a cluster of instances needs: `send(monitorId, event)` to deliver an event,
 * `startMonitors` / `stopMonitors` / `owns` for the monitors an instance runs, and the state loader.
 */

/** Whether a maintenance window covers a monitor at an instant. The maintenance module provides it. */
export class MaintenanceCheck extends Context.Tag("jobmon/MaintenanceCheck")<
  MaintenanceCheck,
  { readonly inMaintenance: (monitorId: string, at: number) => boolean }
>() {}

/** Before maintenance windows exist, nothing is ever in maintenance. */
export const NoMaintenance = Layer.succeed(MaintenanceCheck, { inMaintenance: () => false })

export class Engine extends Effect.Service<Engine>()("jobmon/Engine", {
  scoped: Effect.gen(function*() {
    const maintenance = yield* MaintenanceCheck
    const writer = yield* MonitorWriter
    const health = yield* HealthRefresh
    const actors = yield* makeActors({ inMaintenance: (id, at) => maintenance.inMaintenance(id, at) })

    // Start-up: every monitor's actor from the database, before the intake takes pings.
    const startedAt = yield* Clock.currentTimeMillis
    yield* actors.startMonitors()
    const loadedMs = (yield* Clock.currentTimeMillis) - startedAt
    yield* Effect.logInfo(`incident engine: ${actors.size()} monitor actors rebuilt in ${loadedMs} ms`)
    yield* actors.run
    yield* health.run(actors.configOf)

    /** A monitor was created, changed, paused or resumed: (re)start its actor with the new settings. */
    const upsert = (row: MonitorRow, at: number) =>
      actors.owns(row.id)
        ? Effect.sync(() => actors.send(row.id, { _tag: "ConfigChanged", config: configOf(row), at }))
        : Effect.asVoid(actors.startMonitors([row.id]))

    /** A monitor was deleted: its actor stops. */
    const stop = (monitorId: string) => actors.stopMonitors([monitorId])

    // Users' acknowledgements and resolutions reach the actor of the incident's monitor.
    const relay = yield* IncidentRelay
    yield* relay.connect({
      changed: (change) =>
        Effect.sync(() => actors.send(change.monitorId, { _tag: "IncidentChanged", type: change.type, status: change.status, at: change.at }))
    })

    /** Resolves once every actor's mailbox is empty and the monitor rows are written (tests). Polls in real time, whatever the Clock. */
    const idle = Effect.gen(function*() {
      for (;;) {
        const busy = actors.busy()
        if (!busy && writer.settled()) return
        if (!busy) writer.hurry()
        yield* Effect.promise(() => new Promise((resolve) => setTimeout(resolve, 2)))
      }
    })

    return {
      send: actors.send as (monitorId: string, event: EngineEvent) => void,
      startMonitors: actors.startMonitors,
      stopMonitors: actors.stopMonitors,
      owns: actors.owns,
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
  dependencies: [StateLoader.Default, MonitorWriter.Default, HealthRefresh.Default]
}) {}
