import { describe, expect, it, layer } from "@effect/vitest"
import { Effect, Layer } from "effect"
import { spawn } from "node:child_process"
import * as path from "node:path"
import { AppOn, call, createUser, makeTestDatabase, newAdminToken, signIn, TestApp, TestServer, validMonitor } from "../support/fixture.js"

const root = path.resolve(import.meta.dirname, "../..")
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/

/** `jobmon <args>` as a real process against the test database, to completion. */
const jobmonOn = (url: string, args: ReadonlyArray<string>) =>
  Effect.suspend(() =>
    Effect.async<{ code: number | null; stdout: string; stderr: string }>((resume) => {
      const env: Record<string, string | undefined> = { ...process.env, LOG_LEVEL: "warn", DATABASE_URL: url }
      delete env.JOBMON_PASSWORD
      const child = spawn(process.execPath, [path.join(root, "bin/jobmon.js"), ...args], {
        cwd: root,
        env,
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
    }))

const jobmon = (args: ReadonlyArray<string>) => Effect.flatMap(TestApp, (app) => jobmonOn(app.databaseUrl, args))

const ok = (args: ReadonlyArray<string>) =>
  Effect.gen(function*() {
    const result = yield* jobmon(args)
    if (result.code !== 0) return yield* Effect.dieMessage(`jobmon ${args.join(" ")}: ${result.code} ${result.stderr}`)
    return result.stdout.trim()
  })

const names = (body: any) => (body.items ?? body.monitors).map((m: any) => m.name).sort()

layer(TestServer(), { excludeTestServices: true, timeout: 300_000 })("organizations", (it) => {
  it.effect("jobmon org create/list/add-member, then a token of the new organization sees only its monitors", () =>
    Effect.gen(function*() {
      const staging = yield* ok(["org", "create", "--slug", "staging", "--name", "Staging"])
      expect(staging).toMatch(UUID)

      // Refusals: exit code 2, a message that says what to fix, nothing printed on stdout.
      const refusals: Array<[ReadonlyArray<string>, RegExp]> = [
        [["org", "create", "--slug", "staging", "--name", "Again"], /slug 'staging' already exists/],
        [["org", "create", "--slug", "Bad Slug", "--name", "X"], /not valid: use 1 to 63 lower-case letters/],
        [["org", "create", "--slug", "x"], /--name is required/],
        [["org", "add-member", "--org", "staging", "--email", "nobody@example.com"], /no user with the email nobody@example.com/],
        [["org", "add-member", "--org", "nope", "--email", "nobody@example.com"], /no organization with slug 'nope'/],
        [["org", "rename"], /usage: jobmon org create/]
      ]
      for (const [args, message] of refusals) {
        const result = yield* jobmon(args)
        expect(result.code).toBe(2)
        expect(result.stderr).toMatch(message)
        expect(result.stdout).toBe("")
      }

      // `token create --org staging` works now, and its token lives in staging only.
      const stagingToken = yield* ok(["token", "create", "--org", "staging", "--scope", "admin", "--name", "staging ci"])
      const made = yield* call("POST", "/api/monitors", { token: stagingToken, body: validMonitor({ name: "staging backup" }) })
      expect(made.status).toBe(201)
      const prod = yield* call("POST", "/api/monitors", { body: validMonitor({ name: "production backup" }) })
      expect(prod.status).toBe(201)

      expect(names((yield* call("GET", "/api/monitors", { token: stagingToken })).body)).toEqual(["staging backup"])
      expect(names((yield* call("GET", "/api/monitors")).body)).toEqual(["production backup"])
      // Isolation both ways: another organization's monitor is unknown, not forbidden.
      expect((yield* call("GET", `/api/monitors/${prod.body.id}`, { token: stagingToken })).status).toBe(404)
      expect((yield* call("GET", `/api/monitors/${made.body.id}`)).status).toBe(404)
      expect((yield* call("DELETE", `/api/monitors/${prod.body.id}`, { token: stagingToken })).status).toBe(404)
      expect((yield* call("GET", `/api/monitors/${prod.body.id}`)).status).toBe(200)

      const list = yield* ok(["org", "list"])
      const lines = list.split("\n")
      expect(lines[0]).toMatch(/^SLUG\s+MEMBERS\s+MONITORS\s+NAME$/)
      expect(lines.slice(1).map((l) => l.split(/\s+/).slice(0, 3))).toEqual([["default", "1", "1"], ["staging", "0", "1"]])
      expect(lines[2]).toMatch(/Staging$/)
    }), 240_000)

  it.effect("a user in two organizations switches between them and each page shows only that organization", () =>
    Effect.gen(function*() {
      const qa = yield* ok(["org", "create", "--slug", "qa", "--name", "QA team"])
      yield* createUser({ email: "both@example.com", password: "two organizations", name: "Both" })
      const userId = yield* ok(["org", "add-member", "--org", "qa", "--email", "BOTH@example.com"])
      const again = yield* jobmon(["org", "add-member", "--org", "qa", "--email", "both@example.com"])
      expect(again.code).toBe(2)
      expect(again.stderr).toMatch(/already a member/)

      const qaToken = yield* ok(["token", "create", "--org", "qa", "--scope", "write", "--name", "qa"])
      expect((yield* call("POST", "/api/monitors", { token: qaToken, body: validMonitor({ name: "qa smoke" }) })).status).toBe(201)
      const home = yield* call("POST", "/api/monitors", { body: validMonitor({ name: "home job" }) })

      const session = yield* signIn("both@example.com", "two organizations")
      expect(session.user.id).toBe(userId)
      const asUser = (extra: Record<string, string> = {}) => ({ token: null, headers: { cookie: session.cookie, ...extra } })
      const withCsrf = asUser({ "x-csrf-token": session.csrfToken })

      const orgs = yield* call("GET", "/api/auth/orgs", asUser())
      expect(orgs.status).toBe(200)
      const defaultId = session.user.orgId
      expect(orgs.body).toEqual({
        current: defaultId,
        orgs: [
          { id: defaultId, slug: "default", name: "Default organization", role: "admin" },
          { id: qa, slug: "qa", name: "QA team", role: "member" }
        ]
      })
      expect(names((yield* call("GET", "/api/monitors", asUser())).body)).toContain("home job")
      expect(names((yield* call("GET", "/api/monitors", asUser())).body)).not.toContain("qa smoke")

      // A change needs the CSRF token; an organization the user is not in is unknown.
      expect((yield* call("POST", "/api/auth/org", { ...asUser(), body: { orgId: qa } })).status).toBe(403)
      const notMine = yield* call("POST", "/api/auth/org", { ...withCsrf, body: { orgId: "00000000-0000-4000-8000-000000000000" } })
      expect(notMine.status).toBe(404)
      expect(notMine.body.message).toMatch(/not a member/)
      expect((yield* call("POST", "/api/auth/org", { ...withCsrf, body: { orgId: "not an id" } })).status).toBe(404)

      const switched = yield* call("POST", "/api/auth/org", { ...withCsrf, body: { orgId: qa } })
      expect(switched.status).toBe(200)
      expect(switched.body.user).toMatchObject({ id: userId, orgId: qa })

      // Every request with the same cookie now sees QA only, with the role the user has there.
      expect(names((yield* call("GET", "/api/monitors", asUser())).body)).toEqual(["qa smoke"])
      expect((yield* call("GET", `/api/monitors/${home.body.id}`, asUser())).status).toBe(404)
      expect((yield* call("GET", "/api/auth/me", asUser())).body.user.orgId).toBe(qa)
      expect((yield* call("GET", "/api/auth/orgs", asUser())).body.current).toBe(qa)
      expect((yield* call("GET", "/api/tokens", asUser())).status).toBe(403)
      const users = (yield* call("GET", "/api/users", asUser())).body.users.map((u: any) => u.email)
      expect(users).toEqual(["both@example.com"])

      // And back.
      expect((yield* call("POST", "/api/auth/org", { ...withCsrf, body: { orgId: defaultId } })).status).toBe(200)
      expect(names((yield* call("GET", "/api/monitors", asUser())).body)).not.toContain("qa smoke")
      expect((yield* call("GET", "/api/tokens", asUser())).status).toBe(200)

      // Another sign-in opens the oldest membership again; the switch belongs to one session.
      const second = yield* signIn("both@example.com", "two organizations")
      expect(second.user.orgId).toBe(defaultId)
    }), 240_000)
})

describe("an organization made before the first start", () => {
  it.scoped("does not stand for the default one: the first start still creates 'default' and its admin token", () =>
    Effect.gen(function*() {
      const db = yield* makeTestDatabase()
      const made = yield* jobmonOn(db.url, ["org", "create", "--slug", "first", "--name", "First"])
      expect(made.stderr).toBe("")
      expect(made.code).toBe(0)
      const token = newAdminToken()
      const app = yield* Layer.build(AppOn(db.url, token))
      const monitors = yield* Effect.provide(call("GET", "/api/monitors"), app)
      expect(monitors.status).toBe(200)
      const list = yield* jobmonOn(db.url, ["org", "list"])
      expect(list.stdout.split("\n").slice(1, 3).map((l) => l.split(/\s+/)[0])).toEqual(["first", "default"])
    }), 240_000)
})
