import { expect, layer } from "@effect/vitest"
import { SqlClient } from "@effect/sql"
import { Context, Duration, Effect, Exit, FastCheck, Layer, Scope, TestClock } from "effect"
import { randomUUID } from "node:crypto"
import { Engine } from "../../src/Engine/Engine.js"
import { DURATION_MEMORY } from "../../src/Engine/Model.js"
import { AppOn, call, createMonitor, makeTestDatabase, newAdminToken, sendPing } from "../support/fixture.js"

/**
 * Whatever the pings and whenever the service restarts, the durations an actor judges with are the
 * database's last DURATION_MEMORY successful durations (by start: started_at, then duration, then run id), and a
 * FAIL incident's expectedDurationMs is PostgreSQL's percentile_cont(0.5) over them, rounded as
 * the engine rounds. Through the real HTTP server and PostgreSQL, on the TestClock.
 */

const RUNS = Number(process.env.DURATIONS_PROPERTY_RUNS ?? 12)

type AppContext = Layer.Layer.Success<ReturnType<typeof AppOn>>

/** A database and the service on it, which a case can stop and start again. */
class Service extends Context.Tag("test/DurationsService")<Service, {
  readonly current: () => Context.Context<AppContext>
  readonly restart: Effect.Effect<void, unknown>
}>() {}

// Pings are many and the TestClock never refills the per-monitor bucket by itself.
const overrides = { pingRatePerSecond: 1_000_000, pingBurst: 1_000_000 }

const ServiceLive = Layer.scoped(
  Service,
  Effect.gen(function*() {
    const db = yield* makeTestDatabase()
    const token = newAdminToken()
    let scope = yield* Scope.make()
    let context = yield* Layer.buildWithScope(AppOn(db.url, token, overrides), scope)
    yield* Effect.addFinalizer(() => Scope.close(scope, Exit.void))
    const restart = Effect.gen(function*() {
      yield* Scope.close(scope, Exit.void)
      scope = yield* Scope.make()
      context = yield* Layer.buildWithScope(AppOn(db.url, token, overrides), scope)
    })
    return { current: () => context, restart }
  })
)

/** Runs `effect` on the service as it is now. */
const onService = <A, E>(effect: Effect.Effect<A, E, AppContext>) =>
  Effect.flatMap(Service, (service) => Effect.provide(effect, service.current()))

const settle = onService(Effect.gen(function*() {
  const engine = yield* Engine
  yield* Effect.promise(() => new Promise((resolve) => setTimeout(resolve, 10)))
  yield* engine.idle
}))

const durationArb = FastCheck.oneof(
  FastCheck.constant(null),
  FastCheck.constantFrom(0, 100, 200, 300),
  FastCheck.integer({ min: 0, max: 5_000 })
)

const actionArb = FastCheck.oneof(
  { weight: 3, arbitrary: FastCheck.record({ _tag: FastCheck.constant("start" as const) }) },
  { weight: 5, arbitrary: FastCheck.record({ _tag: FastCheck.constant("success" as const), durationMs: durationArb }) },
  { weight: 2, arbitrary: FastCheck.record({ _tag: FastCheck.constant("fail" as const), durationMs: durationArb }) },
  // Several successes at once: events queue behind the one that makes the actor load.
  {
    weight: 1,
    arbitrary: FastCheck.record({
      _tag: FastCheck.constant("burst" as const),
      durations: FastCheck.array(durationArb, { minLength: 2, maxLength: 5 })
    })
  },
  // 0: several runs of one millisecond (ties of start the history cannot order by itself).
  { weight: 4, arbitrary: FastCheck.record({ _tag: FastCheck.constant("wait" as const), ms: FastCheck.constantFrom(0, 1, 250, 60_000) }) },
  { weight: 1, arbitrary: FastCheck.record({ _tag: FastCheck.constant("restart" as const) }) }
)

const scenarioArb = FastCheck.record({
  // Successes already in the database before the first ping (around the memory of 200, to cross it).
  seeded: FastCheck.oneof(FastCheck.constant(0), FastCheck.integer({ min: DURATION_MEMORY - 10, max: DURATION_MEMORY + 10 })),
  seededTies: FastCheck.boolean(),
  actions: FastCheck.array(actionArb, { minLength: 1, maxLength: 25 })
})

const body = (durationMs: number | null) => (durationMs === null ? {} : { body: { durationMs } })

