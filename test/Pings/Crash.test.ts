import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { type ChildProcess, spawn } from "node:child_process"
import { randomBytes } from "node:crypto"
import * as path from "node:path"
import pg from "pg"
import { freePort } from "../../src/Db/Embedded.js"
import { makeTestDatabase } from "../support/fixture.js"

const root = path.resolve(import.meta.dirname, "../..")

const startService = (env: Record<string, string>) =>
  Effect.gen(function*() {
    const child = spawn(process.execPath, [path.join(root, "bin/jobmon.js"), "serve"], {
      cwd: root,
      env: { ...process.env, ...env },
      stdio: ["ignore", "pipe", "pipe"]
    })
    let log = ""
    child.stdout!.on("data", (d) => (log += d))
    child.stderr!.on("data", (d) => (log += d))
    const url = `http://127.0.0.1:${env.PORT}`
    for (let i = 0; i < 200; i++) {
      const ok = yield* Effect.promise(() => fetch(`${url}/healthz`).then((r) => r.ok, () => false))
      if (ok) return { child, url, log: () => log }
      if (child.exitCode !== null) break
      yield* Effect.sleep("100 millis")
    }
    child.kill("SIGKILL")
    return yield* Effect.dieMessage(`service did not start:\n${log}`)
  })

const killHard = (child: ChildProcess) =>
  Effect.async<void>((resume) => {
    if (child.exitCode !== null || child.signalCode !== null) return resume(Effect.void)
    child.once("exit", () => resume(Effect.void))
    child.kill("SIGKILL")
  })

describe("durability", () => {
  it.live("every ping answered 200 before a kill -9 is in the database after restart", () =>
    Effect.gen(function*() {
      const db = yield* makeTestDatabase()
      const port = yield* freePort
      const token = `jmt_crash_${randomBytes(18).toString("base64url")}`
      const env = {
        DATABASE_URL: db.url,
        PORT: String(port),
        HOST: "127.0.0.1",
        BOOTSTRAP_TOKEN: token,
        LOG_LEVEL: "warn",
        PING_RATE_PER_SECOND: "100000",
        PING_BURST: "100000"
      }
      const first = yield* startService(env)
      yield* Effect.addFinalizer(() => killHard(first.child))
      const headers = { authorization: `Bearer ${token}`, "content-type": "application/json" }
      const monitorIds: Array<string> = []
      for (let i = 0; i < 20; i++) {
        const created = yield* Effect.promise(() =>
          fetch(`${first.url}/api/monitors`, {
            method: "POST",
            headers,
            body: JSON.stringify({ name: `crash ${i}`, schedule: { type: "interval", expression: "1h" } })
          }).then((r) => r.json() as Promise<{ id: string }>)
        )
        monitorIds.push(created.id)
      }

      // 32 clients ping as fast as they can; the service is killed while they do.
      const acknowledged: Array<string> = []
      let failures = 0
      let stop = false
      const client = async (n: number) => {
        let i = 0
        while (!stop) {
          const monitorId = monitorIds[(n + i++) % monitorIds.length]!
          try {
            const response = await fetch(`${first.url}/api/ping/${monitorId}/success`, {
              method: "POST",
              headers,
              body: JSON.stringify({ durationMs: i, output: `run ${i}` })
            })
            if (response.status === 200) acknowledged.push(((await response.json()) as { runId: string }).runId)
            else await response.arrayBuffer()
          } catch {
            failures++
            await new Promise((r) => setTimeout(r, 5))
          }
        }
      }
      const clients = Promise.all(Array.from({ length: 32 }, (_, n) => client(n)))
      yield* Effect.sleep("1000 millis")
      // Stall the database mid-load, so the writer has batches in flight and pings waiting, then kill.
      const locker = new pg.Client({ connectionString: db.url })
      yield* Effect.tryPromise(() => locker.connect()).pipe(Effect.orDie)
      yield* Effect.promise(() => locker.query("begin; lock table runs in share row exclusive mode"))
      const beforeStall = acknowledged.length
      yield* Effect.sleep("500 millis")
      const duringStall = acknowledged.length - beforeStall
      yield* killHard(first.child)
      yield* Effect.promise(() => locker.query("rollback").then(() => locker.end()))
      const atKill = acknowledged.length
      yield* Effect.sleep("300 millis")
      stop = true
      yield* Effect.promise(() => clients)
      expect(atKill).toBeGreaterThan(100)
      // While nothing could commit, nothing may be acknowledged (beyond replies already on the wire).
      expect(duringStall).toBeLessThan(40)

      const second = yield* startService(env)
      yield* Effect.addFinalizer(() => killHard(second.child))
      const check = new pg.Client({ connectionString: db.url })
      yield* Effect.tryPromise(() => check.connect()).pipe(Effect.timeout("10 seconds"), Effect.orDie)
      yield* Effect.addFinalizer(() => Effect.promise(() => check.end()))
      const stored = yield* Effect.promise(() =>
        check.query<{ id: string }>("select id from runs where id = any($1::uuid[])", [acknowledged])
      )
      const found = new Set(stored.rows.map((r) => r.id))
      const missing = acknowledged.filter((id) => !found.has(id))
      expect(missing).toEqual([])
      expect(found.size).toBe(acknowledged.length)
      // And the restarted service takes pings again.
      const after = yield* Effect.promise(() =>
        fetch(`${second.url}/api/ping/${monitorIds[0]}/success`, { method: "POST", headers, body: "{}" }).then((r) => r.status)
      )
      expect(after).toBe(200)
    }).pipe(Effect.scoped), 120_000)
})
