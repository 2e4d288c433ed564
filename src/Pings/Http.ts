import { HttpApiBuilder, HttpServerRequest, HttpServerResponse } from "@effect/platform"
import { SqlClient } from "@effect/sql"
import { Clock, Effect, Either } from "effect"
import { CurrentPrincipal } from "../Auth/Principal.js"
import { cursorParam, pageOf } from "../Domain/Cursor.js"
import { ValidationError } from "../Domain/Errors.js"
import { iso, parseInstantParam } from "../Domain/Instant.js"
import { DEFAULT_PAGE_LIMIT } from "../Domain/Schemas.js"
import { unavailableOnStatementTimeout as bounded } from "../Db/StatementTimeout.js"
import { Api } from "../Http/Api.js"
import { Metrics } from "../Metrics/Metrics.js"
import { Monitors } from "../Monitors/Monitors.js"
import { DEFAULT_WINDOW, parseWindow } from "../Stats/Window.js"
import { Intake } from "./Intake.js"
import type { OrganizationKeys, PingLog, Run, RunSummary } from "./Api.js"
import { AppConfig } from "../Config.js"
import { OrgKeys, type OrgKeysRow } from "./OrgKeys.js"
import { slugPingUrlOf } from "./PingUrls.js"

/** The HttpApi form of the ping routes: the same intake as the fast route, reply for reply. */
export const PingsHttpLive = HttpApiBuilder.group(Api, "pings", (handlers) =>
  Effect.gen(function*() {
    const intake = yield* Intake
    const { pingAnswered } = yield* Metrics
    const handle = (kind: "start" | "success" | "fail") =>
    ({ path, request }: { path: { readonly monitorId: string }; request: HttpServerRequest.HttpServerRequest }) =>
      Effect.gen(function*() {
        const body = yield* Effect.orElseSucceed(request.text, () => "")
        const q = request.url.indexOf("?")
        const reply = yield* intake.submitEffect({
          monitorId: path.monitorId,
          kind,
          authorization: request.headers["authorization"],
          query: q < 0 ? "" : request.url.slice(q + 1),
          body
        })
        pingAnswered(reply.status)
        return HttpServerResponse.unsafeJson(reply.body, { status: reply.status, headers: reply.headers ?? {} })
      })
    // handleRaw: the intake reads and validates the body itself, exactly as on the fast route.
    return handlers
      .handleRaw("start", handle("start"))
      .handleRaw("success", handle("success"))
      .handleRaw("fail", handle("fail"))
  })
)

interface RunRowDb {
  readonly id: string
  readonly monitor_id: string
  readonly status: Run["status"]
  readonly started_at: Date
  readonly start_inferred: boolean
  readonly finished_at: Date | null
  readonly duration_ms: number | null
  readonly exit_code: number | null
  readonly output: string | null
  readonly output_truncated: boolean
  readonly output_bytes: number | null
}

export const toRun = (row: RunRowDb): Run => ({
  id: row.id,
  monitorId: row.monitor_id,
  status: row.status,
  startedAt: iso(row.started_at),
  startInferred: row.start_inferred,
  finishedAt: iso(row.finished_at),
  durationMs: row.duration_ms,
  exitCode: row.exit_code,
  output: row.output,
  outputTruncated: row.output_truncated,
  outputBytes: row.output_bytes
})

const timeParam = (name: string, value: string | undefined) =>
  value === undefined ? Effect.succeed(undefined) : Effect.map(parseInstantParam(name, value), (ms) => new Date(ms))

