import { Layer } from "effect"
import { Tokens } from "./Auth/Tokens.js"
import { BootstrapLive } from "./Bootstrap.js"
import { AppConfigLive, type AppConfig } from "./Config.js"
import { DatabaseLive } from "./Db/Database.js"
import { HttpServerLive, NoFastRoutes } from "./Http/Server.js"
import { Monitors } from "./Monitors/Monitors.js"

/** The services behind the HTTP server, over a database. */
export const ServicesLive = Layer.mergeAll(Tokens.Default, Monitors.Default)

/** The one place that composes the whole service, given its configuration. */
export const AppFromConfig = (config: Layer.Layer<AppConfig, unknown>) =>
  HttpServerLive.pipe(
    Layer.provide(NoFastRoutes),
    Layer.provideMerge(BootstrapLive),
    Layer.provideMerge(ServicesLive),
    Layer.provideMerge(DatabaseLive),
    Layer.provideMerge(config)
  )

export const AppLive = AppFromConfig(AppConfigLive)
