import { HttpApiEndpoint, HttpApiGroup, OpenApi } from "@effect/platform"
import { Schema } from "effect"
import { RequiredScope } from "../Auth/Access.js"
import { Authentication } from "../Auth/Api.js"
import { Conflict, NotFound, RateLimited, ServiceUnavailable, ValidationError } from "../Domain/Errors.js"
import { CursorParam, IsoTimestamp, MonitorIdPath, NextCursor, PageLimitParam } from "../Domain/Schemas.js"
import { FailPingBody, PingQuery, PingResponse, StartPingBody, SuccessPingBody } from "./Schemas.js"

const ping = <const Name extends "start" | "success" | "fail", P extends Schema.Schema.Any>(name: Name, payload: P, summary: string) =>
  HttpApiEndpoint.post(name, `/api/ping/:monitorId/${name}`)
    .setPath(MonitorIdPath)
    .setUrlParams(PingQuery)
    .setPayload(payload)
    .addSuccess(PingResponse)
    .addError(ValidationError)
    .addError(NotFound)
    .addError(Conflict)
    .addError(RateLimited)
    .addError(ServiceUnavailable)
    .annotate(OpenApi.Summary, summary)

/**
 * The ping intake. A ping is answered 200 only after its run is committed to the database.
 * These routes are served by a lean handler ahead of the router (src/Pings/FastRoute.ts); this
 * group is their contract, and serves them itself when that handler is off.
 */
export class PingsApi extends HttpApiGroup.make("pings")
  .add(ping("start", StartPingBody, "A job started: opens a run and returns its runId"))
  .add(ping("success", SuccessPingBody, "A job succeeded: closes the run named by runId, else the newest open run, else records a run"))
  .add(ping("fail", FailPingBody, "A job failed: like success, with exitCode and error output"))
  .middleware(Authentication)
  .annotate(RequiredScope, "ping")
  .annotate(OpenApi.Title, "Ping intake")
{}

export const Run = Schema.Struct({
  id: Schema.String,
  monitorId: Schema.String,
  status: Schema.Literal("RUNNING", "SUCCESS", "FAIL"),
  startedAt: IsoTimestamp,
  startInferred: Schema.Boolean,
  finishedAt: Schema.NullOr(IsoTimestamp),
  durationMs: Schema.NullOr(Schema.Number),
  exitCode: Schema.NullOr(Schema.Number),
  output: Schema.NullOr(Schema.String),
  outputTruncated: Schema.Boolean,
  outputBytes: Schema.NullOr(Schema.Number)
})
export type Run = typeof Run.Type

export const ListRunsParams = Schema.Struct({
  from: Schema.optional(Schema.String.annotations({ description: "ISO 8601; runs started at or after" })),
  to: Schema.optional(Schema.String.annotations({ description: "ISO 8601; runs started before" })),
  limit: PageLimitParam,
  cursor: CursorParam
})

export const RunSummaryParams = Schema.Struct({
  window: Schema.optional(Schema.String.annotations({
    description: "<n>h, <n>d or <n>w, from 1h to 400d; default 30d"
  }))
})

export const RunSummary = Schema.Struct({
  monitorId: Schema.String,
  period: Schema.String.annotations({ description: "the requested window, as given" }),
  from: IsoTimestamp.annotations({ description: "start of the window (now − window), inclusive" }),
  to: IsoTimestamp.annotations({ description: "end of the window (now), inclusive" }),
  total: Schema.Int.annotations({ description: "runs that started in the window, whatever their status" }),
  succeeded: Schema.Int.annotations({ description: "of those, status SUCCESS" }),
  failed: Schema.Int.annotations({ description: "of those, status FAIL" }),
  running: Schema.Int.annotations({ description: "of those, still RUNNING" })
})
export type RunSummary = typeof RunSummary.Type

