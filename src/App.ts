import { Effect, Layer } from "effect"
import { Accounts } from "./Auth/Accounts.js"
import { ClusterKeepersLive, ClusterRunnerLive } from "./Cluster/Cluster.js"
import { News } from "./Cluster/News.js"
import type { IncidentStatus, IncidentType } from "./Engine/Model.js"
import { Tokens } from "./Auth/Tokens.js"
import { BootstrapLive } from "./Bootstrap.js"
import { AppConfigLive, type AppConfig } from "./Config.js"
import { DatabaseLive } from "./Db/Database.js"
import { JobWatch } from "./Db/Jobs.js"
import { StoragePoliciesLive } from "./Db/Policies.js"
import { AlertChannels } from "./Delivery/AlertChannels.js"
import { Webhooks } from "./Delivery/Webhooks.js"
import { Engine } from "./Engine/Engine.js"
import { Events } from "./Events/Events.js"
import { HttpServerLive, NoFastRoutes } from "./Http/Server.js"
import { Incidents } from "./Incidents/Incidents.js"
import { IncidentListener } from "./Incidents/Listener.js"
import { MaintenanceLive } from "./Maintenance/Maintenance.js"
import { Metrics } from "./Metrics/Metrics.js"
import { MonitorCache } from "./Monitors/MonitorCache.js"
import { Monitors } from "./Monitors/Monitors.js"
import { FastPingRoutes } from "./Pings/FastRoute.js"
import { Intake } from "./Pings/Intake.js"
import { OrgKeys } from "./Pings/OrgKeys.js"
import { PublicRoutesLive } from "./Pings/PingUrlRoute.js"
import { Rollup } from "./Stats/Rollup.js"
import { Stats } from "./Stats/Stats.js"

/*
 * How the service is composed. Every service is an Effect.Service that names its own dependencies,
 * and is used here as `X.Default`: a layer used in several places (Events.Default, Engine.Default,
 * MonitorCache.Default…) is the same object each time, so it is built once. What a service needs
 * but does not name (the database, the configuration, the tags below) comes from the layers under it.
 *
 * Import cycles are broken one way: the module that needs something from a module that depends on
 * it owns a Context.Tag describing what it needs; the other module's layer implements that tag; this
 * file wires the two (IncidentListener below; the engine's MaintenanceCheck, implemented by
 * MaintenanceLive).
 */

/**
 * The engine hears users' acknowledgements and resolutions: Incidents' IncidentListener, implemented
 * over the engine (the actor of the incident's monitor gets an IncidentChanged event).
 */
const EngineIncidentListener = Layer.scoped(
  IncidentListener,
  Effect.gen(function*() {
    const engine = yield* Engine
    const news = yield* News
    // Cluster mode: the change may have been made on another instance than the monitor's owner.
    yield* news.onChange((change) => {
      if (change.k !== "incident") return
      engine.send(change.monitorId, {
        _tag: "IncidentChanged",
        type: change.type as IncidentType,
        status: change.status as IncidentStatus,
        at: change.at
      })
    })
    return {
      changed: (change) =>
        Effect.sync(() => engine.send(change.monitorId, { _tag: "IncidentChanged", type: change.type, status: change.status, at: change.at })).pipe(
          Effect.zipRight(news.publish({ k: "incident", monitorId: change.monitorId, type: change.type, status: change.status, at: change.at }))
        )
    }
  })
)

/** What the engine is built over: incidents, maintenance windows and the services the others share. */
const FoundationLive = Layer.mergeAll(
  Tokens.Default,
  Accounts.Default,
  MonitorCache.Default,
  OrgKeys.Default,
  Events.Default,
  Incidents.Default,
  // maintenance windows: the engine's MaintenanceCheck and suppression counting (docs/maintenance.md)
  MaintenanceLive
)

const CoreServicesLive = Layer.mergeAll(
  // this instance's Prometheus registry (GET /metrics); the same layer the intake, the engine and
  // the delivery worker name, built once
  Metrics.Default,
  // several instances: the shards' keepers, over the engine (src/Cluster/Cluster.ts)
  ClusterKeepersLive,
  Monitors.Default,
  Intake.Default,
  Stats.Default,
  // the same layer as Stats's dependency (built once): the storage endpoint reads its refresh status
  Rollup.Default,
  StoragePoliciesLive,
  // TimescaleDB background jobs, watched (docs/operations.md)
  JobWatch.Default,
  EngineIncidentListener
).pipe(
  Layer.provideMerge(Engine.Default),
  Layer.provideMerge(FoundationLive),
  // one instance, or one of several: the cluster runner and where run-once work runs
  Layer.provideMerge(Layer.mergeAll(ClusterRunnerLive, News.Default))
)

/**
 * Outbound webhooks and their delivery worker (docs/delivery.md), and the alert channels
 * (docs/alerts.md), over the core services (reminders read the engine's MaintenanceCheck).
 */
const ServicesLive = Layer.mergeAll(Webhooks.Default, AlertChannels.Default).pipe(Layer.provideMerge(CoreServicesLive))

export interface AppOptions {
  /** Serve the ping routes from the lean node:http handler (default) or through the HttpApi router. */
  readonly fastPings?: boolean
}

/** The one place that composes the whole service, given its configuration. */
export const AppFromConfig = (config: Layer.Layer<AppConfig, unknown>, options: AppOptions = {}) =>
  HttpServerLive.pipe(
    Layer.provide(options.fastPings === false ? NoFastRoutes : FastPingRoutes),
    // ping URLs and badges: the URL is the credential (src/Pings/PingUrlRoute.ts)
    Layer.provide(PublicRoutesLive),
    Layer.provideMerge(BootstrapLive),
    Layer.provideMerge(ServicesLive),
    Layer.provideMerge(DatabaseLive),
    Layer.provideMerge(config)
  )

export const AppLive = AppFromConfig(AppConfigLive)
