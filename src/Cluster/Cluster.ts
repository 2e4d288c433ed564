import {
  Entity,
  EntityId,
  RunnerAddress,
  RunnerHealth,
  Runners,
  ShardId,
  Sharding,
  ShardingConfig,
  SocketRunner,
  SqlMessageStorage,
  SqlRunnerStorage
} from "@effect/cluster"
import { RpcSerialization } from "@effect/rpc"
import { NodeClusterSocket } from "@effect/platform-node"
import { Rpc } from "@effect/rpc"
import { SqlClient } from "@effect/sql"
import { Cause, Clock, ConfigProvider, Context, Duration, Effect, Layer, Option, Runtime, type Scope } from "effect"
import * as net from "node:net"
import { AppConfig } from "../Config.js"
import { Engine } from "../Engine/Engine.js"
import { News } from "./News.js"
import { SHARDS } from "../Engine/Shards.js"

/**
 * Several instances, one service (docs/operations.md#several-instances).
 *
 * `@effect/cluster` owns the membership and the shards: every instance is a runner; shard k is
 * owned through a PostgreSQL advisory lock by one runner at a time, and moves when a runner joins,
 * leaves (SIGTERM: handed over) or stops refreshing its locks (kill -9, a lost database connection:
 * after CLUSTER_LOCK_EXPIRATION_MS). Monitors are hashed into the same SHARDS shards
 * (src/Engine/Shards.ts). For each shard a **keeper entity** lives on its owner: building it starts
 * the actors of the shard's monitors from the database, and its finalizer stops them. The cluster
 * closes an entity before it lets the shard's lock go, so a shard's actors stop on the old owner
 * before the new owner starts them. Keepers never idle out; each instance wakes those of the
 * shards it holds (a local message) every KEEPER_WAKE.
 *
 * Work that must run once (maintenance transitions, the rollup refresh, retention) runs as a cluster
 * singleton through `Background` (with one instance: a plain background fiber).
 */

/** How often an instance checks that each shard it holds has its keeper running. */
const KEEPER_WAKE = "200 millis"

/** Runs background work once across the instances (a cluster singleton), or here with one instance. */
export class Background extends Context.Tag("jobmon/Background")<
  Background,
  {
    /** Runs `effect` (a loop that never ends) on exactly one instance; it moves if that one goes. */
    readonly singleton: (name: string, effect: Effect.Effect<void>) => Effect.Effect<void, never, Scope.Scope>
  }
>() {}

export const BackgroundLocal = Layer.succeed(Background, {
  singleton: (_name, effect) => Effect.asVoid(Effect.forkScoped(effect))
})

/** What this instance knows of the cluster, for `GET /api/cluster` and the logs. */
export interface ClusterView {
  readonly clustered: boolean
  readonly address: string | undefined
  readonly shards: () => ReadonlyArray<number>
  readonly changedAt: () => number | undefined
}

export class ClusterState extends Context.Tag("jobmon/ClusterState")<ClusterState, ClusterView>() {}

export const ClusterStateLocal = Layer.succeed(ClusterState, {
  clustered: false,
  address: undefined,
  shards: () => [],
  changedAt: () => undefined
})

const Keeper = Entity.make("MonitorShard", [Rpc.make("Wake")])

/** Whether something accepts TCP connections at host:port within `ms`. */
const reachable = (host: string, port: number, ms: number) =>
  Effect.async<boolean>((resume) => {
    const socket = net.connect({ host, port })
    const done = (ok: boolean) => {
      socket.removeAllListeners()
      socket.destroy()
      resume(Effect.succeed(ok))
    }
    socket.setTimeout(ms, () => done(false))
    socket.once("connect", () => done(true))
    socket.once("error", () => done(false))
    return Effect.sync(() => socket.destroy())
  })

/** Whether something already listens on the port (to say so plainly instead of a socket error). */
const portInUse = (host: string, port: number) =>
  Effect.async<boolean>((resume) => {
    const server = net.createServer()
    server.once("error", (e: NodeJS.ErrnoException) => resume(Effect.succeed(e.code === "EADDRINUSE")))
    server.listen(port, host, () => server.close(() => resume(Effect.succeed(false))))
  })

