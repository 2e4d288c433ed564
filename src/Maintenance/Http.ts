import { HttpApiBuilder } from "@effect/platform"
import { Effect } from "effect"
import { CurrentPrincipal } from "../Auth/Principal.js"
import { unavailableOnStatementTimeout as bounded } from "../Db/StatementTimeout.js"
import { Api } from "../Http/Api.js"
import { Maintenance } from "./Maintenance.js"

export const MaintenanceHttpLive = HttpApiBuilder.group(Api, "maintenance", (handlers) =>
  Effect.gen(function*() {
    const maintenance = yield* Maintenance
    const org = Effect.map(CurrentPrincipal, (p) => p.orgId)
    return handlers
      .handle("create", ({ payload }) => bounded(Effect.flatMap(org, (orgId) => maintenance.create(orgId, payload))))
      .handle("list", () =>
        bounded(Effect.flatMap(org, (orgId) => Effect.map(maintenance.list(orgId), (windows) => ({ windows })))))
      .handle("active", () => bounded(Effect.flatMap(org, (orgId) => maintenance.active(orgId))))
      .handle("history", ({ urlParams }) => bounded(Effect.flatMap(org, (orgId) => maintenance.history(orgId, urlParams))))
      .handle("preview", ({ payload }) => bounded(maintenance.preview(payload)))
      .handle("get", ({ path }) => bounded(Effect.flatMap(org, (orgId) => maintenance.get(orgId, path.windowId))))
      .handle("update", ({ path, payload }) =>
        bounded(Effect.flatMap(org, (orgId) => maintenance.update(orgId, path.windowId, payload))))
      .handle("delete", ({ path }) => bounded(Effect.flatMap(org, (orgId) => maintenance.remove(orgId, path.windowId))))
      .handle("override", ({ path, payload }) =>
        bounded(Effect.flatMap(org, (orgId) => maintenance.override(orgId, path.windowId, payload))))
      .handle("occurrences", ({ path, urlParams }) =>
        bounded(Effect.flatMap(org, (orgId) => maintenance.occurrences(orgId, path.windowId, urlParams))))
  })
)
