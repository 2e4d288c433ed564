import { expect, layer } from "@effect/vitest"
import { SqlClient } from "@effect/sql"
import { Effect, FastCheck } from "effect"
import { Engine } from "../../src/Engine/Engine.js"
import { randomUUID } from "node:crypto"
import * as v8 from "node:v8"
import * as vm from "node:vm"
import { Database } from "../../src/Db/Database.js"
import { Intake } from "../../src/Pings/Intake.js"
import type { RunRow } from "../../src/Pings/Pairing.js"
import { RunWriter } from "../../src/Pings/RunWriter.js"
import { call, createMonitor, createOrganization, createToken, sendPing, TestServer } from "../support/fixture.js"
import { leakedFragment, secretOutput } from "./SecretOutput.js"
import { receiver } from "../Delivery/receiver.js"

const runsOf = (monitorId: string, query = "") =>
  Effect.map(call("GET", `/api/monitors/${monitorId}/runs${query}`), (r) => {
    expect(r.status).toBe(200)
    return r.body.runs as Array<any>
  })

/** The same behaviour whichever way a ping arrives: the fast node:http route or the HttpApi router. */
for (const fastPings of [true, false]) {
  layer(TestServer({ pingBurst: 20, pingRatePerSecond: 1 }, {}, { fastPings }), { excludeTestServices: true, timeout: 120_000 })(
    `ping intake (${fastPings ? "fast route" : "HttpApi router"})`,
    (it) => {
      it.effect("start then success: one run, same runId, duration from the pings", () =>
        Effect.gen(function*() {
          const monitor = yield* createMonitor()
          const start = yield* sendPing(monitor.id, "start")
          expect(start.status).toBe(200)
          expect(start.body).toEqual({ received: true, runId: expect.stringMatching(/^[0-9a-f-]{36}$/) })
          const running = yield* runsOf(monitor.id)
          expect(running).toHaveLength(1)
          expect(running[0]).toMatchObject({ id: start.body.runId, status: "RUNNING", finishedAt: null, startInferred: false })
          yield* Effect.sleep("50 millis")
          const success = yield* sendPing(monitor.id, "success")
          expect(success.status).toBe(200)
          expect(success.body).toEqual({ received: true, runId: start.body.runId })
          const [run] = yield* runsOf(monitor.id)
          expect(run).toMatchObject({ id: start.body.runId, status: "SUCCESS", startInferred: false })
          expect(run.durationMs).toBe(Date.parse(run.finishedAt) - Date.parse(run.startedAt))
          expect(run.durationMs).toBeGreaterThanOrEqual(40)
          // The monitor's lastPingAt is written by the engine, coalesced (at most 200 ms later).
          yield* (yield* Engine).idle
          const m = yield* call("GET", `/api/monitors/${monitor.id}`)
          expect(Date.parse(m.body.lastPingAt)).toBe(Date.parse(run.finishedAt))
        }))

      it.effect("two overlapping runs are told apart by runId (body or query)", () =>
        Effect.gen(function*() {
          const monitor = yield* createMonitor()
          const a = (yield* sendPing(monitor.id, "start")).body.runId
          const b = (yield* sendPing(monitor.id, "start")).body.runId
          expect(a).not.toBe(b)
          const failA = yield* sendPing(monitor.id, "fail", { body: { runId: a, exitCode: 2, durationMs: 70 } })
          expect(failA.body.runId).toBe(a)
          const okB = yield* sendPing(monitor.id, "success", { query: `runId=${b}&durationMs=90` })
          expect(okB.body.runId).toBe(b)
          const runs = yield* runsOf(monitor.id)
          const byId = Object.fromEntries(runs.map((r) => [r.id, r]))
          expect(byId[a]).toMatchObject({ status: "FAIL", exitCode: 2, durationMs: 70 })
          expect(byId[b]).toMatchObject({ status: "SUCCESS", durationMs: 90 })
          // Each run finishes once.
          const again = yield* sendPing(monitor.id, "success", { body: { runId: a } })
          expect(again.status).toBe(409)
          expect(again.body._tag).toBe("Conflict")
          const unknown = yield* sendPing(monitor.id, "success", { body: { runId: "7b0b5b8e-6c39-4a32-9a53-3d0f5c1e0a11" } })
          expect(unknown.status).toBe(404)
          expect((yield* sendPing(monitor.id, "success", { body: { runId: "nope" } })).status).toBe(404)
        }))

      it.effect("success without start infers the start from durationMs, or the arrival", () =>
        Effect.gen(function*() {
          const monitor = yield* createMonitor()
          const withDuration = yield* sendPing(monitor.id, "success", { body: { durationMs: 5000 } })
          const bare = yield* sendPing(monitor.id, "fail", { query: "exitCode=127" })
          const runs = yield* runsOf(monitor.id)
          const timed = runs.find((r) => r.id === withDuration.body.runId)
          expect(timed).toMatchObject({ startInferred: true, durationMs: 5000, status: "SUCCESS" })
          expect(Date.parse(timed.finishedAt) - Date.parse(timed.startedAt)).toBe(5000)
          const untimed = runs.find((r) => r.id === bare.body.runId)
          expect(untimed).toMatchObject({ startInferred: true, durationMs: null, status: "FAIL", exitCode: 127 })
          expect(untimed.startedAt).toBe(untimed.finishedAt)
        }))

      it.effect("output is redacted before it is stored and truncated to its tail", () =>
        Effect.gen(function*() {
          const monitor = yield* createMonitor({ maxOutputSizeKb: 1 })
          const secretLine = "connecting with password=hunter2 and Authorization: Bearer abc.def.ghi\n"
          const filler = "x".repeat(3000)
          const output = `${secretLine}${filler}\nFATAL: disk full at the end`
          const sent = yield* sendPing(monitor.id, "fail", { body: { exitCode: 1, output } })
          expect(sent.status).toBe(200)
          const [run] = yield* runsOf(monitor.id)
          expect(run.outputTruncated).toBe(true)
          expect(run.outputBytes).toBe(Buffer.byteLength(output))
          expect(Buffer.byteLength(run.output)).toBeLessThanOrEqual(1024)
          expect(run.output.endsWith("FATAL: disk full at the end")).toBe(true)
          const short = yield* sendPing(monitor.id, "success", { body: { output: secretLine } })
          const stored = (yield* runsOf(monitor.id)).find((r) => r.id === short.body.runId)
          expect(stored.output).toBe("connecting with password=***REDACTED*** and Authorization: Bearer ***REDACTED***\n")
          expect(stored.outputTruncated).toBe(false)
          // Nowhere in the database.
          const sql = yield* SqlClient.SqlClient
          const leaks = yield* sql<{ n: number }>`select count(*)::int as n from runs where output like ${"%hunter2%"}`
          expect(leaks[0]!.n).toBe(0)
        }))

      it.effect("a secret after a long word is redacted before the output is cut to its tail", () =>
        Effect.gen(function*() {
          const monitor = yield* createMonitor({ maxOutputSizeKb: 1 })
          const sql = yield* SqlClient.SqlClient
          // The key is the whole run `yyy…ypassword` (3,000 + 8 characters); only the end of the
          // output is kept, so a key judged on its full length would leave `ssword=<secret>` behind.
          const cases = [
            `${"y".repeat(3000)}password=QXZJ8KV7QXZJ9KV7Q8 ${"z".repeat(900)}`,
            `${"y".repeat(3000)}DB_PASSWORD: QXZJ8KV7QXZJ9KV7Q9 ${"z".repeat(900)}`,
            `{"${"y".repeat(3000)}api_key": "QXZJ8KV7QXZJ9KV7Q7", "note": "${"z".repeat(900)}"}`,
            `${"y".repeat(3000)}authorization: Bearer QXZJ8KV7QXZJ9KV7QX\n${"z".repeat(900)}`
          ]
          for (const output of cases) {
            const sent = yield* sendPing(monitor.id, "fail", { body: { exitCode: 1, output } })
            expect(sent.status).toBe(200)
            const run = (yield* runsOf(monitor.id)).find((r) => r.id === sent.body.runId)
            expect(run.outputTruncated).toBe(true)
            expect(run.output).toContain("***REDACTED***")
            expect(run.output).not.toMatch(/[QXZJKV789]{6}/)
          }
          const leaks = yield* sql<{ n: number }>`select count(*)::int as n from runs where output like ${"%QXZJ%"}`
          expect(leaks[0]!.n).toBe(0)
          // Outputs of the property test in Output.test.ts, through the server (a monitor of its
          // own: this layer allows bursts of 20 pings per monitor).
          const sampled = yield* createMonitor({ maxOutputSizeKb: 1 })
          for (const { output, secrets } of FastCheck.sample(secretOutput, { numRuns: 16, seed: 19 })) {
            const sent = yield* sendPing(sampled.id, "fail", { body: { exitCode: 1, output } })
            expect(sent.status).toBe(200)
            const run = (yield* runsOf(sampled.id)).find((r) => r.id === sent.body.runId)
            expect(Buffer.byteLength(run.output)).toBeLessThanOrEqual(1024)
            expect(leakedFragment(run.output, secrets)).toBeUndefined()
          }
        }))

      it.effect("NUL characters are removed and lone surrogates become U+FFFD: stored, never a 500", () =>
        Effect.gen(function*() {
          const monitor = yield* createMonitor()
          // Written as JSON escapes, as a client's JSON encoder sends them.
          const rawBody = String.raw`{"exitCode":3,"output":"before\u0000after \ud800 lone \udc00 end \ud83d\ude00 pass\u0000word=hunter2"}`
          for (const kind of ["fail", "success"] as const) {
            const sent = yield* sendPing(monitor.id, kind, { rawBody })
            expect(sent.status, sent.text).toBe(200)
            const run = (yield* runsOf(monitor.id)).find((r) => r.id === sent.body.runId)
            expect(run.status).toBe(kind === "fail" ? "FAIL" : "SUCCESS")
            expect(run.output).toBe("beforeafter \uFFFD lone \uFFFD end \u{1F600} password=***REDACTED***")
            expect(run.outputTruncated).toBe(false)
          }
          // The same characters raw, unescaped: JSON does not allow them in a string, but a shell
          // script's hand-built body has them (docs/client.md's curl script passes NUL through awk).
          const rawNul = `{"exitCode":3,"output":"before\u0000after\tone\ttab\r\nnext line\u0001 password=hunter2"}`
          for (const kind of ["fail", "success"] as const) {
            const sent = yield* sendPing(monitor.id, kind, { rawBody: rawNul })
            expect(sent.status, sent.text).toBe(200)
            const run = (yield* runsOf(monitor.id)).find((r) => r.id === sent.body.runId)
            expect(run.output).toBe("beforeafter\tone\ttab\r\nnext line\u0001 password=***REDACTED***")
          }
          // Output captured with nothing but NULs is stored as an empty string.
          const nuls = yield* sendPing(monitor.id, "fail", { rawBody: String.raw`{"output":"\u0000\u0000"}` })
          expect(nuls.status).toBe(200)
          expect((yield* runsOf(monitor.id)).find((r) => r.id === nuls.body.runId).output).toBe("")
        }))

      it.effect("output of exactly maxOutputSizeKb KiB is kept whole; no capture keeps none", () =>
        Effect.gen(function*() {
          const monitor = yield* createMonitor({ maxOutputSizeKb: 1 })
          const exact = "y".repeat(1024)
          const sent = yield* sendPing(monitor.id, "success", { body: { output: exact } })
          const run = (yield* runsOf(monitor.id)).find((r) => r.id === sent.body.runId)
          expect(run).toMatchObject({ output: exact, outputTruncated: false, outputBytes: 1024 })
          const quiet = yield* createMonitor({ captureOutput: false })
          yield* sendPing(quiet.id, "success", { body: { output: "hello" } })
          const [q] = yield* runsOf(quiet.id)
          expect(q.output).toBeNull()
        }))

      it.effect("bad input is a 400 naming the field; nothing is stored", () =>
        Effect.gen(function*() {
          const monitor = yield* createMonitor()
          const cases: Array<[Parameters<typeof sendPing>[2], string]> = [
            [{ rawBody: "{not json" }, ""],
            [{ rawBody: "[1]" }, ""],
            [{ body: { durationMs: -5 } }, "durationMs"],
            [{ body: { durationMs: 1.5 } }, "durationMs"],
            [{ body: { durationMs: "100" } }, "durationMs"],
            [{ body: { exitCode: "1" } }, "exitCode"],
            [{ body: { output: 42 } }, "output"],
            [{ query: "exitCode=abc" }, "exitCode"],
            [{ query: "durationMs=-1" }, "durationMs"]
          ]
          for (const [options, path] of cases) {
            const response = yield* sendPing(monitor.id, "fail", options)
            expect(response.status, JSON.stringify(options)).toBe(400)
            expect(response.body._tag).toBe("ValidationError")
            expect(response.body.path).toBe(path)
            expect(response.body.message.length).toBeGreaterThan(5)
          }
          expect(yield* runsOf(monitor.id)).toHaveLength(0)
          const bigOutput = yield* sendPing(monitor.id, "fail", { body: { output: "z".repeat(2 * 1024 * 1024 + 1) } })
          expect(bigOutput.status).toBe(413)
          expect(bigOutput.body._tag).toBe("PayloadTooLarge")
        }))

      it.effect("unknown, deleted and foreign monitors are 404; tokens are checked like everywhere", () =>
        Effect.gen(function*() {
          expect((yield* sendPing("7b0b5b8e-6c39-4a32-9a53-3d0f5c1e0a11", "success")).status).toBe(404)
          expect((yield* sendPing("not-a-monitor", "start")).status).toBe(404)
          const monitor = yield* createMonitor()
          const other = yield* createOrganization(`acme${fastPings ? "f" : "s"}`)
          const foreign = yield* sendPing(monitor.id, "success", { token: other.token })
          expect(foreign.status).toBe(404)
          expect((yield* sendPing(monitor.id, "success", { token: null })).status).toBe(401)
          const read = yield* createToken("read")
          const forbidden = yield* sendPing(monitor.id, "success", { token: read.token })
          expect(forbidden.status).toBe(403)
          const ping = yield* createToken("ping")
          expect((yield* sendPing(monitor.id, "success", { token: ping.token })).status).toBe(200)
          expect((yield* call("DELETE", `/api/monitors/${monitor.id}`)).status).toBe(204)
          expect((yield* sendPing(monitor.id, "success", { token: ping.token })).status).toBe(404)
          const wrongMethod = yield* call("GET", `/api/ping/${monitor.id}/success`)
          expect(wrongMethod.status).toBe(405)
        }))

      it.effect("over the per-monitor rate limit a ping is 429 with Retry-After", () =>
        Effect.gen(function*() {
          const monitor = yield* createMonitor()
          const statuses: Array<number> = []
          let limited: any
          let accepted: any
          for (let i = 0; i < 30; i++) {
            const r = yield* sendPing(monitor.id, "success")
            statuses.push(r.status)
            if (r.status === 429 && limited === undefined) limited = r
            if (r.status === 200) accepted = r
          }
          // The limit's headers come with the 429 only; every answer carries the API version.
          expect(accepted.headers["x-ratelimit-limit"]).toBeUndefined()
          expect(accepted.headers["x-api-version"]).toBe("1")
          expect(limited?.headers["x-api-version"]).toBe("1")
          const ok = statuses.filter((s) => s === 200).length
          expect(ok).toBeGreaterThanOrEqual(20)
          expect(ok).toBeLessThan(30)
          expect(limited).toBeDefined()
          expect(limited.body._tag).toBe("RateLimited")
          expect(Number(limited.headers["retry-after"])).toBeGreaterThanOrEqual(1)
          expect(limited.headers["x-ratelimit-limit"]).toBe("20")
          // Every 200 is a stored run.
          const sql = yield* SqlClient.SqlClient
          const rows = yield* sql<{ n: number }>`select count(*)::int as n from runs where monitor_id = ${monitor.id}`
          expect(rows[0]!.n).toBe(statuses.filter((s) => s === 200).length)
        }))

      it.effect("runs list newest first with a cursor, from/to and limit", () =>
        Effect.gen(function*() {
          const monitor = yield* createMonitor()
          const ids: Array<string> = []
          for (let i = 0; i < 5; i++) {
            ids.push((yield* sendPing(monitor.id, "success", { body: { durationMs: i } })).body.runId)
            yield* Effect.sleep("5 millis")
          }
          const first = yield* call("GET", `/api/monitors/${monitor.id}/runs?limit=2`)
          expect(first.body.runs.map((r: any) => r.id)).toEqual([ids[4], ids[3]])
          const second = yield* call("GET", `/api/monitors/${monitor.id}/runs?limit=2&cursor=${first.body.nextCursor}`)
          expect(second.body.runs.map((r: any) => r.id)).toEqual([ids[2], ids[1]])
          const third = yield* call("GET", `/api/monitors/${monitor.id}/runs?limit=2&cursor=${second.body.nextCursor}`)
          expect(third.body.runs.map((r: any) => r.id)).toEqual([ids[0]])
          expect(third.body.nextCursor).toBeNull()
          const all = first.body.runs.concat(second.body.runs, third.body.runs)
          const middle = all[2].startedAt
          const from = yield* call("GET", `/api/monitors/${monitor.id}/runs?from=${encodeURIComponent(middle)}`)
          expect(from.body.runs.map((r: any) => r.id)).toEqual([ids[4], ids[3], ids[2]])
          const to = yield* call("GET", `/api/monitors/${monitor.id}/runs?to=${encodeURIComponent(middle)}`)
          expect(to.body.runs.map((r: any) => r.id)).toEqual([ids[1], ids[0]])
          for (const q of ["limit=0", "limit=501", "from=yesterday", "cursor=garbage"]) {
            const bad = yield* call("GET", `/api/monitors/${monitor.id}/runs?${q}`)
            expect(bad.status, q).toBe(400)
            expect(bad.body.path).toBe(q.split("=")[0])
          }
          const other = yield* createOrganization(`runs${fastPings ? "f" : "s"}`, "read")
          expect((yield* call("GET", `/api/monitors/${monitor.id}/runs`, { token: other.token })).status).toBe(404)
        }))
    }
  )
}

