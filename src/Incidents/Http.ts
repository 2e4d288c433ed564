import { HttpApiBuilder } from "@effect/platform"
import { Effect } from "effect"
import { CurrentPrincipal } from "../Auth/Principal.js"
import { unavailableOnStatementTimeout as bounded } from "../Db/StatementTimeout.js"
import { Api } from "../Http/Api.js"
import { Incidents } from "./Incidents.js"

export const IncidentsHttpLive = HttpApiBuilder.group(Api, "incidents", (handlers) =>
  Effect.gen(function*() {
    const incidents = yield* Incidents
    return handlers
      .handle("list", ({ urlParams }) => bounded(Effect.flatMap(CurrentPrincipal, (p) => incidents.list(p.orgId, urlParams))))
      .handle("get", ({ path }) => bounded(Effect.flatMap(CurrentPrincipal, (p) => incidents.get(p.orgId, path.incidentId))))
      .handle("acknowledge", ({ path, payload }) =>
        bounded(Effect.flatMap(CurrentPrincipal, (p) => incidents.acknowledge(p, path.incidentId, payload?.note))))
      .handle("resolve", ({ path, payload }) =>
        bounded(Effect.flatMap(CurrentPrincipal, (p) => incidents.resolve(p, path.incidentId, payload?.note))))
      .handle("addNote", ({ path, payload }) =>
        bounded(Effect.flatMap(CurrentPrincipal, (p) => incidents.addNote(p, path.incidentId, payload.note))))
  })
)