export class ClusterStartError extends Error {}

/** The cluster runner of this instance: none with one instance. */
export class ClusterRunner extends Context.Tag("jobmon/ClusterRunner")<
  ClusterRunner,
  { readonly sharding: Sharding.Sharding["Type"] | undefined }
>() {}

/**
 * Cluster mode's layers: the runner (sharding over PostgreSQL, a TCP server on CLUSTER_PORT),
 * `Background` as singletons, and the view of this instance. Needs the SqlClient and the config.
 */
/** A pg_advisory_lock key: one instance at a time creates @effect/cluster's tables (src/Events/EventsRepo.ts lists the others). */
const CLUSTER_TABLES_LOCK = 7_316_402_124

export const ClusterRunnerLive = Layer.unwrapEffect(Effect.gen(function*() {
  const config = yield* AppConfig
  const port = Option.getOrUndefined(config.clusterPort)
  if (port === undefined) return Layer.mergeAll(BackgroundLocal, Layer.succeed(ClusterRunner, { sharding: undefined }))
  const listenHost = config.host
  if (yield* portInUse(listenHost, port)) {
    return yield* Effect.die(
      new ClusterStartError(`CLUSTER_PORT ${port} is already in use on ${listenHost}: choose a free port for this instance's cluster traffic.`)
    )
  }
  // NodeClusterSocket.layer's composition (socket runner, SQL storage, msgpack), with one change:
  // a runner is alive when it answers pings AND keeps its heartbeat in the database fresh. An
  // instance cut off from PostgreSQL still answers pings, but cannot refresh its locks (so it stops
  // judging) nor its heartbeat: the others mark it unhealthy and take its shards over, and it gets
  // a share again once it is back.
  const health = Layer.scoped(
    RunnerHealth.RunnerHealth,
    Effect.gen(function*() {
      const ping = yield* RunnerHealth.makePing
      const sql = yield* SqlClient.SqlClient
      const fresh = (address: RunnerAddress.RunnerAddress) =>
        sql<{ fresh: boolean }>`
          select seen_at > now() - ${config.clusterLockExpirationMs} * interval '1 millisecond' as fresh
          from cluster_members where address = ${`${address.host}:${address.port}`}`.pipe(
          // No row yet (a runner starting), or this instance cannot ask: the pings decide.
          Effect.map((rows) => rows[0]?.fresh ?? true),
          Effect.orElseSucceed(() => true)
        )
      return {
        isAlive: (address: RunnerAddress.RunnerAddress) =>
          Effect.flatMap(fresh(address), (ok) => (ok ? ping.isAlive(address) : Effect.succeed(false)))
      }
    })
  ).pipe(Layer.provide(Runners.layerRpc), Layer.provide(NodeClusterSocket.layerClientProtocol))
  const shardingConfig = ShardingConfig.layerFromEnv({
    runnerAddress: Option.some(RunnerAddress.make(config.clusterHost, port)),
    runnerListenAddress: Option.some(RunnerAddress.make(listenHost, port)),
    shardsPerGroup: SHARDS,
    shardLockRefreshInterval: Duration.millis(config.clusterLockRefreshMs),
    shardLockExpiration: Duration.millis(config.clusterLockExpirationMs),
    refreshAssignmentsInterval: Duration.millis(Math.max(250, Math.floor(config.clusterLockRefreshMs / 2))),
    runnerHealthCheckInterval: Duration.millis(Math.max(500, config.clusterLockRefreshMs * 2)),
    entityMessagePollInterval: Duration.millis(config.clusterLockRefreshMs),
    entityMaxIdleTime: Duration.infinity
  })
  // @effect/cluster creates its tables when its storage is built; instances starting together on a
  // new database would race to create them (CREATE TABLE IF NOT EXISTS is not safe concurrently).
  // One builds the storage once under an advisory lock while the others wait; then they all start.
  yield* Effect.scoped(Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const conn = yield* sql.reserve
    yield* conn.executeRaw("select pg_advisory_lock($1)", [CLUSTER_TABLES_LOCK])
    yield* Effect.addFinalizer(() => Effect.ignore(conn.executeRaw("select pg_advisory_unlock($1)", [CLUSTER_TABLES_LOCK])))
    yield* Effect.scoped(Layer.build(Layer.merge(SqlMessageStorage.layer, SqlRunnerStorage.layer).pipe(
      Layer.provide(shardingConfig),
      Layer.provide(Layer.setConfigProvider(ConfigProvider.fromMap(new Map())))
    )))
  })).pipe(Effect.orDie)
  const sharding = SocketRunner.layer.pipe(
    Layer.provide([NodeClusterSocket.layerSocketServer, NodeClusterSocket.layerClientProtocol]),
    Layer.provide(health),
    Layer.provideMerge(Layer.orDie(SqlMessageStorage.layer)),
    Layer.provide(Layer.orDie(SqlRunnerStorage.layer)),
    Layer.provide(shardingConfig),
    Layer.provide(RpcSerialization.layerMsgPack),
    // The cluster reads its own settings from the environment in constant case (HOST, PORT…), which
    // would take this service's HTTP settings for its own: it gets none but the ones given above.
    Layer.provide(Layer.setConfigProvider(ConfigProvider.fromMap(new Map()))),
    Layer.orDie
  )
  const background = Layer.effect(
    Background,
    Effect.map(Sharding.Sharding, (s) => ({
      singleton: (name: string, effect: Effect.Effect<void>) =>
        s.registerSingleton(
          name,
          Effect.logInfo(`cluster: singleton ${name} runs here`).pipe(
            Effect.zipRight(effect),
            Effect.onInterrupt(() => Effect.logInfo(`cluster: singleton ${name} stops here`))
          )
        )
    }))
  )
  const runner = Layer.effect(ClusterRunner, Effect.map(Sharding.Sharding, (sharding) => ({ sharding })))
  return Layer.provide(Layer.mergeAll(background, runner), sharding)
}))