// The switch is the webhooks' (Webhooks syncs it on every delivery pass): the test turns it on the
// way a user does, by subscribing a webhook. Flipping it by hand raced with the worker's pass that
// the monitor's creation had woken, which set it back from the subscriptions (none).
layer(TestServer({ allowPrivateTargets: true }), { excludeTestServices: true, timeout: 120_000 })("ping.received events", (it) => {
  it.effect("are recorded per ping, in the ping's own commit, only while a webhook subscribes to them", () =>
    Effect.scoped(Effect.gen(function*() {
      const target = yield* receiver([200])
      const monitor = yield* createMonitor()
      const pingEvents = Effect.map(
        call("GET", `/api/events?type=ping.received&monitorId=${monitor.id}`),
        (r) => r.body.events as Array<any>
      )
      yield* sendPing(monitor.id, "success")
      expect(yield* pingEvents).toHaveLength(0)
      const hook = yield* call("POST", "/api/webhooks", { body: { url: target.url, events: ["ping.received"] } })
      expect(hook.status, hook.text).toBe(201)
      const start = yield* sendPing(monitor.id, "start")
      const done = yield* sendPing(monitor.id, "fail", { body: { exitCode: 4, output: "password=hunter2" } })
      const events = yield* pingEvents
      expect(events).toHaveLength(2)
      const byKind = Object.fromEntries(events.map((e: any) => [e.data.ping.kind, e]))
      expect(byKind.start.data.ping).toMatchObject({ monitorId: monitor.id, runId: start.body.runId, status: "RUNNING" })
      expect(byKind.fail.data.ping).toMatchObject({ runId: done.body.runId, status: "FAIL", exitCode: 4 })
      // The whole payload (built by the writer's statement), dated at each ping's arrival.
      const run = (yield* call("GET", `/api/monitors/${monitor.id}/runs`)).body.runs.find((r: any) => r.id === start.body.runId)
      expect(byKind.start.data).toEqual({
        ping: { monitorId: monitor.id, runId: start.body.runId, kind: "start", at: run.startedAt, status: "RUNNING", durationMs: null, exitCode: null }
      })
      expect(byKind.fail.data).toEqual({
        ping: { monitorId: monitor.id, runId: done.body.runId, kind: "fail", at: run.finishedAt, status: "FAIL", durationMs: run.durationMs, exitCode: 4 }
      })
      expect(byKind.start.createdAt).toBe(run.startedAt)
      expect(byKind.fail.createdAt).toBe(run.finishedAt)
      expect(events.map((e: any) => e.data.ping.kind)).toEqual(["fail", "start"]) // newest first
      expect(JSON.stringify(events)).not.toContain("hunter2")
      // Unsubscribed: pings record nothing more.
      expect((yield* call("DELETE", `/api/webhooks/${hook.body.id}`)).status).toBe(204)
      yield* sendPing(monitor.id, "success")
      expect(yield* pingEvents).toHaveLength(2)
    })))
})

