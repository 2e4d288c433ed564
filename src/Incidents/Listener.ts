import { Context, type Effect } from "effect"
import type { IncidentStatus, IncidentType } from "../Engine/Model.js"

/** A user acknowledged or resolved an incident (the engine's EngineEvent IncidentChanged). */
export interface IncidentChange {
  readonly monitorId: string
  readonly type: IncidentType
  readonly status: IncidentStatus
  /** Epoch milliseconds. */
  readonly at: number
}

/**
 * Who hears about users' changes to incidents (acknowledge, resolve): the engine. Raise and
 * autoResolve are not reported: they come from the engine itself.
 *
 * The tag belongs to Incidents, which uses it; the engine's layer implements it and src/App.ts
 * wires the two. The engine needs Incidents to be built, so Incidents asks for its listener in the
 * operations that report to it, not when it is built: that is what breaks the cycle.
 */
export class IncidentListener extends Context.Tag("jobmon/IncidentListener")<IncidentListener, {
  /** Called after the change committed; its failures are logged, never the caller's. */
  readonly changed: (change: IncidentChange) => Effect.Effect<void>
}>() {}
