import { Context, type Effect } from "effect"
import type { IncidentType } from "../Engine/Model.js"

/**
 * Where the engine reports an incident that a maintenance window suppressed (`Suppressed` effects):
 * the maintenance service counts it on the history entry of each active period covering the monitor
 * at that instant. A tag of its own (no imports of the engine) so that the engine can look it up
 * without an import cycle; provided by MaintenanceLive (src/Maintenance/Maintenance.ts).
 */
export class MaintenanceSuppressions extends Context.Tag("jobmon/MaintenanceSuppressions")<
  MaintenanceSuppressions,
  { readonly count: (monitorId: string, type: IncidentType, at: number) => Effect.Effect<void> }
>() {}