layer(ServiceLive, { timeout: 300_000 })("recent durations, property", (it) => {
  it.effect.prop(
    "the engine's history is the database's last 200 successes; FAIL's expectedDurationMs is their median",
    [scenarioArb],
    ([scenario]) =>
      Effect.gen(function*() {
        const service = yield* Service
        const monitor = yield* onService(createMonitor({ schedule: { type: "interval", expression: "1d" }, graceSeconds: 3600 }))
        /** The database's history, oldest first, and PostgreSQL's median of it. */
        const database = onService(Effect.gen(function*() {
          const sql = yield* SqlClient.SqlClient
          const rows = yield* sql<{ duration_ms: string }>`
            select duration_ms from runs
            where monitor_id = ${monitor.id} and status = 'SUCCESS' and duration_ms is not null
            order by started_at desc, duration_ms desc, id desc limit ${DURATION_MEMORY}`
          const [median] = yield* sql<{ p: number | null }>`
            select percentile_cont(0.5) within group (order by duration_ms) as p from (
              select duration_ms from runs
              where monitor_id = ${monitor.id} and status = 'SUCCESS' and duration_ms is not null
              order by started_at desc, duration_ms desc, id desc limit ${DURATION_MEMORY}) d`
          return { history: rows.map((r) => Number(r.duration_ms)).reverse(), median: median!.p }
        }))
        const historyAgrees = Effect.gen(function*() {
          yield* settle
          const engine = yield* onService(Engine)
          const held = engine.durationsOf(monitor.id)
          // (not loaded yet after a restart without pings: nothing to compare)
          if (held !== undefined) expect(held).toEqual((yield* database).history)
        })

        if (scenario.seeded > 0) {
          yield* onService(Effect.gen(function*() {
            const sql = yield* SqlClient.SqlClient
            const [m] = yield* sql<{ org_id: string; created_at: Date }>`select org_id, created_at from monitors where id = ${monitor.id}`
            const base = m!.created_at.getTime() - scenario.seeded * 60_000
            for (let i = 0; i < scenario.seeded; i++) {
              // with ties, pairs of runs share a start and the database orders them by id
              const startedAt = new Date(base + (scenario.seededTies ? Math.floor(i / 2) : i) * 60_000)
              const durationMs = (i * 7919) % 3_000
              yield* sql`
                insert into runs (id, monitor_id, org_id, status, started_at, finished_at, duration_ms)
                values (${randomUUID()}, ${monitor.id}, ${m!.org_id}, 'SUCCESS', ${startedAt},
                        ${new Date(startedAt.getTime() + durationMs)}, ${durationMs})`
            }
          }))
        }

        for (const action of scenario.actions) {
          switch (action._tag) {
            case "start":
              expect((yield* onService(sendPing(monitor.id, "start"))).status).toBe(200)
              break
            case "success":
              expect((yield* onService(sendPing(monitor.id, "success", body(action.durationMs)))).status).toBe(200)
              break
            case "burst": {
              const replies = yield* onService(Effect.all(
                action.durations.map((d) => sendPing(monitor.id, "success", body(d))),
                { concurrency: "unbounded" }
              ))
              for (const reply of replies) expect(reply.status).toBe(200)
              break
            }
            case "fail": {
              const reply = yield* onService(sendPing(monitor.id, "fail", body(action.durationMs)))
              expect(reply.status).toBe(200)
              yield* settle
              const incidents = (yield* onService(call("GET", `/api/incidents?monitorId=${monitor.id}`))).body.incidents as Array<any>
              const fail = incidents.find((i) => i.type === "FAIL" && i.runId === reply.body.runId)
              // (a fail while a FAIL is open counts an occurrence on it: no new incident to read)
              if (fail !== undefined) {
                const { median } = yield* database
                expect(fail.details.expectedDurationMs).toBe(median === null ? null : Math.round(median))
              }
              yield* historyAgrees
              break
            }
            case "wait":
              if (action.ms > 0) yield* TestClock.adjust(Duration.millis(action.ms))
              break
            case "restart":
              yield* historyAgrees
              yield* service.restart
              break
          }
        }
        yield* historyAgrees
        // A monitor left running would be judged in every later case.
        expect((yield* onService(call("DELETE", `/api/monitors/${monitor.id}`))).status).toBe(204)
      }),
    { timeout: 300_000, fastCheck: { numRuns: RUNS } }
  )
})
