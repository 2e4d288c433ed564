import { HttpApiBuilder } from "@effect/platform"
import { Effect } from "effect"
import { CurrentPrincipal } from "../Auth/Principal.js"
import { Api } from "../Http/Api.js"
import { Maintenance } from "./Maintenance.js"

export const MaintenanceHttpLive = HttpApiBuilder.group(Api, "maintenance", (handlers) =>
  Effect.gen(function*() {
    const maintenance = yield* Maintenance
    const org = Effect.map(CurrentPrincipal, (p) => p.orgId)
    return handlers
      .handle("create", ({ payload }) => Effect.flatMap(org, (orgId) => maintenance.create(orgId, payload)))
      .handle("list", () => Effect.flatMap(org, (orgId) => Effect.map(maintenance.list(orgId), (windows) => ({ windows }))))
      .handle("active", () => Effect.flatMap(org, (orgId) => maintenance.active(orgId)))
      .handle("history", ({ urlParams }) => Effect.flatMap(org, (orgId) => maintenance.history(orgId, urlParams)))
      .handle("preview", ({ payload }) => maintenance.preview(payload))
      .handle("get", ({ path }) => Effect.flatMap(org, (orgId) => maintenance.get(orgId, path.windowId)))
      .handle("update", ({ path, payload }) => Effect.flatMap(org, (orgId) => maintenance.update(orgId, path.windowId, payload)))
      .handle("delete", ({ path }) => Effect.flatMap(org, (orgId) => maintenance.remove(orgId, path.windowId)))
      .handle("override", ({ path, payload }) => Effect.flatMap(org, (orgId) => maintenance.override(orgId, path.windowId, payload)))
      .handle("occurrences", ({ path, urlParams }) =>
        Effect.flatMap(org, (orgId) => maintenance.occurrences(orgId, path.windowId, urlParams)))
  })
)
