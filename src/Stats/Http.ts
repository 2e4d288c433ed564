import { HttpApiBuilder, HttpApp, HttpServerResponse } from "@effect/platform"
import { Effect } from "effect"
import { CurrentPrincipal } from "../Auth/Principal.js"
import { unavailableOnStatementTimeout as bounded } from "../Db/StatementTimeout.js"
import { Api } from "../Http/Api.js"
import { Monitors } from "../Monitors/Monitors.js"
import { Stats } from "./Stats.js"

/** Response header naming how the statistics were computed: `exact` or `approximate`. */
export const METHOD_HEADER = "x-statistics-method"

export const StatsHttpLive = HttpApiBuilder.group(Api, "stats", (handlers) =>
  Effect.gen(function*() {
    const stats = yield* Stats
    const monitors = yield* Monitors
    return handlers.handle("percentiles", ({ path, urlParams }) =>
      bounded(Effect.gen(function*() {
        const window = yield* stats.window(urlParams.window)
        const { orgId } = yield* CurrentPrincipal
        const monitor = yield* monitors.find(orgId, path.monitorId)
        const { method, statistics } = yield* stats.percentiles(monitor.id, window.text, window.millis)
        yield* HttpApp.appendPreResponseHandler((_request, response) =>
          Effect.succeed(HttpServerResponse.setHeader(response, METHOD_HEADER, method))
        )
        return statistics
      })))
  })
)