layer(TestServer(), { excludeTestServices: true, timeout: 120_000 })("memory", (it) => {
  it.effect("an answered ping's request and answer callback are not kept by its monitor's state (the first ping's included)", () =>
    Effect.gen(function*() {
      v8.setFlagsFromString("--expose-gc")
      const gc = vm.runInNewContext("gc") as () => void
      const intake = yield* Intake
      const { token } = yield* createToken("ping")
      const monitor = yield* createMonitor()
      const refs: Array<WeakRef<object>> = []
      for (const kind of ["start", "success", "success"] as const) {
        // Made in a function of their own, so nothing in this generator holds them.
        const answer = yield* Effect.async<number>((resume) => {
          const request = { monitorId: monitor.id, kind, authorization: `Bearer ${token}`, query: "", body: `{"output":"${"x".repeat(64)}"}` }
          const reply = (r: { status: number }) => resume(Effect.succeed(r.status))
          refs.push(new WeakRef(request), new WeakRef(reply))
          intake.submit(request, reply)
        })
        expect(answer).toBe(200)
      }
      yield* (yield* Engine).idle
      yield* Effect.promise(() => intake.drain())
      // WeakRefs hold their target until the end of the job that made them: collect on later turns.
      for (let i = 0; i < 5; i++) {
        yield* Effect.promise(() => new Promise((resolve) => setImmediate(resolve)))
        gc()
      }
      expect(refs.map((r) => r.deref() === undefined)).toEqual(refs.map(() => true))
    }))
})

