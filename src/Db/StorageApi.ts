import { HttpApiEndpoint, HttpApiGroup, OpenApi } from "@effect/platform"
import { Schema } from "effect"
import { RequiredScope } from "../Auth/Access.js"
import { Authentication } from "../Auth/Api.js"
import { ServiceUnavailable } from "../Domain/Errors.js"
import { IsoTimestamp } from "../Domain/Schemas.js"

export const StorageJob = Schema.Struct({
  jobId: Schema.Int,
  kind: Schema.Literal("compression", "retention", "refresh", "reorder", "other"),
  procedure: Schema.String.annotations({ description: "the job's procedure, e.g. _timescaledb_functions.policy_compression" }),
  relation: Schema.String.annotations({ description: "the hypertable or continuous aggregate it works on" }),
  scheduleIntervalSeconds: Schema.NullOr(Schema.Number),
  config: Schema.Unknown.annotations({ description: "the job's configuration, as TimescaleDB holds it" }),
  status: Schema.String.annotations({ description: "scheduled, running or paused" }),
  lastRunStartedAt: Schema.NullOr(IsoTimestamp),
  lastRunStatus: Schema.NullOr(Schema.Literal("succeeded", "failed")),
  lastSuccessAt: Schema.NullOr(IsoTimestamp),
  nextStartAt: Schema.NullOr(IsoTimestamp),
  totalRuns: Schema.Int,
  totalFailures: Schema.Int,
  lastError: Schema.NullOr(Schema.Struct({
    at: Schema.NullOr(IsoTimestamp),
    message: Schema.String,
    sqlState: Schema.NullOr(Schema.String)
  })).annotations({ description: "the newest failed run's error (timescaledb_information.job_history)" }),
  hint: Schema.NullOr(Schema.String).annotations({ description: "what a known error means" })
})

export const StorageStatus = Schema.Struct({
  mode: Schema.Literal("timescaledb", "timescaledb-apache", "postgresql"),
  timescaleVersion: Schema.NullOr(Schema.String),
  rollup: Schema.Struct({
    backing: Schema.Literal("continuous-aggregate", "table"),
    refreshedBy: Schema.Literal("service"),
    refreshIntervalSeconds: Schema.Number,
    lastRefreshAt: Schema.NullOr(IsoTimestamp),
    lastFailureAt: Schema.NullOr(IsoTimestamp),
    lastError: Schema.NullOr(Schema.String)
  }),
  jobs: Schema.Array(StorageJob).annotations({
    description: "TimescaleDB background jobs on the service's relations (none without TimescaleDB)"
  }),
  checkedAt: IsoTimestamp
})

/** Server-wide storage state for operators (docs/operations.md): admin scope. */
export class StorageApi extends HttpApiGroup.make("storage")
  .add(
    HttpApiEndpoint.get("status", "/api/admin/storage")
      .addSuccess(StorageStatus)
      .annotate(
        OpenApi.Description,
        "How the database stores runs (mode), how the duration rollup is refreshed, and the state of every " +
          "TimescaleDB background job on the service's relations: schedule, last run and its status, the last " +
          "error, total failures. The service also logs a warning when a job's failures grow."
      )
      .annotate(OpenApi.Summary, "Storage mode and TimescaleDB jobs (admin)")
  )
  .addError(ServiceUnavailable)
  .middleware(Authentication)
  .annotate(RequiredScope, "admin")
  .annotate(OpenApi.Title, "Administration")
{}
