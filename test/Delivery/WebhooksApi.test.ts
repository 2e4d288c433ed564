import { expect, layer } from "@effect/vitest"
import { SqlClient } from "@effect/sql"
import { Effect } from "effect"
import { lookup } from "node:dns/promises"
import { hostname } from "node:os"
import { isBlockedAddress } from "../../src/Delivery/Ssrf.js"
import { call, createOrganization, TestServer } from "../support/fixture.js"

// A public address literal: no DNS needed, and no event here is ever delivered to it.
const PUBLIC = "http://93.184.216.34/hook"

layer(TestServer(), { excludeTestServices: true, timeout: 120_000 })("outbound webhooks API", (it) => {
  it.effect("create answers 201 with a generated 64-hex secret once; list, get and PATCH never show it", () =>
    Effect.gen(function*() {
      const created = yield* call("POST", "/api/webhooks", {
        body: { url: PUBLIC, events: ["incident.opened", "incident.resolved"], filters: { severity: ["HIGH"] } }
      })
      expect(created.status).toBe(201)
      expect(created.body).toMatchObject({
        url: PUBLIC,
        events: ["incident.opened", "incident.resolved"],
        filters: { monitorIds: [], severity: ["HIGH"] }
      })
      expect(created.body.secret).toMatch(/^[0-9a-f]{64}$/)
      expect(typeof created.body.createdAt).toBe("string")
      const id = created.body.id as string

      const list = yield* call("GET", "/api/webhooks")
      expect(list.status).toBe(200)
      const mine = list.body.webhooks.find((w: any) => w.id === id)
      expect(mine).toEqual({
        id,
        url: PUBLIC,
        events: ["incident.opened", "incident.resolved"],
        filters: { monitorIds: [], severity: ["HIGH"] },
        createdAt: created.body.createdAt
      })
      expect(list.text).not.toContain(created.body.secret)

      const patched = yield* call("PATCH", `/api/webhooks/${id}`, { body: { events: ["monitor.created"] } })
      expect(patched.status).toBe(200)
      expect(patched.body).toMatchObject({ id, events: ["monitor.created"], filters: { severity: ["HIGH"] } })
      expect(patched.body.secret).toBeUndefined()

      expect((yield* call("GET", `/api/webhooks/${id}`)).body.events).toEqual(["monitor.created"])
      expect((yield* call("DELETE", `/api/webhooks/${id}`)).status).toBe(204)
      expect((yield* call("GET", `/api/webhooks/${id}`)).status).toBe(404)
      expect((yield* call("DELETE", `/api/webhooks/${id}`)).status).toBe(404)
      expect((yield* call("GET", "/api/webhooks")).body.webhooks.some((w: any) => w.id === id)).toBe(false)
    }))

  it.effect("a given secret is kept (and echoed once)", () =>
    Effect.gen(function*() {
      const secret = "s3cr3t-s3cr3t-s3cr3t"
      const created = yield* call("POST", "/api/webhooks", { body: { url: PUBLIC, events: ["incident.opened"], secret } })
      expect(created.status).toBe(201)
      expect(created.body.secret).toBe(secret)
      const sql = yield* SqlClient.SqlClient
      const [row] = yield* sql<{ secret: string }>`select secret from webhooks where id = ${created.body.id}`
      expect(row!.secret).toBe(secret)
    }))

  it.effect("validation names the field", () =>
    Effect.gen(function*() {
      const cases: Array<[unknown, string]> = [
        [{ url: "ftp://example.com/x", events: ["incident.opened"] }, "url"],
        [{ url: "not a url", events: ["incident.opened"] }, "url"],
        [{ url: PUBLIC, events: [] }, "events"],
        [{ url: PUBLIC, events: ["incident.exploded"] }, "events.0"],
        [{ url: PUBLIC, events: ["incident.opened"], filters: { monitorIds: ["nope"] } }, "filters.monitorIds.0"],
        [{ url: PUBLIC, events: ["incident.opened"], filters: { severity: ["URGENT"] } }, "filters.severity.0"],
        [{ url: PUBLIC, events: ["incident.opened"], secret: "short" }, "secret"],
        [{ events: ["incident.opened"] }, "url"]
      ]
      for (const [body, path] of cases) {
        const r = yield* call("POST", "/api/webhooks", { body })
        expect(r.status, JSON.stringify(body)).toBe(400)
        expect(r.body._tag).toBe("ValidationError")
        expect(r.body.path, JSON.stringify(body)).toBe(path)
      }
      // A choice of values names every one that is accepted, not only the first.
      const kind = yield* call("POST", "/api/webhooks", { body: { url: PUBLIC, events: ["incident.exploded"] } })
      expect(kind.body.message).toMatch(/^events\.0: Expected one of "incident\.opened", .*"ping\.received".* or "webhook\.test", actual "incident\.exploded"$/)
      const severity = yield* call("POST", "/api/webhooks", { body: { url: PUBLIC, events: ["incident.opened"], filters: { severity: ["URGENT"] } } })
      expect(severity.body.message).toContain('"LOW"')
      expect(severity.body.message).toContain('"HIGH"')
      expect(severity.body.message).toContain('actual "URGENT"')
      // maintenance.* and webhook.test are selectable
      const ok = yield* call("POST", "/api/webhooks", { body: { url: PUBLIC, events: ["maintenance.started", "webhook.test", "ping.received"] } })
      expect(ok.status).toBe(201)
      expect((yield* call("PATCH", `/api/webhooks/${ok.body.id}`, { body: { url: "http://10.1.2.3/x" } })).status).toBe(400)
      expect((yield* call("DELETE", `/api/webhooks/${ok.body.id}`)).status).toBe(204)
    }))

  it.effect("SSRF: loopback, private, link-local, metadata and localhost urls are refused (400) when private targets are off", () =>
    Effect.gen(function*() {
      for (
        const url of [
          "http://127.0.0.1:9000/hook",
          "http://10.0.0.1/hook",
          "http://169.254.169.254/latest/meta-data",
          "http://localhost:8080/hook",
          "http://172.16.5.4/x",
          "http://192.168.1.1/x",
          "http://0.0.0.0/x",
          "http://[::1]/x",
          "http://[fe80::1]/x",
          "http://[fd00::1]/x",
          "http://[::ffff:127.0.0.1]/x"
        ]
      ) {
        const r = yield* call("POST", "/api/webhooks", { body: { url, events: ["incident.opened"] } })
        expect(r.status, url).toBe(400)
        expect(r.body.path).toBe("url")
        expect(r.body.message).toContain("ALLOW_PRIVATE_TARGETS")
      }
      // chat webhook urls too
      for (const url of ["http://127.0.0.1:9000/chat", "http://10.0.0.1/chat", "http://169.254.169.254/x", "http://localhost/chat"]) {
        const r = yield* call("POST", "/api/alerts/chat/webhooks", { body: { url, name: "ops" } })
        expect(r.status, url).toBe(400)
        expect(r.body.path).toBe("url")
      }
    }))

  it.effect("SSRF: a host name that resolves to a loopback or private address is refused (400), by its DNS answer", () =>
    Effect.gen(function*() {
      // this machine's own name: not "localhost", so only its DNS answer can give it away
      const name = hostname()
      const addresses = yield* Effect.promise(() => lookup(name, { all: true }))
      expect(addresses.some((a) => isBlockedAddress(a.address)), `${name} → ${JSON.stringify(addresses)}`).toBe(true)
      for (const path of ["/api/webhooks", "/api/alerts/chat/webhooks"]) {
        const r = yield* call("POST", path, { body: { url: `http://${name}:9000/hook`, events: ["incident.opened"], name: "own" } })
        expect(r.status, path).toBe(400)
        expect(r.body.path).toBe("url")
        expect(r.body.message).toContain(`url host ${name} resolves to`)
      }
    }))

  it.effect("webhooks belong to their organization; unknown ids are 404", () =>
    Effect.gen(function*() {
      const other = yield* createOrganization("hooks-other")
      const created = yield* call("POST", "/api/webhooks", { body: { url: PUBLIC, events: ["incident.opened"] } })
      const id = created.body.id as string
      expect((yield* call("GET", `/api/webhooks/${id}`, { token: other.token })).status).toBe(404)
      expect((yield* call("PATCH", `/api/webhooks/${id}`, { token: other.token, body: { events: ["incident.resolved"] } })).status).toBe(404)
      expect((yield* call("GET", `/api/webhooks/${id}/deliveries`, { token: other.token })).status).toBe(404)
      expect((yield* call("GET", "/api/webhooks", { token: other.token })).body.webhooks).toEqual([])
      expect((yield* call("GET", "/api/webhooks/not-a-uuid")).status).toBe(404)
      expect((yield* call("POST", "/api/webhooks/00000000-0000-4000-8000-000000000000/test")).status).toBe(404)
    }))
})
