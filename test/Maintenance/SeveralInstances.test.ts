import { expect, it } from "@effect/vitest"
import { SqlClient } from "@effect/sql"
import { Context, Deferred, Effect, Either, Layer, Logger, LogLevel, Option, Redacted } from "effect"
import { Background, BackgroundLocal } from "../../src/Cluster/Cluster.js"
import { News } from "../../src/Cluster/News.js"
import { AppConfigWith } from "../../src/Config.js"
import { DatabaseLive } from "../../src/Db/Database.js"
import { MaintenanceCheck } from "../../src/Engine/Engine.js"
import { Maintenance, MaintenanceLive } from "../../src/Maintenance/Maintenance.js"
import { MaintenanceIndex } from "../../src/Maintenance/MaintenanceIndex.js"
import { makeTestDatabase } from "../support/fixture.js"

/**
 * Several instances on one database (cluster mode, docs/maintenance.md#several-instances), two in
 * this process: each has its own pool, its own news connection (real PostgreSQL NOTIFY), its own
 * index and its own scheduler fiber. CLUSTER_PORT set while they are built makes the news clustered;
 * the cluster runner itself is not started (the multi-process tests cover it), so both schedulers
 * run at once: what a moving singleton can briefly do, and what the advisory lock must make harmless.
 */

const iso = (t: number) => new Date(t).toISOString()

/** The news as an instance hears it `ms` late (a busy instance, a slow network). */
const lagging = (ms: number) =>
  Layer.effect(
    News,
    Effect.map(News, (news) => News.make({ ...news, onChange: (listener) => news.onChange((change) => void setTimeout(() => listener(change), ms)) }))
  ).pipe(Layer.provideMerge(News.Default))

/** The scheduler fiber starts when `gate` opens: the singleton moving to this instance. */
const takesOverAt = (gate: Deferred.Deferred<void>) =>
  Layer.succeed(Background, { singleton: (_name, effect) => Effect.asVoid(Effect.forkScoped(Effect.zipRight(Deferred.await(gate), effect))) })

const instance = (url: string, options: { readonly newsLagMs?: number; readonly background?: Layer.Layer<Background> } = {}) =>
  MaintenanceLive.pipe(
    Layer.provideMerge(options.newsLagMs === undefined ? News.Default : lagging(options.newsLagMs)),
    Layer.provide(options.background ?? BackgroundLocal),
    Layer.provideMerge(DatabaseLive),
    Layer.provide(AppConfigWith({ databaseUrl: Option.some(Redacted.make(url)) })),
    Layer.provide(Logger.minimumLogLevel(LogLevel.Warning))
  )

/**
 * The settings are read from the environment when the layers are built: CLUSTER_PORT just then, and
 * DATABASE_URL with it (cluster mode refuses to start without one; on the embedded test database
 * the environment has none).
 */
const clusterPortSet = <A, E, R>(url: string, build: Effect.Effect<A, E, R>) =>
  Effect.acquireUseRelease(
    Effect.sync(() => {
      const before = { port: process.env.CLUSTER_PORT, url: process.env.DATABASE_URL }
      process.env.CLUSTER_PORT = "45999"
      process.env.DATABASE_URL = url
      return before
    }),
    () => build,
    (before) =>
      Effect.sync(() => {
        if (before.port === undefined) delete process.env.CLUSTER_PORT
        else process.env.CLUSTER_PORT = before.port
        if (before.url === undefined) delete process.env.DATABASE_URL
        else process.env.DATABASE_URL = before.url
      })
  )

const start = (url: string, options: Parameters<typeof instance>[1] = {}) =>
  Effect.map(clusterPortSet(url, Layer.build(instance(url, options))), (context) => ({
    maintenance: Context.get(context, Maintenance),
    index: Context.get(context, MaintenanceIndex),
    check: Context.get(context, MaintenanceCheck),
    news: Context.get(context, News),
    sql: Context.get(context, SqlClient.SqlClient)
  }))

/** Polls `check` in real time until it holds; answers how long that took, or ends the test after `ms`. */
const within = (ms: number, what: string, check: () => boolean) =>
  Effect.gen(function*() {
    const t0 = Date.now()
    while (!check()) {
      if (Date.now() - t0 > ms) return yield* Effect.dieMessage(`not within ${ms} ms: ${what}`)
      yield* Effect.sleep("10 millis")
    }
    return Date.now() - t0
  })