/**
 * The keepers of the shards and the view of this instance (cluster mode; nothing with one
 * instance). Over the engine and the runner.
 */
export const ClusterKeepersLive = Layer.unwrapScoped(Effect.gen(function*() {
  const config = yield* AppConfig
  const port = Option.getOrUndefined(config.clusterPort)
  const { sharding: shardingService } = yield* ClusterRunner
  if (port === undefined || shardingService === undefined) return ClusterStateLocal
  const address = `${config.clusterHost}:${port}`
  const running = new Set<number>()
  let changedAt: number | undefined
  const log = yield* shardLog(() => running.size)

  const engine = yield* Engine
  const sql = yield* SqlClient.SqlClient
  const owns = (shard: number) => shardingService.hasShardId(ShardId.make("default", shard))
  // One start or stop of a shard's actors at a time, per shard.
  const locks = new Map<number, Effect.Semaphore>()
  for (let shard = 1; shard <= SHARDS; shard++) locks.set(shard, yield* Effect.makeSemaphore(1))
  const serially = (shard: number) => locks.get(shard)!.withPermits(1)

  /** Starts the shard's actors, unless they run already or the shard is no longer this instance's. */
  const startShard = (shard: number) =>
    serially(shard)(Effect.gen(function*() {
      if (running.has(shard) || !owns(shard)) return
      const started = yield* Clock.currentTimeMillis
      const count = yield* engine.startShards([shard])
      running.add(shard)
      changedAt = yield* Clock.currentTimeMillis
      log.acquired(shard, count, changedAt - started)
      yield* record(sql, address, running).pipe(Effect.ignore)
    }))

  /** Stops the shard's actors (when they run). */
  const stopShard = (shard: number) =>
    serially(shard)(Effect.gen(function*() {
      if (!running.has(shard)) return
      const stopped = yield* engine.stopShards([shard])
      running.delete(shard)
      changedAt = yield* Clock.currentTimeMillis
      log.released(shard, stopped)
      yield* record(sql, address, running).pipe(Effect.timeout("1 second"), Effect.ignore)
    }))

  // A keeper entity per shard: built when this instance acquires the shard, closed before the
  // shard's lock is released. Its Wake (sent every KEEPER_WAKE while the shard is held and its
  // actors do not run) starts the actors: a keeper whose build raced with a loss of the shard
  // (the cluster's lock storage found unhealthy closes shards, but not an entity still being built)
  // is stopped by the watch below and started again by its next Wake.
  const keepers = Keeper.toLayer(
    Effect.gen(function*() {
      const entity = yield* Entity.CurrentAddress
      const shard = entity.shardId.id
      yield* startShard(shard)
      yield* Effect.addFinalizer(() => stopShard(shard))
      return { Wake: () => startShard(shard) }
    }),
    { maxIdleTime: Duration.infinity }
  )

  const wake = Layer.scopedDiscard(Effect.gen(function*() {
    const sharding = yield* Sharding.Sharding
    const makeClient = yield* Keeper.client
    const runtime = yield* Effect.runtime<never>()
    // One entity id per shard: the first of "shard-<k>-<i>" that the cluster hashes to shard k.
    const keeperIds = new Map<number, string>()
    for (let i = 0; keeperIds.size < SHARDS && i < 1_000_000; i++) {
      const id = `shard-${i}`
      const shard = sharding.getShardId(EntityId.make(id), "default").id
      if (!keeperIds.has(shard)) keeperIds.set(shard, id)
    }
    const waking = new Set<number>()
    const tick = Effect.suspend(() => {
      // Actors of a shard this instance no longer holds stop at once, whatever became of its keeper.
      const lost = [...running].filter((shard) => !owns(shard))
      if (lost.length > 0) Runtime.runFork(runtime)(Effect.forEach(lost, stopShard, { discard: true, concurrency: "unbounded" }))
      const wakes: Array<Effect.Effect<void>> = []
      for (let shard = 1; shard <= SHARDS; shard++) {
        if (running.has(shard) || waking.has(shard)) continue
        if (!sharding.hasShardId(ShardId.make("default", shard))) continue
        waking.add(shard)
        wakes.push(
          makeClient(keeperIds.get(shard)!).Wake().pipe(
            Effect.timeout("10 seconds"),
            Effect.catchAllCause((cause) =>
              Cause.isInterruptedOnly(cause) ? Effect.void : Effect.logWarning(`cluster: could not start the keeper of shard ${shard}; retrying`, cause)
            ),
            Effect.ensuring(Effect.sync(() => waking.delete(shard)))
          )
        )
      }
      return wakes.length === 0 ? Effect.void : Effect.asVoid(Effect.forkDaemon(Effect.all(wakes, { concurrency: "unbounded", discard: true })))
    })
    // News missed while the LISTEN connection was down: the actors of the shards held are rebuilt from the database.
    const news = yield* News
    yield* news.onResync(Effect.suspend(() => {
      const held = [...running]
      if (held.length === 0) return Effect.void
      return engine.stopShards(held).pipe(
        Effect.zipRight(engine.startShards(held)),
        Effect.tap((n) => Effect.logInfo(`cluster: news connection back; ${n} monitors of ${held.length} shards rebuilt from the database`)),
        Effect.asVoid
      )
    }))
    yield* Effect.logInfo(`cluster: this instance is ${address}; ${SHARDS} shards shared with the others over the database`)
    yield* record(sql, address, running).pipe(Effect.ignore)
    yield* tick.pipe(Effect.zipRight(Effect.sleep(KEEPER_WAKE)), Effect.forever, Effect.forkScoped)
    // Seen by GET /api/cluster: this instance is alive (every few seconds), and gone when it stops.
    // (Its freshness is also what the others' health checks read: see ClusterRunnerLive.)
    yield* record(sql, address, running).pipe(
      Effect.ignore,
      Effect.zipRight(Effect.sleep(Duration.millis(config.clusterLockRefreshMs))),
      Effect.forever,
      Effect.forkScoped
    )
    yield* Effect.addFinalizer(() => sql`delete from cluster_members where address = ${address}`.pipe(Effect.timeout("1 second"), Effect.ignore))
    // Other instances must be able to reach this one at CLUSTER_HOST:CLUSTER_PORT.
    if (!(yield* reachable(config.clusterHost, port, 3_000))) {
      return yield* Effect.die(
        new ClusterStartError(
          `CLUSTER_HOST ${config.clusterHost} is not reachable at port ${port} from this instance, so the other instances cannot reach it either: ` +
            `set CLUSTER_HOST to this machine's address on the network the instances share.`
        )
      )
    }
  }))

  const view = Layer.succeed(ClusterState, {
    clustered: true,
    address,
    shards: () => [...running].sort((a, b) => a - b),
    changedAt: () => changedAt
  })
  return Layer.mergeAll(view, wake, keepers).pipe(Layer.provide(Layer.succeed(Sharding.Sharding, shardingService)))
}))

