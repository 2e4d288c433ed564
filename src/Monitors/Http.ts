import { HttpApiBuilder } from "@effect/platform"
import { Clock, Effect } from "effect"
import { CurrentPrincipal, type Principal } from "../Auth/Principal.js"
import { scopeAllows } from "../Auth/Scopes.js"
import { AppConfig } from "../Config.js"
import { pingUrlOf } from "../Pings/PingUrls.js"
import { parseInstantParam } from "../Domain/Instant.js"
import { unavailableOnStatementTimeout as bounded } from "../Db/StatementTimeout.js"
import { Api } from "../Http/Api.js"
import { Maintenance } from "../Maintenance/Maintenance.js"
import type { MonitorRow } from "./MonitorsRepo.js"
import { checkSchedule, Monitors, toMonitor } from "./Monitors.js"
import { describeSchedule, nextOccurrences } from "./Schedule.js"

export const MonitorsHttpLive = HttpApiBuilder.group(Api, "monitors", (handlers) =>
  Effect.gen(function*() {
    const monitors = yield* Monitors
    const maintenance = yield* Maintenance
    const { publicUrl } = yield* AppConfig
    /** The resource as this caller sees it: pingUrl (a credential) for write and admin only. */
    const view = (row: MonitorRow, now: number, principal: Principal) => {
      const monitor = toMonitor(row, maintenance.monitorInfo(row.id, now))
      return scopeAllows(principal.scope, "write") ? { ...monitor, pingUrl: pingUrlOf(publicUrl, row.ping_id) } : monitor
    }
    /** The resource with its maintenance state now (an in-memory look-up). */
    const withMaintenance = (row: MonitorRow) =>
      Effect.zipWith(Clock.currentTimeMillis, CurrentPrincipal, (now, principal) => view(row, now, principal))
    const manyWithMaintenance = (rows: ReadonlyArray<MonitorRow>) =>
      Effect.zipWith(Clock.currentTimeMillis, CurrentPrincipal, (now, principal) => rows.map((row) => view(row, now, principal)))
    const org = Effect.map(CurrentPrincipal, (p) => p.orgId)
    return handlers
      .handle("create", ({ payload }) =>
        bounded(Effect.flatMap(org, (orgId) => monitors.create(orgId, payload)).pipe(Effect.flatMap(withMaintenance))))
      .handle("list", ({ urlParams }) =>
        bounded(Effect.gen(function*() {
          const { rows, ...rest } = yield* monitors.list(yield* org, urlParams)
          return { monitors: yield* manyWithMaintenance(rows), ...rest }
        })))
      .handle("summary", () => bounded(Effect.flatMap(org, monitors.summary)))
      .handle("get", ({ path }) =>
        bounded(Effect.flatMap(org, (orgId) => monitors.find(orgId, path.monitorId)).pipe(Effect.flatMap(withMaintenance))))
      .handle("update", ({ path, payload }) =>
        bounded(
          Effect.flatMap(org, (orgId) => monitors.update(orgId, path.monitorId, payload)).pipe(Effect.flatMap(withMaintenance))
        ))
      .handle("delete", ({ path }) => bounded(Effect.flatMap(org, (orgId) => monitors.remove(orgId, path.monitorId))))
      .handle("pause", ({ path }) =>
        bounded(
          Effect.flatMap(org, (orgId) => monitors.setPaused(orgId, path.monitorId, true)).pipe(Effect.flatMap(withMaintenance))
        ))
      .handle("resume", ({ path }) =>
        bounded(
          Effect.flatMap(org, (orgId) => monitors.setPaused(orgId, path.monitorId, false)).pipe(Effect.flatMap(withMaintenance))
        ))
      .handle("rotatePingUrl", ({ path }) =>
        bounded(Effect.flatMap(org, (orgId) => monitors.rotatePingId(orgId, path.monitorId)).pipe(Effect.flatMap(withMaintenance))))
      .handle("preview", ({ payload }) =>
        Effect.gen(function*() {
          const schedule = yield* checkSchedule(payload.schedule)
          const from = payload.from === undefined ? yield* Clock.currentTimeMillis : yield* parseInstantParam("from", payload.from)
          const occurrences = nextOccurrences(schedule, from, payload.count ?? 10)
          return {
            schedule: { type: schedule.type, expression: schedule.expression, timezone: schedule.timezone },
            description: describeSchedule(schedule),
            occurrences: occurrences.map((t) => new Date(t).toISOString())
          }
        }))
  })
)
