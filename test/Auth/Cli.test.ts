import { describe, expect, it, layer } from "@effect/vitest"
import { Effect } from "effect"
import { type ChildProcess, spawn } from "node:child_process"
import { randomBytes } from "node:crypto"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { freePort, isAlive } from "../../src/Db/Embedded.js"
import { call, signIn, TestApp, TestServer } from "../support/fixture.js"

const root = path.resolve(import.meta.dirname, "../..")
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/

/** The environment of a child process: this one's, minus the database settings, plus `env`. */
const childEnv = (env: Record<string, string>) => {
  const base: Record<string, string | undefined> = { ...process.env }
  delete base.DATABASE_URL
  delete base.JOBMON_PASSWORD
  return { ...base, LOG_LEVEL: "warn", ...env }
}

/** `jobmon <args>` run to completion with stdin from /dev/null and no TTY. */
const jobmon = (args: ReadonlyArray<string>, env: Record<string, string>) =>
  Effect.async<{ code: number | null; stdout: string; stderr: string }>((resume) => {
    const child = spawn(process.execPath, [path.join(root, "bin/jobmon.js"), ...args], {
      cwd: root,
      env: childEnv(env),
      stdio: ["ignore", "pipe", "pipe"]
    })
    let stdout = ""
    let stderr = ""
    child.stdout!.on("data", (d) => (stdout += d))
    child.stderr!.on("data", (d) => (stderr += d))
    const timer = setTimeout(() => child.kill("SIGKILL"), 120_000)
    child.on("exit", (code) => {
      clearTimeout(timer)
      resume(Effect.succeed({ code, stdout, stderr }))
    })
  })

layer(TestServer(), { excludeTestServices: true, timeout: 240_000 })("jobmon user create", (it) => {
  it.effect("creates a user who can then sign in; the password comes from JOBMON_PASSWORD or --password", () =>
    Effect.gen(function*() {
      const app = yield* TestApp
      const db = { DATABASE_URL: app.databaseUrl }
      const created = yield* jobmon(["user", "create", "--email", "first@example.com", "--name", "First Admin"], {
        ...db,
        JOBMON_PASSWORD: "from the environment"
      })
      expect(created.stderr).toBe("")
      expect(created.code).toBe(0)
      expect(created.stdout.trim()).toMatch(UUID)
      const session = yield* signIn("first@example.com", "from the environment")
      expect(session.user).toMatchObject({ id: created.stdout.trim(), name: "First Admin" })

      const flag = yield* jobmon(["user", "create", "--email", "second@example.com", "--name", "Second", "--password", "from the flag!"], db)
      expect(flag.code).toBe(0)
      expect((yield* signIn("second@example.com", "from the flag!")).user.id).toBe(flag.stdout.trim())
    }), 240_000)

  it.effect("refuses a short or missing password, an unknown organization and a duplicate email with exit code 2", () =>
    Effect.gen(function*() {
      const app = yield* TestApp
      const db = { DATABASE_URL: app.databaseUrl }
      const cases: Array<[ReadonlyArray<string>, Record<string, string>, RegExp]> = [
        [["--email", "a@example.com", "--name", "A", "--password", "short"], {}, /at least 8 characters/],
        [["--email", "a@example.com", "--name", "A"], {}, /JOBMON_PASSWORD/],
        [["--email", "nope", "--name", "A", "--org", "missing"], { JOBMON_PASSWORD: "long enough pw" }, /no organization with slug 'missing'/]
      ]
      for (const [args, env, message] of cases) {
        const result = yield* jobmon(["user", "create", ...args], { ...db, ...env })
        expect(result.code).toBe(2)
        expect(result.stderr).toMatch(message)
        expect(result.stdout).toBe("")
      }
      const first = yield* jobmon(["user", "create", "--email", "dup@example.com", "--name", "Dup"], { ...db, JOBMON_PASSWORD: "long enough pw" })
      expect(first.code).toBe(0)
      const again = yield* jobmon(["user", "create", "--email", "DUP@example.com", "--name", "Dup"], { ...db, JOBMON_PASSWORD: "long enough pw" })
      expect(again.code).toBe(2)
      expect(again.stderr).toMatch(/already exists/)
      const users = yield* call("GET", "/api/users")
      expect(users.body.users.filter((u: any) => u.email.toLowerCase() === "dup@example.com")).toHaveLength(1)
    }), 240_000)
})

