import { expect, layer } from "@effect/vitest"
import { SqlClient } from "@effect/sql"
import { Clock, Effect, TestClock } from "effect"
import { randomUUID } from "node:crypto"
import { Engine } from "../../src/Engine/Engine.js"
import { call, createMonitor, sendPing, TestServer } from "../support/fixture.js"

/** Let the engine's workers finish what the pings set off (they wait on the real database). */
const settle = Effect.gen(function*() {
  const engine = yield* Engine
  yield* Effect.promise(() => new Promise((resolve) => setTimeout(resolve, 20)))
  yield* engine.idle
})

/** The monitor's last 200 successful durations in the database, oldest first (by start, then duration, then id). */
const databaseDurations = (monitorId: string) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const rows = yield* sql<{ duration_ms: string }>`
      select duration_ms from runs where monitor_id = ${monitorId} and status = 'SUCCESS' and duration_ms is not null
      order by started_at desc, duration_ms desc, id desc limit 200`
    return rows.map((r) => Number(r.duration_ms)).reverse()
  })

const incidentsOf = (monitorId: string) =>
  Effect.map(call("GET", `/api/incidents?monitorId=${monitorId}`), (r) => {
    expect(r.status).toBe(200)
    return r.body.incidents as Array<any>
  })

layer(TestServer(), { timeout: 120_000 })("recent durations through the real server", (it) => {
  // Reported: every expectedDurationMs fitted the first success counted twice (its run was
  // committed before the actor loaded the durations from the database, then appended again).
  const cases: ReadonlyArray<readonly [ReadonlyArray<number>, number]> = [
    [[100, 300, 200], 200],
    [[100, 300], 200],
    [[500, 100, 300, 200], 250],
    [[100, 200, 900, 300, 400], 300]
  ]
  for (const [durations, median] of cases) {
    it.effect(`successes of ${durations.join(", ")} ms then a fail: expectedDurationMs ${median}`, () =>
      Effect.gen(function*() {
        const monitor = yield* createMonitor({ schedule: { type: "interval", expression: "10m" }, graceSeconds: 60 })
        for (const durationMs of durations) {
          yield* TestClock.adjust("1 minute")
          expect((yield* sendPing(monitor.id, "success", { body: { durationMs } })).status).toBe(200)
        }
        yield* TestClock.adjust("1 minute")
        expect((yield* sendPing(monitor.id, "fail", { body: { exitCode: 1 } })).status).toBe(200)
        yield* settle
        const [fail, ...rest] = yield* incidentsOf(monitor.id)
        expect(rest).toEqual([])
        expect(fail).toMatchObject({ type: "FAIL", status: "OPEN" })
        expect(fail.details.expectedDurationMs).toBe(median)
        const engine = yield* Engine
        expect(engine.durationsOf(monitor.id)).toEqual(durations)
        expect(yield* databaseDurations(monitor.id)).toEqual(durations)
      }))
  }

  it.effect("a run committed before the actor loaded, whose event reaches it after the load, counts once", () =>
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const engine = yield* Engine
      const monitor = yield* createMonitor({ schedule: { type: "interval", expression: "10m" }, graceSeconds: 60 })
      const [m] = yield* sql<{ org_id: string }>`select org_id from monitors where id = ${monitor.id}`
      // A success committed, its event not sent yet (as when the writer's commit is answered just
      // after the actor's load read the runs).
      yield* TestClock.adjust("1 minute")
      const now = yield* Clock.currentTimeMillis
      const late = { id: randomUUID(), startedAt: now - 400, finishedAt: now, durationMs: 400 }
      yield* sql`
        insert into runs (id, monitor_id, org_id, status, started_at, finished_at, duration_ms)
        values (${late.id}, ${monitor.id}, ${m!.org_id}, 'SUCCESS', ${new Date(late.startedAt)}, ${new Date(late.finishedAt)}, ${late.durationMs})`
      yield* TestClock.adjust("1 minute")
      // The next ping makes the actor load: it reads both runs.
      expect((yield* sendPing(monitor.id, "success", { body: { durationMs: 100 } })).status).toBe(200)
      yield* settle
      expect(engine.durationsOf(monitor.id)).toEqual([400, 100])
      // Now the late event arrives.
      engine.send(monitor.id, {
        _tag: "RunFinished",
        at: late.finishedAt,
        run: { id: late.id, status: "SUCCESS", startedAt: late.startedAt, finishedAt: late.finishedAt, durationMs: 400, exitCode: null, output: null, startInferred: true }
      })
      yield* settle
      expect(engine.durationsOf(monitor.id)).toEqual([400, 100])
      yield* TestClock.adjust("1 minute")
      yield* sendPing(monitor.id, "fail")
      yield* settle
      const [fail] = yield* incidentsOf(monitor.id)
      expect(fail.details.expectedDurationMs).toBe(250)
    }))

  it.effect("an actor rebuilt after a failure loads its durations again and counts the run that woke it once", () =>
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const engine = yield* Engine
      const monitor = yield* createMonitor({ schedule: { type: "interval", expression: "10m" }, graceSeconds: 60 })
      for (const durationMs of [100, 300]) {
        yield* TestClock.adjust("1 minute")
        yield* sendPing(monitor.id, "success", { body: { durationMs } })
      }
      yield* settle
      expect(engine.durationsOf(monitor.id)).toEqual([100, 300])
      // Every incident insert for this monitor fails: the FAIL cannot be raised, the actor is rebuilt.
      yield* sql.unsafe(`create or replace function jobmon_test_break_durations() returns trigger language plpgsql as $$
        begin if new.monitor_id = '${monitor.id}' then raise exception 'broken on purpose'; end if; return new; end $$`)
      yield* sql.unsafe(`drop trigger if exists jobmon_test_break_durations on incidents`)
      yield* sql.unsafe(`create trigger jobmon_test_break_durations before insert on incidents for each row execute function jobmon_test_break_durations()`)
      const restartsBefore = engine.stats.restarts
      yield* TestClock.adjust("1 minute")
      yield* sendPing(monitor.id, "fail")
      for (let i = 0; i < 20 && engine.stats.restarts === restartsBefore; i++) {
        yield* TestClock.adjust("2 seconds")
        yield* Effect.promise(() => new Promise((resolve) => setTimeout(resolve, 30)))
      }
      expect(engine.stats.restarts).toBeGreaterThan(restartsBefore)
      yield* sql.unsafe(`drop trigger jobmon_test_break_durations on incidents`)
      yield* settle
      expect(engine.durationsOf(monitor.id)).toBeUndefined()
      // The rebuilt actor loads at its next event, a success already committed.
      yield* TestClock.adjust("1 minute")
      yield* sendPing(monitor.id, "success", { body: { durationMs: 200 } })
      yield* settle
      expect(engine.durationsOf(monitor.id)).toEqual([100, 300, 200])
      expect(engine.durationsOf(monitor.id)).toEqual(yield* databaseDurations(monitor.id))
      yield* TestClock.adjust("1 minute")
      yield* sendPing(monitor.id, "fail")
      yield* settle
      const fail = (yield* incidentsOf(monitor.id)).find((i) => i.type === "FAIL")
      expect(fail.details.expectedDurationMs).toBe(200)
    }))
})
