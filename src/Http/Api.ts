import { HttpApi, HttpApiEndpoint, HttpApiGroup, OpenApi } from "@effect/platform"
import { Schema } from "effect"
import { AuthApi, TokensApi, UsersApi } from "../Auth/Api.js"
import { MethodNotAllowed, NotFound, PayloadTooLarge, RateLimited, ServiceUnavailable, ValidationError } from "../Domain/Errors.js"
import { MonitorsApi } from "../Monitors/Api.js"
import { KeysApi, PingsApi, RunsApi } from "../Pings/Api.js"
import { StatsApi } from "../Stats/Api.js"
import { IncidentsApi } from "../Incidents/Api.js"
import { EventsApi } from "../Events/Api.js"
import { MaintenanceApi } from "../Maintenance/Api.js"
import { AlertChannelsApi, ChatApi, WebhooksApi } from "../Delivery/Api.js"
import { ClusterApi } from "../Cluster/Api.js"
import { StorageApi } from "../Db/StorageApi.js"
import { MetricsApi } from "../Metrics/Api.js"

export class HealthApi extends HttpApiGroup.make("health")
  .add(
    HttpApiEndpoint.get("healthz", "/healthz")
      .addSuccess(Schema.Struct({ status: Schema.Literal("ok"), database: Schema.String }))
      .addError(ServiceUnavailable)
      .annotate(OpenApi.Summary, "Liveness and database check (public)")
  )
{}

/** The whole contract. `/api` is version 1 (docs/decisions.md#versioning). */
export class Api extends HttpApi.make("jobmon")
  .add(HealthApi)
  .add(AuthApi)
  .add(UsersApi)
  .add(TokensApi)
  .add(MonitorsApi)
  .add(PingsApi)
  .add(RunsApi)
  .add(KeysApi)
  .add(StatsApi)
  .add(IncidentsApi)
  .add(EventsApi)
  .add(MaintenanceApi)
  .add(WebhooksApi)
  .add(ChatApi)
  .add(AlertChannelsApi)
  .add(StorageApi)
  .add(ClusterApi)
  .add(MetricsApi)
  .addError(ValidationError)
  .addError(NotFound)
  .addError(MethodNotAllowed)
  .addError(PayloadTooLarge)
  .addError(RateLimited)
  .annotate(OpenApi.Title, "jobmon API")
  .annotate(OpenApi.Version, "1")
  .annotate(OpenApi.Description, "Job monitoring: pings, runs, incidents, maintenance windows and alerts.")
{}
