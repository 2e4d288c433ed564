import { Layer } from "effect"
import { Accounts } from "./Auth/Accounts.js"
import { Tokens } from "./Auth/Tokens.js"
import { BootstrapLive } from "./Bootstrap.js"
import { AppConfigLive, type AppConfig } from "./Config.js"
import { DatabaseLive } from "./Db/Database.js"
import { JobWatch } from "./Db/Jobs.js"
import { StoragePoliciesLive } from "./Db/Policies.js"
import { HttpServerLive, NoFastRoutes } from "./Http/Server.js"
import { MonitorCache } from "./Monitors/MonitorCache.js"
import { Monitors } from "./Monitors/Monitors.js"
import { MonitorsRepo } from "./Monitors/MonitorsRepo.js"
import { FastPingRoutes } from "./Pings/FastRoute.js"
import { Intake } from "./Pings/Intake.js"
import { Rollup } from "./Stats/Rollup.js"
import { Stats } from "./Stats/Stats.js"
import { Incidents } from "./Incidents/Incidents.js"
import { IncidentsRepo } from "./Incidents/IncidentsRepo.js"
import { Events } from "./Events/Events.js"
import { Engine } from "./Engine/Engine.js"
import { MaintenanceLive } from "./Maintenance/Maintenance.js"
import { IncidentRelayLive } from "./Incidents/Listener.js"
import { Webhooks } from "./Delivery/Webhooks.js"

/** The services behind the HTTP server, over a database; shared pieces are built once. */
const SharedLive = Layer.mergeAll(
  Tokens.Default,
  Accounts.Default,
  MonitorCache.Default,
  MonitorsRepo.Default,
  Events.Default,
  IncidentsRepo.Default,
  IncidentRelayLive,
  // maintenance windows: the engine's MaintenanceCheck and suppression counting (docs/maintenance.md)
  MaintenanceLive
)

const CoreServicesLive = Layer.mergeAll(
  Monitors.DefaultWithoutDependencies,
  Intake.DefaultWithoutDependencies,
  Stats.Default,
  // the same layer as Stats's dependency (built once): the storage endpoint reads its refresh status
  Rollup.Default,
  StoragePoliciesLive,
  // TimescaleDB background jobs, watched (docs/operations.md)
  JobWatch.Default
).pipe(
  Layer.provideMerge(Engine.Default),
  Layer.provideMerge(Incidents.DefaultWithoutDependencies),
  Layer.provideMerge(SharedLive)
)

/** Outbound webhooks and their delivery worker (docs/delivery.md), over the core services. */
export const ServicesLive = Webhooks.Default.pipe(Layer.provideMerge(CoreServicesLive))

export interface AppOptions {
  /** Serve the ping routes from the lean node:http handler (default) or through the HttpApi router. */
  readonly fastPings?: boolean
}

/** The one place that composes the whole service, given its configuration. */
export const AppFromConfig = (config: Layer.Layer<AppConfig, unknown>, options: AppOptions = {}) =>
  HttpServerLive.pipe(
    Layer.provide(options.fastPings === false ? NoFastRoutes : FastPingRoutes),
    Layer.provideMerge(BootstrapLive),
    Layer.provideMerge(ServicesLive),
    Layer.provideMerge(DatabaseLive),
    Layer.provideMerge(config)
  )

export const AppLive = AppFromConfig(AppConfigLive)