const postmasterPid = (dataDir: string) =>
  Number.parseInt(fs.readFileSync(path.join(dataDir, "pg17", "postmaster.pid"), "utf8").split("\n")[0]!, 10)

const stopService = (child: ChildProcess) =>
  Effect.async<number | null>((resume) => {
    if (child.exitCode !== null || child.signalCode !== null) return resume(Effect.succeed(child.exitCode))
    const timer = setTimeout(() => child.kill("SIGKILL"), 60_000)
    child.once("exit", (code) => {
      clearTimeout(timer)
      resume(Effect.succeed(code))
    })
    child.kill("SIGINT")
  })

describe("the CLI beside a running service on the embedded database", () => {
  it.scopedLive("jobmon user create uses the service's embedded PostgreSQL and leaves it running", () =>
    Effect.gen(function*() {
      const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), "jobmon-cli-embedded-"))
      yield* Effect.addFinalizer(() => Effect.sync(() => fs.rmSync(dataDir, { recursive: true, force: true })))
      const port = yield* freePort
      const token = `jmt_cli_${randomBytes(18).toString("base64url")}`
      const env = { DATA_DIR: dataDir, PORT: String(port), HOST: "127.0.0.1", BOOTSTRAP_TOKEN: token }
      const service = spawn(process.execPath, [path.join(root, "bin/jobmon.js"), "serve"], {
        cwd: root,
        env: childEnv(env),
        stdio: ["ignore", "pipe", "pipe"]
      })
      let log = ""
      service.stdout!.on("data", (d) => (log += d))
      service.stderr!.on("data", (d) => (log += d))
      yield* Effect.addFinalizer(() => stopService(service))
      const url = `http://127.0.0.1:${port}`
      const healthy = () => fetch(`${url}/healthz`).then((r) => r.ok, () => false)
      let up = false
      for (let i = 0; i < 1800 && !up && service.exitCode === null; i++) {
        up = yield* Effect.promise(healthy)
        if (!up) yield* Effect.sleep("100 millis")
      }
      if (!up) return yield* Effect.dieMessage(`the service did not start:\n${log}`)
      const postgres = postmasterPid(dataDir)

      const created = yield* jobmon(["user", "create", "--email", "owner@example.com", "--name", "Owner"], {
        DATA_DIR: dataDir,
        JOBMON_PASSWORD: "embedded password"
      })
      expect(created.stderr).toBe("")
      expect(created.code).toBe(0)
      expect(created.stdout.trim()).toMatch(UUID)

      // The service's database is the same one, still up: no restart, no re-initialisation.
      expect(isAlive(postgres)).toBe(true)
      expect(postmasterPid(dataDir)).toBe(postgres)
      expect(yield* Effect.promise(healthy)).toBe(true)
      const login = yield* Effect.promise(() =>
        fetch(`${url}/api/auth/login`, {
          method: "POST",
          headers: { "content-type": "application/json" },
          body: JSON.stringify({ email: "owner@example.com", password: "embedded password" })
        }).then(async (r) => ({ status: r.status, body: (await r.json()) as any }))
      )
      expect(login.status).toBe(200)
      expect(login.body.user.id).toBe(created.stdout.trim())
      const monitors = yield* Effect.promise(() =>
        fetch(`${url}/api/monitors`, { headers: { authorization: `Bearer ${token}` } }).then((r) => r.status)
      )
      expect(monitors).toBe(200)

      // A second service on the same data directory is refused rather than taking the database away.
      const second = yield* jobmon(["serve"], { ...env, PORT: String(yield* freePort) })
      expect(second.code).not.toBe(0)
      expect(second.stderr + second.stdout).toMatch(/belongs to another running jobmon process/)
      expect(isAlive(postgres)).toBe(true)
      expect(yield* Effect.promise(healthy)).toBe(true)

      // The service still stops its database when it stops.
      expect(yield* stopService(service)).toBe(0)
      for (let i = 0; i < 300 && isAlive(postgres); i++) yield* Effect.sleep("100 millis")
      expect(isAlive(postgres)).toBe(false)
      expect(fs.existsSync(path.join(dataDir, "pg17.owner"))).toBe(false)
    }), 300_000)
})