layer(TestServer(), { excludeTestServices: true, timeout: 120_000 })("the run writer", (it) => {
  it.effect("with several lanes, each monitor's rows commit in the order they were written", () =>
    Effect.gen(function*() {
      const database = yield* Database
      const sql = yield* SqlClient.SqlClient
      const writer = new RunWriter(database.pool, 3)
      const orgId = randomUUID()
      const monitors = Array.from({ length: 12 }, () => randomUUID())
      const T = Date.parse("2026-11-25T12:00:00Z")
      const order: Array<string> = []
      const write = (row: RunRow) =>
        new Promise<void>((resolve, reject) =>
          writer.write(row, (error) => {
            order.push(`${row.monitorId} ${row.id} ${row.status}`)
            return error === undefined ? resolve() : reject(error)
          }))
      const base = { orgId, startInferred: false, exitCode: null, output: null, outputTruncated: false, outputBytes: null }
      const done = yield* Effect.promise(async () => {
        const all: Array<Promise<void>> = []
        for (let round = 0; round < 5; round++) {
          for (const [i, monitorId] of monitors.entries()) {
            const id = randomUUID()
            const startedAt = T + round * 60_000 + i
            all.push(write({ ...base, id, monitorId, status: "RUNNING", startedAt, finishedAt: null, durationMs: null, pingAt: startedAt }))
            // the success is written on a later turn, while the start's batch may still be in flight
            await new Promise((resolve) => setImmediate(resolve))
            all.push(write({ ...base, id, monitorId, status: "SUCCESS", startedAt, finishedAt: startedAt + 500, durationMs: 500, pingAt: startedAt + 500 }))
          }
        }
        await Promise.all(all)
        await writer.close()
        return all.length
      })
      expect(done).toBe(120)
      // every run ends in its last written state: a start committed after its success would leave it RUNNING
      const rows = yield* sql<{ status: string; n: number }>`
        select status, count(*)::int as n from runs where monitor_id = any(${monitors}::uuid[]) group by status`
      expect(rows).toEqual([{ status: "SUCCESS", n: 60 }])
      // and each monitor's writes were answered in the order they were made
      for (const monitorId of monitors) {
        const mine = order.filter((line) => line.startsWith(monitorId))
        expect(mine).toHaveLength(10)
        for (let k = 0; k < mine.length; k += 2) {
          expect(mine[k]!.endsWith("RUNNING")).toBe(true)
          expect(mine[k + 1]).toBe(mine[k]!.replace("RUNNING", "SUCCESS"))
        }
      }
    }))


  it.effect("with a spacing (cluster mode), a ping on an idle writer is written at once and the pings of a busy one share a batch", () =>
    Effect.gen(function*() {
      const database = yield* Database
      const sql = yield* SqlClient.SqlClient
      const orgId = randomUUID()
      const monitorId = randomUUID()
      const T = Date.parse("2026-11-28T12:00:00Z")
      const row = (i: number): RunRow => ({
        orgId, monitorId, id: randomUUID(), status: "SUCCESS", startedAt: T + i, finishedAt: T + i, durationMs: 0, pingAt: T + i,
        startInferred: true, exitCode: null, output: null, outputTruncated: false, outputBytes: null
      })
      const run = (writer: RunWriter) =>
        Effect.promise(async () => {
          const write = (r: RunRow) => new Promise<number>((resolve, reject) => {
            const at = performance.now()
            writer.write(r, (error) => (error === undefined ? resolve(performance.now() - at) : reject(error)))
          })
          // The first ping finds the writer idle: answered without waiting for the spacing.
          const first = await write(row(0))
          const before = writer.stats.batches
          // Then eight pings 5 ms apart, on a writer that has just written.
          const rest: Array<Promise<number>> = []
          for (let i = 1; i <= 8; i++) {
            rest.push(write(row(i)))
            await new Promise((resolve) => setTimeout(resolve, 5))
          }
          await Promise.all(rest)
          const batches = writer.stats.batches - before
          await writer.close()
          return { first, batches }
        })
      const spaced = new RunWriter(database.pool)
      spaced.lingerMs = 1_000
      const a = yield* run(spaced)
      expect(a.first).toBeLessThan(500)
      expect(a.batches).toBe(1)
      // Without a spacing each of the eight goes on its own (nothing else is in flight 5 ms later).
      const plain = new RunWriter(database.pool)
      const b = yield* run(plain)
      expect(b.batches).toBeGreaterThan(4)
      const [stored] = yield* sql<{ n: number }>`select count(*)::int as n from runs where monitor_id = ${monitorId}`
      expect(stored?.n).toBe(18)
    }))

  it.effect("with a spacing, a steady stream of pings is committed no more often than the spacing allows, pings that came during a commit included", () =>
    Effect.gen(function*() {
      const database = yield* Database
      const sql = yield* SqlClient.SqlClient
      const orgId = randomUUID()
      const monitorId = randomUUID()
      const T = Date.parse("2026-11-28T13:00:00Z")
      const writer = new RunWriter(database.pool)
      writer.lingerMs = 250
      const { elapsed, batches, written } = yield* Effect.promise(async () => {
        const all: Array<Promise<void>> = []
        const start = performance.now()
        // A ping every half millisecond (turns of the event loop) for 600 ms: some arrive while a
        // batch is in flight.
        let last = Number.NEGATIVE_INFINITY
        for (let i = 0; performance.now() - start < 600; i++) {
          await new Promise((resolve) => setImmediate(resolve))
          if (performance.now() - last < 0.5) continue
          last = performance.now()
          all.push(new Promise<void>((resolve, reject) =>
            writer.write({
              orgId, monitorId, id: randomUUID(), status: "SUCCESS", startedAt: T + i, finishedAt: T + i, durationMs: 0, pingAt: T + i,
              startInferred: true, exitCode: null, output: null, outputTruncated: false, outputBytes: null
            }, (error) => (error === undefined ? resolve() : reject(error)))
          ))
        }
        await Promise.all(all)
        const elapsed = performance.now() - start
        const batches = writer.stats.batches
        await writer.close()
        return { elapsed, batches, written: all.length }
      })
      // the first ping at once, then one batch per 250 ms at most
      expect(batches).toBeLessThanOrEqual(Math.ceil(elapsed / 250) + 1)
      const [stored] = yield* sql<{ n: number }>`select count(*)::int as n from runs where monitor_id = ${monitorId}`
      expect(stored?.n).toBe(written)
    }))

  it.effect("the writer's connection is killed: the service stays up and the next pings are stored on a new one", () =>
    Effect.gen(function*() {
      const monitor = yield* createMonitor()
      const sql = yield* SqlClient.SqlClient
      const first = yield* sendPing(monitor.id, "success", { body: { durationMs: 1 } })
      expect(first.status).toBe(200)
      // The writer holds its connection between batches: the backend that last ran its statement.
      const writers = yield* sql<{ pid: number }>`
        select pid from pg_stat_activity
        where datname = current_database() and pid <> pg_backend_pid() and query like '%insert into runs%'`
      expect(writers.length).toBeGreaterThan(0)
      yield* sql`select pg_terminate_backend(pid) from unnest(${writers.map((w) => w.pid)}::int[]) as pid`
      yield* Effect.sleep("100 millis")
      // At most the first ping after the kill meets the dead connection (503, not stored); then 200s.
      const answers: Array<{ status: number; body: any }> = []
      for (let i = 0; i < 5; i++) answers.push(yield* sendPing(monitor.id, "success", { body: { durationMs: 2 + i } }))
      expect(answers.slice(1).every((a) => a.status === 200)).toBe(true)
      expect([200, 503]).toContain(answers[0]!.status)
      const stored = (yield* runsOf(monitor.id, "?limit=100")).map((r) => r.id).sort()
      const acknowledged = [first, ...answers].filter((a) => a.status === 200).map((a) => a.body.runId).sort()
      expect(stored).toEqual(acknowledged)
    }))

  it.effect("a batch that PostgreSQL rolls back to break a deadlock is sent again: its pings are stored and answered", () =>
    Effect.gen(function*() {
      const database = yield* Database
      const sql = yield* SqlClient.SqlClient
      const [mode] = yield* sql<{ t: string | null }>`select to_regclass('public.run_duration_dirty')::text as t`
      if (mode?.t === null) return // the continuous aggregate's mode marks no keys
      const writer = new RunWriter(database.pool)
      const orgId = randomUUID()
      const monitorId = randomUUID()
      const HOUR = 3_600_000
      const newer = Math.floor(Date.now() / HOUR) * HOUR - HOUR
      const older = newer - HOUR
      // Both (monitor, hour) keys exist, so marking them takes their row locks.
      yield* sql`insert into run_duration_dirty (monitor_id, bucket)
        values (${monitorId}, to_timestamp(${newer / 1000})), (${monitorId}, to_timestamp(${older / 1000}))`
      const base = { orgId, monitorId, status: "SUCCESS" as const, startInferred: false, exitCode: null, output: null, outputTruncated: false, outputBytes: null, durationMs: 1_000 }
      const row = (startedAt: number): RunRow => ({ ...base, id: randomUUID(), startedAt, finishedAt: startedAt + 1_000, pingAt: startedAt + 1_000 })
      const rows = [row(newer + 60_000), row(older + 60_000)]
      const answers = yield* Effect.promise(async () => {
        const other = await database.pool.connect()
        try {
          // This session never gives up first: PostgreSQL breaks the deadlock in the writer's statement.
          await other.query("set deadlock_timeout = '30s'")
          await other.query("begin")
          const mark = `update run_duration_dirty set marked_at = now() where monitor_id = $1 and bucket = to_timestamp($2)`
          await other.query(mark, [monitorId, older / 1000])
          // The writer's row triggers mark the newer hour, then wait for the older one…
          const written = rows.map((r) => new Promise<string>((resolve) => writer.write(r, (error) => resolve(error === undefined ? "stored" : error.message))))
          await new Promise((resolve) => setTimeout(resolve, 300))
          // …which this session holds while it asks for the newer one: a deadlock.
          await other.query(mark, [monitorId, newer / 1000])
          await other.query("commit")
          return await Promise.all(written)
        } finally {
          other.release()
          await writer.close()
        }
      })
      expect(answers).toEqual(["stored", "stored"])
      const stored = yield* sql<{ id: string }>`select id from runs where monitor_id = ${monitorId} order by started_at desc`
      expect(stored.map((r) => r.id)).toEqual(rows.map((r) => r.id))
    }), { timeout: 60_000 })

  it.effect("a ping whose values the database refuses fails alone; the pings of its batch are stored", () =>
    Effect.gen(function*() {
      const monitor = yield* createMonitor()
      // A start inferred from this duration falls before 4713 BC: PostgreSQL refuses the timestamp.
      const bad = { body: { durationMs: Number.MAX_SAFE_INTEGER } }
      const answers = yield* Effect.all(
        Array.from({ length: 40 }, (_, i) => sendPing(monitor.id, "success", i === 20 ? bad : { body: { durationMs: 1_000 + i } })),
        { concurrency: "unbounded" }
      )
      expect(answers[20]!.status).toBe(503)
      expect(answers.filter((a, i) => i !== 20 && a.status === 200)).toHaveLength(39)
      const runs = yield* runsOf(monitor.id, "?limit=100")
      expect(runs.map((r) => r.id).sort()).toEqual(answers.filter((a) => a.status === 200).map((a) => a.body.runId).sort())
    }))
})
