import { HttpApiEndpoint, HttpApiGroup, OpenApi } from "@effect/platform"
import { Schema } from "effect"
import { RequiredScope } from "../Auth/Access.js"
import { Authentication } from "../Auth/Api.js"
import { ServiceUnavailable } from "../Domain/Errors.js"
import { IsoTimestamp } from "../Domain/Schemas.js"

export const ClusterMember = Schema.Struct({
  address: Schema.String.annotations({ description: "CLUSTER_HOST:CLUSTER_PORT of the instance" }),
  shards: Schema.Array(Schema.Int).annotations({ description: "the shards whose monitors it judges" }),
  changedAt: IsoTimestamp.annotations({ description: "when its shards last changed" }),
  seenAt: IsoTimestamp.annotations({ description: "when it last reported (every few seconds while it runs)" }),
  healthy: Schema.NullOr(Schema.Boolean).annotations({ description: "the cluster's own health check of the runner (null: not registered as a runner)" })
})

export const ClusterStatus = Schema.Struct({
  clustered: Schema.Boolean.annotations({ description: "false: one instance (CLUSTER_PORT unset), which judges every monitor" }),
  shardCount: Schema.Int.annotations({ description: "monitors are hashed by id into this many shards" }),
  instance: Schema.Struct({
    address: Schema.NullOr(Schema.String),
    shards: Schema.Array(Schema.Int),
    changedAt: Schema.NullOr(IsoTimestamp),
    monitors: Schema.Int.annotations({ description: "monitors whose actors run on this instance" })
  }).annotations({ description: "the instance that answered" }),
  members: Schema.Array(ClusterMember).annotations({ description: "instances seen in the last 15 seconds, by address" }),
  unownedShards: Schema.Array(Schema.Int).annotations({ description: "shards no live instance reports (during a failover or a start)" }),
  checkedAt: IsoTimestamp
})

/** Several instances (docs/operations.md#several-instances): who judges which monitors. Admin scope. */
export class ClusterApi extends HttpApiGroup.make("cluster")
  .add(
    HttpApiEndpoint.get("status", "/api/cluster")
      .addSuccess(ClusterStatus)
      .annotate(
        OpenApi.Description,
        "This instance, the members of the cluster and the shards each one owns (a monitor is judged by the " +
          "owner of its shard), and when they last changed. With one instance: clustered false, every monitor here."
      )
      .annotate(OpenApi.Summary, "Cluster members and shard ownership (admin)")
  )
  .addError(ServiceUnavailable)
  .middleware(Authentication)
  .annotate(RequiredScope, "admin")
  .annotate(OpenApi.Title, "Administration")
{}
