import { HttpApiBuilder } from "@effect/platform"
import { SqlClient } from "@effect/sql"
import { Clock, Effect } from "effect"
import { unavailableOnStatementTimeout as bounded } from "../Db/StatementTimeout.js"
import { iso } from "../Domain/Instant.js"
import { Engine } from "../Engine/Engine.js"
import { SHARDS } from "../Engine/Shards.js"
import { Api } from "../Http/Api.js"
import { ClusterState } from "./Cluster.js"

interface MemberRow {
  readonly address: string
  readonly shards: ReadonlyArray<number>
  readonly changed_at: Date
  readonly seen_at: Date
  readonly healthy: boolean | null
}

export const ClusterHttpLive = HttpApiBuilder.group(Api, "cluster", (handlers) =>
  Effect.gen(function*() {
    const state = yield* ClusterState
    const engine = yield* Engine
    const sql = yield* SqlClient.SqlClient
    return handlers.handle("status", () =>
      bounded(Effect.gen(function*() {
        const now = yield* Clock.currentTimeMillis
        const rows = state.clustered
          ? yield* sql<MemberRow>`
              select m.address, m.shards, m.changed_at, m.seen_at, r.healthy
              from cluster_members m left join cluster_runners r on r.address = m.address
              where m.seen_at > now() - interval '15 seconds'
              order by m.address`.pipe(Effect.orDie)
          : []
        const owned = new Set<number>()
        for (const row of rows) for (const shard of row.shards) owned.add(shard)
        const unownedShards: Array<number> = []
        if (state.clustered) for (let shard = 1; shard <= SHARDS; shard++) if (!owned.has(shard)) unownedShards.push(shard)
        const changedAt = state.changedAt()
        return {
          clustered: state.clustered,
          shardCount: SHARDS,
          instance: {
            address: state.address ?? null,
            shards: state.clustered ? state.shards() : [],
            changedAt: changedAt === undefined ? null : iso(changedAt),
            monitors: engine.size()
          },
          members: rows.map((r) => ({
            address: r.address,
            shards: [...r.shards].sort((a, b) => a - b),
            changedAt: r.changed_at.toISOString(),
            seenAt: r.seen_at.toISOString(),
            healthy: r.healthy
          })),
          unownedShards,
          checkedAt: new Date(now).toISOString()
        }
      })))
  })
)
