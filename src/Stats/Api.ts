import { HttpApiEndpoint, HttpApiGroup, OpenApi } from "@effect/platform"
import { Schema } from "effect"
import { Authentication } from "../Auth/Api.js"
import { NotFound, ServiceUnavailable, ValidationError } from "../Domain/Errors.js"
import { MonitorIdPath } from "../Domain/Schemas.js"

export const PercentileValues = Schema.Struct({
  p50: Schema.Int,
  p75: Schema.Int,
  p90: Schema.Int,
  p95: Schema.Int,
  p99: Schema.Int,
  max: Schema.Int
}).annotations({ description: "milliseconds, rounded to the nearest whole millisecond (halves up)" })

export const DurationStatistics = Schema.Struct({
  monitorId: Schema.String,
  period: Schema.String.annotations({ description: "the requested window, as given" }),
  sampleSize: Schema.Int.annotations({ description: "successful runs with a duration that started in the window" }),
  percentiles: Schema.NullOr(PercentileValues),
  mean: Schema.NullOr(Schema.Number.annotations({ description: "ms" })),
  stddev: Schema.NullOr(Schema.Number.annotations({ description: "sample standard deviation, ms; null below 2 samples" }))
})

export const PercentilesParams = Schema.Struct({
  window: Schema.optional(Schema.String.annotations({
    description: "<n>h, <n>d or <n>w, from 1h to 400d; default 30d"
  }))
})

export class StatsApi extends HttpApiGroup.make("stats")
  .add(
    HttpApiEndpoint.get("percentiles", "/api/monitors/:monitorId/percentiles")
      .setPath(MonitorIdPath)
      .setUrlParams(PercentilesParams)
      .addSuccess(DurationStatistics)
      .addError(NotFound)
      .addError(ValidationError)
      .annotate(
        OpenApi.Description,
        "Duration percentiles of the monitor's successful runs that started in the window ending now. Exact " +
          "(linear interpolation between closest ranks, as PostgreSQL percentile_cont) up to 100,000 runs; above, " +
          "estimated from an hourly histogram within 1% (the X-Statistics-Method header says which)."
      )
      .annotate(OpenApi.Summary, "Duration percentiles, mean and standard deviation of a monitor's runs")
  )
  .addError(ServiceUnavailable)
  .middleware(Authentication)
  .annotate(OpenApi.Title, "Statistics")
{}