/**
 * The log line of every acquisition and release: the shards that moved together (a start, a
 * rebalance, a failover take tens at once) in one line, a moment after they moved.
 */
const shardLog = (held: () => number) =>
  Effect.gen(function*() {
    const runtime = yield* Effect.runtime<never>()
    let acquired: Array<{ shard: number; monitors: number; ms: number }> = []
    let released: Array<{ shard: number; monitors: number }> = []
    let timer: ReturnType<typeof setTimeout> | undefined
    const list = (shards: Array<{ shard: number }>) => shards.map((s) => s.shard).sort((a, b) => a - b).join(", ")
    const flush = () => {
      timer = undefined
      const lines: Array<string> = []
      if (acquired.length > 0) {
        const monitors = acquired.reduce((n, a) => n + a.monitors, 0)
        const slowest = acquired.reduce((n, a) => Math.max(n, a.ms), 0)
        lines.push(`cluster: acquired ${acquired.length} shard${acquired.length === 1 ? "" : "s"} (${list(acquired)}): ${monitors} monitors now judged here, loaded in at most ${slowest} ms; ${held()} of ${SHARDS} shards held`)
      }
      if (released.length > 0) {
        const monitors = released.reduce((n, a) => n + a.monitors, 0)
        lines.push(`cluster: released ${released.length} shard${released.length === 1 ? "" : "s"} (${list(released)}): ${monitors} monitors no longer judged here; ${held()} of ${SHARDS} shards held`)
      }
      acquired = []
      released = []
      Runtime.runFork(runtime)(Effect.forEach(lines, (line) => Effect.logInfo(line), { discard: true }))
    }
    const later = () => {
      if (timer === undefined) timer = setTimeout(flush, 100)
    }
    yield* Effect.addFinalizer(() => Effect.sync(() => timer !== undefined && (clearTimeout(timer), flush())))
    return {
      acquired: (shard: number, monitors: number, ms: number) => (acquired.push({ shard, monitors, ms }), later()),
      released: (shard: number, monitors: number) => (released.push({ shard, monitors }), later())
    }
  })

/** This instance's row of `cluster_members`: its shards, when they last changed, and that it is alive. */
const record = (sql: SqlClient.SqlClient, address: string, running: ReadonlySet<number>) =>
  Effect.suspend(() => sql`
    insert into cluster_members (address, shards, changed_at, seen_at)
    values (${address}, ${[...running].sort((a, b) => a - b)}::int[], now(), now())
    on conflict (address) do update set
      changed_at = case when cluster_members.shards = excluded.shards then cluster_members.changed_at else now() end,
      shards = excluded.shards, seen_at = now()`).pipe(
    Effect.asVoid,
    Effect.catchAllCause((cause) => Effect.logDebug("cluster: could not record this instance's shards", cause))
  )