const setUp = (sql: SqlClient.SqlClient) =>
  Effect.gen(function*() {
    const [org] = yield* sql<{ id: string }>`insert into organizations (slug, name) values ('acme', 'Acme') returning id`
    const monitors = yield* sql<{ id: string }>`
      insert into monitors (org_id, name, schedule_type, schedule_expression)
      select ${org!.id}, 'job ' || n, 'interval', '1h' from generate_series(1, 2) as n returning id`
    return { orgId: org!.id, m1: monitors[0]!.id, m2: monitors[1]!.id }
  }).pipe(Effect.orDie)

/** Both instances, once each has its news connection listening. */
const twoInstances = (second: Parameters<typeof instance>[1] = {}) =>
  Effect.gen(function*() {
    const db = yield* makeTestDatabase()
    const a = yield* start(db.url)
    const b = yield* start(db.url, second)
    yield* within(5_000, "both instances listen", () => a.news.listening() && b.news.listening())
    return { a, b, ...(yield* setUp(a.sql)) }
  })

/** The maintenance events recorded, counted per window and type. */
const eventCounts = (sql: SqlClient.SqlClient) =>
  Effect.map(
    sql<{ window_id: string; type: string; n: number }>`
      select data->'window'->>'id' as window_id, type, count(*)::int as n from events
      where type like 'maintenance.%' group by 1, 2`.pipe(Effect.orDie),
    (rows) => (windowId: string, type: string) => rows.find((e) => e.window_id === windowId && e.type === type)?.n ?? 0
  )

it.live("a window created, changed, overridden or deleted on one instance reaches the other's index within a second", () =>
  Effect.gen(function*() {
    const { a, b, m1, m2, orgId } = yield* twoInstances()
    const t = Date.now()
    const w = yield* a.maintenance.create(orgId, { name: "patching", monitorIds: [m1], start: iso(t), end: iso(t + 3_600_000) })
    expect(w.status).toBe("active")
    expect(yield* within(1_000, "B suppresses m1", () => b.index.inMaintenance(m1, Date.now()))).toBeLessThan(1_000)

    // Changed on B: A's index follows (m1 alerts again, m2 is suppressed).
    yield* b.maintenance.update(orgId, w.id, { monitorIds: [m2] })
    yield* within(1_000, "A follows the new monitors", () => !a.index.inMaintenance(m1, Date.now()) && a.index.inMaintenance(m2, Date.now()))

    // Overridden on A: alerts flow on B too.
    const overridden = yield* a.maintenance.override(orgId, w.id, { reason: "watch the deploy", durationSeconds: 600 })
    expect(overridden.status).toBe("overridden")
    yield* within(1_000, "B lets m2's alerts through", () => !b.index.inMaintenance(m2, Date.now()))
    expect((yield* b.maintenance.get(orgId, w.id)).overrideReason).toBe("watch the deploy")

    // Deleted on B: gone from A.
    yield* b.maintenance.remove(orgId, w.id)
    yield* within(1_000, "A drops the window", () => a.index.find(orgId, w.id) === undefined)
    const gone = yield* Effect.either(a.maintenance.get(orgId, w.id))
    expect(Either.isLeft(gone) && gone.left._tag).toBe("NotFound")
  }).pipe(Effect.scoped), 60_000)

it.live("reads and writes on one instance see what another just committed; suppressions count on either", () =>
  Effect.gen(function*() {
    const { a, b, m1, orgId } = yield* twoInstances()
    const t = Date.now()
    // Read at once on B, without waiting for anything: the window is there.
    const w = yield* a.maintenance.create(orgId, { name: "night", monitorIds: [m1], start: iso(t), end: iso(t + 3_600_000), reason: "first" })
    expect((yield* b.maintenance.get(orgId, w.id)).name).toBe("night")
    expect((yield* b.maintenance.list(orgId)).map((x) => x.id)).toEqual([w.id])
    expect((yield* b.maintenance.active(orgId)).map((x) => x.id)).toEqual([w.id])

    // Two PATCHes back to back on two instances: the second starts from the first, not from a stale copy.
    yield* a.maintenance.update(orgId, w.id, { name: "renamed on A" })
    const both = yield* b.maintenance.update(orgId, w.id, { reason: "changed on B" })
    expect(both).toMatchObject({ name: "renamed on A", reason: "changed on B" })
    yield* within(1_000, "A holds B's change", () => a.index.find(orgId, w.id)?.row.reason === "changed on B")

    // The engine counts a suppressed incident on whichever instance owns the monitor.
    yield* b.check.countSuppressed(m1, "MISSED", Date.now())
    yield* a.check.countSuppressed(m1, "FAIL", Date.now())
    const rows = yield* a.sql<{ suppressed_incidents: number; ended_at: Date | null }>`
      select suppressed_incidents, ended_at from maintenance_history where window_id = ${w.id}`
    expect(rows).toEqual([{ suppressed_incidents: 2, ended_at: null }])
  }).pipe(Effect.scoped), 60_000)