export const RunsHttpLive = HttpApiBuilder.group(Api, "runs", (handlers) =>
  Effect.gen(function*() {
    const monitors = yield* Monitors
    const sql = yield* SqlClient.SqlClient
    return handlers.handle("list", ({ path, urlParams }) =>
      bounded(Effect.gen(function*() {
        const principal = yield* CurrentPrincipal
        const monitor = yield* monitors.find(principal.orgId, path.monitorId)
        const from = yield* timeParam("from", urlParams.from)
        const to = yield* timeParam("to", urlParams.to)
        // A page ends at a run's (startedAt, id).
        const cursor = yield* cursorParam(urlParams.cursor)
        const limit = urlParams.limit ?? DEFAULT_PAGE_LIMIT
        const rows = yield* sql<RunRowDb>`
          select id, monitor_id, status, started_at, start_inferred, finished_at, duration_ms, exit_code,
                 output, output_truncated, output_bytes
          from runs
          where monitor_id = ${monitor.id}
            ${from === undefined ? sql`` : sql`and started_at >= ${from}`}
            ${to === undefined ? sql`` : sql`and started_at < ${to}`}
            ${cursor === undefined ? sql`` : sql`and (started_at, id) < (${cursor.at}, ${cursor.id}::uuid)`}
          order by started_at desc, id desc
          limit ${limit + 1}`.pipe(Effect.orDie)
        const { page, nextCursor } = pageOf(rows, limit, (run) => ({ at: run.started_at, id: run.id }))
        return { runs: page.map(toRun), nextCursor }
      })))
      .handle("logs", ({ path, urlParams }) =>
        bounded(Effect.gen(function*() {
          const principal = yield* CurrentPrincipal
          const monitor = yield* monitors.find(principal.orgId, path.monitorId)
          const cursor = yield* cursorParam(urlParams.cursor)
          const limit = urlParams.limit ?? DEFAULT_PAGE_LIMIT
          const rows = yield* sql<{
            id: string
            monitor_id: string
            received_at: Date
            run_id: string | null
            output: string | null
            output_truncated: boolean
            output_bytes: number | null
          }>`
            select id, monitor_id, received_at, run_id, output, output_truncated, output_bytes
            from ping_logs
            where monitor_id = ${monitor.id}
              ${cursor === undefined ? sql`` : sql`and (received_at, id) < (${cursor.at}, ${cursor.id}::uuid)`}
            order by received_at desc, id desc
            limit ${limit + 1}`.pipe(Effect.orDie)
          const { page, nextCursor } = pageOf(rows, limit, (row) => ({ at: row.received_at, id: row.id }))
          const logs: Array<PingLog> = page.map((row) => ({
            id: row.id,
            monitorId: row.monitor_id,
            receivedAt: row.received_at.toISOString(),
            runId: row.run_id,
            output: row.output,
            outputTruncated: row.output_truncated,
            outputBytes: row.output_bytes
          }))
          return { logs, nextCursor }
        })))
      .handle("summary", ({ path, urlParams }) =>
      bounded(Effect.gen(function*() {
        const window = yield* Either.match(parseWindow(urlParams.window ?? DEFAULT_WINDOW), {
          onLeft: (message) => Effect.fail(new ValidationError({ path: "window", message })),
          onRight: Effect.succeed
        })
        const principal = yield* CurrentPrincipal
        const monitor = yield* monitors.find(principal.orgId, path.monitorId)
        const now = yield* Clock.currentTimeMillis
        const from = new Date(now - window.millis)
        const to = new Date(now)
        // Same window as the percentiles ([now − window, now]); one range scan of runs_monitor_started_idx.
        const [row] = yield* sql<{ total: number; succeeded: number; failed: number; running: number }>`
          select count(*)::int as total,
                 count(*) filter (where status = 'SUCCESS')::int as succeeded,
                 count(*) filter (where status = 'FAIL')::int as failed,
                 count(*) filter (where status = 'RUNNING')::int as running
          from runs
          where monitor_id = ${monitor.id} and started_at >= ${from} and started_at <= ${to}`.pipe(Effect.orDie)
        const summary: RunSummary = {
          monitorId: monitor.id,
          period: window.text,
          from: from.toISOString(),
          to: to.toISOString(),
          total: row?.total ?? 0,
          succeeded: row?.succeeded ?? 0,
          failed: row?.failed ?? 0,
          running: row?.running ?? 0
        }
        return summary
      })))
  })
)

export const KeysHttpLive = HttpApiBuilder.group(Api, "keys", (handlers) =>
  Effect.gen(function*() {
    const keys = yield* OrgKeys
    const { publicUrl } = yield* AppConfig
    const view = (row: OrgKeysRow): OrganizationKeys => ({
      pingKey: row.ping_key,
      slugPingUrl: slugPingUrlOf(publicUrl, row.ping_key),
      badgeKey: row.badge_key,
      badgeUrl: `${publicUrl}/badge/${row.badge_key}`
    })
    const org = Effect.map(CurrentPrincipal, (p) => p.orgId)
    return handlers
      .handle("get", () => Effect.flatMap(org, keys.keysOf).pipe(Effect.flatMap((row) => row === undefined ? Effect.dieMessage("organization without keys") : Effect.succeed(view(row)))))
      .handle("rotatePingKey", () => Effect.flatMap(org, (orgId) => keys.rotate(orgId, "ping")).pipe(Effect.map(view)))
      .handle("rotateBadgeKey", () => Effect.flatMap(org, (orgId) => keys.rotate(orgId, "badge")).pipe(Effect.map(view)))
  })
)
