import { HttpApiBuilder } from "@effect/platform"
import { Effect } from "effect"
import { CurrentPrincipal } from "../Auth/Principal.js"
import { unavailableOnStatementTimeout as bounded } from "../Db/StatementTimeout.js"
import { Api } from "../Http/Api.js"
import { Events } from "./Events.js"

export const EventsHttpLive = HttpApiBuilder.group(Api, "events", (handlers) =>
  Effect.gen(function*() {
    const events = yield* Events
    return handlers.handle("list", ({ urlParams }) =>
      bounded(Effect.gen(function*() {
        const principal = yield* CurrentPrincipal
        const rows = yield* events.list(principal.orgId, {
          after: urlParams.after,
          before: urlParams.before,
          limit: urlParams.limit ?? 100,
          type: urlParams.type,
          monitorId: urlParams.monitorId
        })
        return { events: rows.map((e) => ({ seq: e.seq, event: e.event, id: e.id, createdAt: e.createdAt, data: e.data })) }
      })))
  })
)
