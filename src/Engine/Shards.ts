import { Effect, Option } from "effect"
import { AppConfig } from "../Config.js"

/**
 * Which monitors this instance judges. One instance: all of them. Several instances (cluster mode,
 * docs/operations.md#several-instances): monitors fall into SHARDS shards by a hash of their id, and
 * an instance judges the monitors of the shards it owns (src/Cluster/Cluster.ts acquires and
 * releases them; the engine starts and stops their actors).
 */

/** The number of shards: fixed, and the same on every instance (a hash modulus). */
export const SHARDS = 64

/**
 * A monitor's shard, 1 to SHARDS: the last 8 hex digits of its id (random in every UUID version)
 * modulo SHARDS. `SHARD_OF_SQL` computes the same in PostgreSQL.
 */
export const shardOf = (monitorId: string): number => (parseInt(monitorId.slice(-8), 16) % SHARDS) + 1

/** `shardOf` of a uuid column, in SQL. */
export const shardOfSql = (column: string) => `((('x' || right(${column}::text, 8))::bit(32)::bigint % ${SHARDS}) + 1)`

export class ShardSet extends Effect.Service<ShardSet>()("jobmon/ShardSet", {
  effect: Effect.gen(function*() {
    const config = yield* AppConfig
    const clustered = Option.isSome(config.clusterPort)
    const owned = new Set<number>()
    return {
      /** Several instances share the monitors. */
      clustered,
      /** The shards this instance owns now (cluster mode only). */
      owned: owned as ReadonlySet<number>,
      add: (shard: number) => void owned.add(shard),
      remove: (shard: number) => void owned.delete(shard),
      /** Whether this instance judges the monitor (always, with one instance). */
      ownsMonitor: (monitorId: string): boolean => !clustered || owned.has(shardOf(monitorId))
    } as const
  })
}) {}