export const PingLog = Schema.Struct({
  id: Schema.String,
  monitorId: Schema.String,
  receivedAt: IsoTimestamp,
  runId: Schema.NullOr(Schema.String).annotations({ description: "the rid the log ping gave, if any" }),
  output: Schema.NullOr(Schema.String).annotations({ description: "redacted and truncated like a run's; null when the monitor does not capture output" }),
  outputTruncated: Schema.Boolean,
  outputBytes: Schema.NullOr(Schema.Number)
})
export type PingLog = typeof PingLog.Type

export const ListLogsParams = Schema.Struct({ limit: PageLimitParam, cursor: CursorParam })

export class RunsApi extends HttpApiGroup.make("runs")
  .add(
    HttpApiEndpoint.get("list", "/api/monitors/:monitorId/runs")
      .setPath(MonitorIdPath)
      .setUrlParams(ListRunsParams)
      .addSuccess(Schema.Struct({ runs: Schema.Array(Run), nextCursor: NextCursor }))
      .addError(NotFound)
      .addError(ValidationError)
      .annotate(OpenApi.Summary, "A monitor's runs, newest first")
  )
  .add(
    HttpApiEndpoint.get("summary", "/api/monitors/:monitorId/runs/summary")
      .setPath(MonitorIdPath)
      .setUrlParams(RunSummaryParams)
      .addSuccess(RunSummary)
      .addError(NotFound)
      .addError(ValidationError)
      .annotate(
        OpenApi.Description,
        "How many of the monitor's runs started in the window ending now, successful, failed or still " +
          "running (the percentiles' sampleSize counts only successful runs with a duration)."
      )
      .annotate(OpenApi.Summary, "Counts of a monitor's runs in a window, by status")
  )
  .add(
    HttpApiEndpoint.get("logs", "/api/monitors/:monitorId/logs")
      .setPath(MonitorIdPath)
      .setUrlParams(ListLogsParams)
      .addSuccess(Schema.Struct({ logs: Schema.Array(PingLog), nextCursor: NextCursor }))
      .addError(NotFound)
      .addError(ValidationError)
      .annotate(OpenApi.Summary, "A monitor's log pings (/ping/{pingId}/log: output without a change of state), newest first")
  )
  .addError(ServiceUnavailable)
  .middleware(Authentication)
  .annotate(OpenApi.Title, "Runs")
{}

export const OrganizationKeys = Schema.Struct({
  pingKey: Schema.String.annotations({ description: "the organization's ping key: /ping/<pingKey>/<slug> pings the monitor with that slug" }),
  slugPingUrl: Schema.String.annotations({ description: "the base of slug ping URLs: append /<slug> (and ?create=1 to create the monitor on its first ping)" }),
  badgeKey: Schema.String.annotations({ description: "the organization's badge key: /badge/<badgeKey>/<slug or tag>.svg is public" }),
  badgeUrl: Schema.String.annotations({ description: "the base of badge URLs: append /<slug or tag>.svg, .json or .shields" })
})
export type OrganizationKeys = typeof OrganizationKeys.Type

/**
 * The organization's capability keys (docs/decisions.md#ping-urls-slugs-and-badges): credentials, so
 * admin only, and rotatable (the old key answers 404 at once).
 */
export class KeysApi extends HttpApiGroup.make("keys")
  .add(
    HttpApiEndpoint.get("get", "/api/keys")
      .addSuccess(OrganizationKeys)
      .annotate(OpenApi.Summary, "The organization's ping key and badge key (admin)")
  )
  .add(
    HttpApiEndpoint.post("rotatePingKey", "/api/keys/ping/rotate")
      .addSuccess(OrganizationKeys)
      .annotate(OpenApi.Summary, "A new ping key: every slug ping URL changes, the old ones answer 404")
  )
  .add(
    HttpApiEndpoint.post("rotateBadgeKey", "/api/keys/badge/rotate")
      .addSuccess(OrganizationKeys)
      .annotate(OpenApi.Summary, "A new badge key: every badge URL changes, the old ones answer 404")
  )
  .addError(ServiceUnavailable)
  .middleware(Authentication)
  .annotate(RequiredScope, "admin")
  .annotate(OpenApi.Title, "Ping and badge keys")
{}
