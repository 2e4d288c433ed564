import { expect, it as plain, layer } from "@effect/vitest"
import { ConfigProvider, Effect } from "effect"
import { appConfig } from "../../src/Config.js"
import { call, createMonitor, createOrganization, TestServer, validMonitor } from "../support/fixture.js"

/**
 * Per-organization quotas (MAX_MONITORS_PER_ORG, MAX_MAINTENANCE_WINDOWS_PER_ORG; README,
 * "Configuration"): one more than allowed is a 409 Conflict that says so, deleted ones do not count,
 * and each organization has its own.
 */

const windowBody = (monitorId: string, name = "deploy") => ({
  name,
  monitorIds: [monitorId],
  start: "2031-01-01T00:00:00Z",
  end: "2031-01-01T01:00:00Z"
})

plain.effect("by default an organization may have 10,000 monitors and 1,000 maintenance windows", () =>
  Effect.gen(function*() {
    const config = yield* appConfig.pipe(Effect.withConfigProvider(ConfigProvider.fromMap(new Map())))
    expect(config.maxMonitorsPerOrg).toBe(10_000)
    expect(config.maxMaintenanceWindowsPerOrg).toBe(1_000)
    expect(config.statementTimeoutMs).toBe(5_000)
  }))

layer(TestServer({ maxMonitorsPerOrg: 3, maxMaintenanceWindowsPerOrg: 2 }), { excludeTestServices: true, timeout: 120_000 })(
  "quotas",
  (it) => {
    it.effect("monitors: over the quota a 409 says so; deleting one makes room; another organization has its own", () =>
      Effect.gen(function*() {
        const first = yield* createMonitor({ name: "one" })
        yield* createMonitor({ name: "two" })
        yield* createMonitor({ name: "three" })
        const over = yield* call("POST", "/api/monitors", { body: validMonitor({ name: "four" }) })
        expect(over.status).toBe(409)
        expect(over.body._tag).toBe("Conflict")
        expect(over.body.message).toMatch(/already has 3 monitors/)
        expect(over.body.message).toMatch(/MAX_MONITORS_PER_ORG/)
        expect((yield* call("GET", "/api/monitors")).body.total).toBe(3)

        const other = yield* createOrganization("other-org")
        const theirs = yield* call("POST", "/api/monitors", { token: other.token, body: validMonitor({ name: "theirs" }) })
        expect(theirs.status).toBe(201)

        expect((yield* call("DELETE", `/api/monitors/${first.id}`)).status).toBe(204)
        expect((yield* call("POST", "/api/monitors", { body: validMonitor({ name: "four" }) })).status).toBe(201)
        expect((yield* call("POST", "/api/monitors", { body: validMonitor({ name: "five" }) })).status).toBe(409)
      }))

    it.effect("monitors: concurrent creations never go past the quota", () =>
      Effect.gen(function*() {
        const org = yield* createOrganization("racing")
        const statuses = yield* Effect.all(
          Array.from({ length: 8 }, (_, i) => call("POST", "/api/monitors", { token: org.token, body: validMonitor({ name: `m${i}` }) })),
          { concurrency: "unbounded" }
        ).pipe(Effect.map((responses) => responses.map((r) => r.status)))
        expect(statuses.filter((s) => s === 201).length).toBe(3)
        expect(statuses.filter((s) => s === 409).length).toBe(5)
        expect((yield* call("GET", "/api/monitors", { token: org.token })).body.total).toBe(3)
      }))

    it.effect("maintenance windows: over the quota a 409 says so, nothing is stored; deleting one makes room", () =>
      Effect.gen(function*() {
        const org = yield* createOrganization("maintainers")
        const monitor = yield* call("POST", "/api/monitors", { token: org.token, body: validMonitor() })
        const first = yield* call("POST", "/api/maintenance-windows", { token: org.token, body: windowBody(monitor.body.id, "a") })
        expect(first.status).toBe(201)
        expect((yield* call("POST", "/api/maintenance-windows", { token: org.token, body: windowBody(monitor.body.id, "b") })).status).toBe(201)
        const over = yield* call("POST", "/api/maintenance-windows", { token: org.token, body: windowBody(monitor.body.id, "c") })
        expect(over.status).toBe(409)
        expect(over.body._tag).toBe("Conflict")
        expect(over.body.message).toMatch(/already has 2 maintenance windows/)
        expect(over.body.message).toMatch(/MAX_MAINTENANCE_WINDOWS_PER_ORG/)
        const listed = yield* call("GET", "/api/maintenance-windows", { token: org.token })
        expect(listed.body.windows.map((w: any) => w.name)).toEqual(["a", "b"])

        expect((yield* call("DELETE", `/api/maintenance-windows/${first.body.id}`, { token: org.token })).status).toBe(204)
        expect((yield* call("POST", "/api/maintenance-windows", { token: org.token, body: windowBody(monitor.body.id, "c") })).status).toBe(201)
      }))
  }
)
