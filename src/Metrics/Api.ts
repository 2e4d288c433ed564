import { HttpApiEndpoint, HttpApiGroup, HttpApiSchema, OpenApi } from "@effect/platform"
import { RequiredScope } from "../Auth/Access.js"
import { Authentication } from "../Auth/Api.js"
import { ServiceUnavailable } from "../Domain/Errors.js"

/** The Prometheus text exposition format, version 0.0.4 (what prom-client writes). */
export const EXPOSITION_CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"

/**
 * Prometheus metrics (docs/metrics.md): the organization's monitors, read from the database, and
 * this instance's own metrics. Scope `metrics`: a `read` token or broader, or a `metrics` token,
 * which can read this and nothing else (docs/decisions.md#metrics).
 */
export class MetricsApi extends HttpApiGroup.make("metrics")
  .add(
    HttpApiEndpoint.get("scrape", "/metrics")
      .addSuccess(HttpApiSchema.Text({ contentType: EXPOSITION_CONTENT_TYPE }))
      .addError(ServiceUnavailable)
      .annotate(
        OpenApi.Description,
        "Prometheus text format. Per monitor of the token's organization (status, up, last ping, next expected ping, " +
          "health score, open incidents; labelled with its id, name and tags), and this instance's own metrics (pings by " +
          "outcome, ping writer batches and commit latency, engine deadline lag, deliveries by outcome, outbox depth, " +
          "process). Every metric is listed in docs/metrics.md."
      )
      .annotate(OpenApi.Summary, "Prometheus metrics (read or metrics scope)")
  )
  .middleware(Authentication)
  .annotate(RequiredScope, "metrics")
  .annotate(OpenApi.Title, "Metrics")
{}