it.live("two schedulers running at once on one database record each transition once", () =>
  Effect.gen(function*() {
    const { a, b, m1, m2, orgId } = yield* twoInstances()
    const t0 = Date.now() + 3_000
    const notifications = { beforeStart: 1, onStart: true, onEnd: true }
    const ids: Array<string> = []
    for (let i = 0; i < 6; i++) {
      const on = i % 2 === 0 ? a : b
      const start = t0 + i * 150
      const w = yield* on.maintenance.create(orgId, {
        name: `window ${i}`,
        monitorIds: [i % 2 === 0 ? m1 : m2],
        start: iso(start),
        end: iso(start + 1_500),
        notifications
      })
      ids.push(w.id)
    }
    const [shortened, deleted] = [ids[1]!, ids[2]!]
    // While the periods run: one is shortened on A, one deleted on B.
    yield* Effect.sleep(`${Math.max(0, t0 + 700 - Date.now())} millis`)
    yield* a.maintenance.update(orgId, shortened, { end: iso(Date.now() + 300) })
    yield* b.maintenance.remove(orgId, deleted)
    // Every period has ended (the last at t0 + 750 + 1500); both schedulers have had their say.
    yield* Effect.sleep(`${Math.max(0, t0 + 3_300 - Date.now())} millis`)
    yield* a.maintenance.idle
    yield* b.maintenance.idle

    const history = yield* a.sql<{ window_id: string; end_reason: string | null }>`
      select window_id, end_reason from maintenance_history where window_id = any(${ids}::uuid[]) order by window_id`
    expect(history.length).toBe(6)
    for (const id of ids) {
      expect(history.filter((h) => h.window_id === id).map((h) => h.end_reason)).toEqual([id === deleted ? "deleted" : "completed"])
    }
    const count = yield* eventCounts(a.sql)
    for (const id of ids) {
      expect(["maintenance.upcoming", "maintenance.started", "maintenance.ended"].map((type) => count(id, type))).toEqual([1, 1, 1])
    }
  }).pipe(Effect.scoped), 60_000)

it.live("a scheduler that takes over while its news lags does not re-open a period another instance closed", () =>
  Effect.gen(function*() {
    const gate = yield* Deferred.make<void>()
    // B hears the others half a second late, and runs no scheduler until the gate opens.
    const { a, b, m1, orgId } = yield* twoInstances({ newsLagMs: 500, background: takesOverAt(gate) })
    const t = Date.now()
    const w = yield* a.maintenance.create(orgId, {
      name: "migration",
      monitorIds: [m1],
      start: iso(t),
      end: iso(t + 3_600_000),
      notifications: { onStart: true, onEnd: true }
    })
    yield* within(2_000, "B holds the window", () => b.index.find(orgId, w.id) !== undefined)
    // Deleted on A; B has not heard it yet when the scheduler moves to B.
    yield* a.maintenance.remove(orgId, w.id)
    expect(b.index.find(orgId, w.id)).toBeDefined()
    yield* Deferred.succeed(gate, undefined)
    yield* within(2_000, "B drops the window", () => b.index.find(orgId, w.id) === undefined)
    yield* b.maintenance.idle
    const history = yield* a.sql<{ end_reason: string | null }>`select end_reason from maintenance_history where window_id = ${w.id}`
    expect(history).toEqual([{ end_reason: "deleted" }])
    const count = yield* eventCounts(a.sql)
    expect([count(w.id, "maintenance.started"), count(w.id, "maintenance.ended")]).toEqual([1, 1])
  }).pipe(Effect.scoped), 60_000)
