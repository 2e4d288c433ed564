import { Context, Effect, Layer } from "effect"
import type { IncidentStatus, IncidentType } from "../Engine/Model.js"

/** A user acknowledged or resolved an incident (the engine's EngineEvent IncidentChanged). */
export interface IncidentChange {
  readonly monitorId: string
  readonly type: IncidentType
  readonly status: IncidentStatus
  /** Epoch milliseconds. */
  readonly at: number
}

export interface IncidentListenerShape {
  /** Called after the change committed; its failures are logged, never the caller's. */
  readonly changed: (change: IncidentChange) => Effect.Effect<void>
}

/**
 * Who hears about user changes to incidents. The Incidents service uses it when it is in its
 * context, and does nothing otherwise. Only user operations (acknowledge, resolve) are reported:
 * raise and autoResolve come from the engine itself.
 */
export class IncidentListener extends Context.Tag("jobmon/IncidentListener")<IncidentListener, IncidentListenerShape>() {}

/** Nobody listens. */
export const IncidentListenerNone = Layer.succeed(IncidentListener, { changed: () => Effect.void })

/**
 * For a listener that itself depends on Incidents (the engine does): this layer provides an
 * IncidentListener that forwards to whatever is connected later through IncidentRelay, which
 * breaks the layer cycle. Until something connects, changes are dropped.
 */
export class IncidentRelay extends Context.Tag("jobmon/IncidentRelay")<IncidentRelay, {
  readonly connect: (listener: IncidentListenerShape) => Effect.Effect<void>
}>() {}

export const IncidentRelayLive: Layer.Layer<IncidentRelay | IncidentListener> = Layer.effectContext(
  Effect.sync(() => {
    let target: IncidentListenerShape = { changed: () => Effect.void }
    return Context.make(IncidentListener, { changed: (change) => Effect.suspend(() => target.changed(change)) }).pipe(
      Context.add(IncidentRelay, { connect: (listener) => Effect.sync(() => void (target = listener)) })
    )
  })
)
