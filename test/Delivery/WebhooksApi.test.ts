import { expect, layer } from "@effect/vitest"
import { SqlClient } from "@effect/sql"
import { Effect } from "effect"
import { lookup } from "node:dns/promises"
import { hostname } from "node:os"
import { ORGANIZATION_QUOTAS } from "../../src/Delivery/Quotas.js"
import { isBlockedAddress } from "../../src/Delivery/Ssrf.js"
import { Webhooks } from "../../src/Delivery/Webhooks.js"
import { call, createMonitor, createOrganization, createToken, sendPing, TestServer } from "../support/fixture.js"
import { receiver } from "./receiver.js"

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
          "http://[::ffff:127.0.0.1]/x",
          // what the guard let through before: IPv4-compatible, NAT64 and 6to4 carrying private
          // addresses, site-local, multicast, benchmarking, class E, documentation
          "http://[::127.0.0.1]/x",
          "http://[64:ff9b::10.0.0.1]/x",
          "http://[64:ff9b::169.254.169.254]/latest/meta-data",
          "http://[2002:7f00:1::]/x",
          "http://[2002:c0a8:101::1]/x",
          "http://[fec0::1]/x",
          "http://[ff02::1]/x",
          "http://224.0.0.1/x",
          "http://198.18.0.1/x",
          "http://240.0.0.1/x",
          "http://255.255.255.255/x",
          "http://192.0.2.1/x",
          "http://[2001:db8::1]/x",
          "http://2130706433/x",
          "http://0177.0.0.1/x"
        ]
      ) {
        const r = yield* call("POST", "/api/webhooks", { body: { url, events: ["incident.opened"] } })
        expect(r.status, url).toBe(400)
        expect(r.body.path).toBe("url")
        expect(r.body.message).toContain("ALLOW_PRIVATE_TARGETS")
      }
      // chat webhook urls too
      for (
        const url of [
          "http://127.0.0.1:9000/chat",
          "http://10.0.0.1/chat",
          "http://169.254.169.254/x",
          "http://localhost/chat",
          "http://[::127.0.0.1]/chat",
          "http://[64:ff9b::a00:1]/chat",
          "http://198.18.0.1/chat"
        ]
      ) {
        const r = yield* call("POST", "/api/alerts/chat/webhooks", { body: { url, name: "ops" } })
        expect(r.status, url).toBe(400)
        expect(r.body.path).toBe("url")
      }
      // PATCH checks a new url the same way
      const hook = yield* call("POST", "/api/webhooks", { body: { url: PUBLIC, events: ["incident.opened"] } })
      const patched = yield* call("PATCH", `/api/webhooks/${hook.body.id}`, { body: { url: "http://[2002:a9fe:a9fe::]/x" } })
      expect(patched.status).toBe(400)
      expect(patched.body.path).toBe("url")
      // global unicast, also when carried in NAT64 or 6to4, is accepted
      for (const url of ["http://[2606:4700:4700::1111]/hook", "http://[64:ff9b::93.184.216.34]/hook", "http://[2002:5db8:d822::1]/hook"]) {
        const r = yield* call("POST", "/api/webhooks", { body: { url, events: ["incident.opened"] } })
        expect(r.status, url).toBe(201)
        yield* call("DELETE", `/api/webhooks/${r.body.id}`)
      }
      yield* call("DELETE", `/api/webhooks/${hook.body.id}`)
    }))

  it.effect("SSRF: a host name that resolves to a loopback or private address is refused (400), by its DNS answer, which the message does not reveal", () =>
    Effect.gen(function*() {
      // this machine's own name: not "localhost", so only its DNS answer can give it away
      const name = hostname()
      const addresses = yield* Effect.promise(() => lookup(name, { all: true }))
      expect(addresses.some((a) => isBlockedAddress(a.address)), `${name} → ${JSON.stringify(addresses)}`).toBe(true)
      for (const path of ["/api/webhooks", "/api/alerts/chat/webhooks"]) {
        const r = yield* call("POST", path, { body: { url: `http://${name}:9000/hook`, events: ["incident.opened"], name: "own" } })
        expect(r.status, path).toBe(400)
        expect(r.body.path).toBe("url")
        expect(r.body.message).toContain(`url host ${name} must resolve, and only to public addresses`)
        for (const a of addresses) expect(r.body.message).not.toContain(a.address)
        // a name that does not resolve gets the same answer: the guard does not map internal DNS
        const nowhere = yield* call("POST", path, { body: { url: "http://no-such-host.invalid/hook", events: ["incident.opened"], name: "x" } })
        expect(nowhere.status).toBe(400)
        expect(nowhere.body.message).toContain("url host no-such-host.invalid must resolve, and only to public addresses")
      }
    }))

  it.effect("SSRF at delivery time: a url whose name now resolves to a private address (or that is not global unicast) is refused when sending, without saying what it resolved to", () =>
    Effect.scoped(Effect.gen(function*() {
      const target = yield* receiver([200])
      const port = new URL(target.url).port
      const sql = yield* SqlClient.SqlClient
      // saved while it resolved to a public address (DNS rebinding), or saved by an older version
      const created = yield* call("POST", "/api/webhooks", { body: { url: PUBLIC, events: ["incident.opened"] } })
      expect(created.status).toBe(201)
      const id = created.body.id as string
      const localAddresses = (yield* Effect.promise(() => lookup(hostname(), { all: true }))).map((a) => a.address)
      for (const url of [`http://localhost:${port}/hook`, `http://${hostname()}:${port}/hook`, `http://[::127.0.0.1]:${port}/hook`, `http://[64:ff9b::7f00:1]:${port}/hook`]) {
        yield* sql`update webhooks set url = ${url} where id = ${id}`
        const sent = yield* call("POST", `/api/webhooks/${id}/test`)
        expect(sent.status, url).toBe(200)
        // refused is final: not retried
        expect(sent.body, url).toMatchObject({ status: "failed", attempts: 1, lastStatusCode: null, nextAttemptAt: null })
        expect(sent.body.lastError, url).toMatch(/^refused: /)
        for (const address of ["127.0.0.1", "::1", ...localAddresses]) expect(sent.body.lastError, url).not.toContain(address)
      }
      expect(target.received).toHaveLength(0)
      yield* call("DELETE", `/api/webhooks/${id}`)
    })))

  it.effect("outbound webhook urls that carry credentials are masked in GET, list and PATCH answers, for every scope; the create answer shows it once", () =>
    Effect.gen(function*() {
      const url = "http://93.184.216.34/hooks/3f2a9c1e7b2c4d5e8f90a1b2c3d4e5f6?token=tok-SECRET-1&api_key=key-SECRET-2&page=2&signature=sig-SECRET-3"
      const masked = "http://93.184.216.34/hooks/***?token=***&api_key=***&page=2&signature=***"
      const created = yield* call("POST", "/api/webhooks", { body: { url, events: ["incident.opened"] } })
      expect(created.status).toBe(201)
      expect(created.body.url).toBe(url)
      const id = created.body.id as string
      const read = yield* createToken("read")
      for (const token of [read.token, undefined]) {
        const list = yield* call("GET", "/api/webhooks", token === undefined ? {} : { token })
        expect(list.body.webhooks.find((w: any) => w.id === id).url).toBe(masked)
        const got = yield* call("GET", `/api/webhooks/${id}`, token === undefined ? {} : { token })
        expect(got.body.url).toBe(masked)
        for (const text of [list.text, got.text]) {
          for (const secret of ["3f2a9c1e7b2c4d5e8f90a1b2c3d4e5f6", "tok-SECRET-1", "key-SECRET-2", "sig-SECRET-3"]) expect(text).not.toContain(secret)
        }
      }
      const patched = yield* call("PATCH", `/api/webhooks/${id}`, { body: { events: ["incident.resolved"] } })
      expect(patched.body.url).toBe(masked)
      // sending back the masked url keeps the stored one
      const echoed = yield* call("PATCH", `/api/webhooks/${id}`, { body: { url: masked } })
      expect(echoed.status).toBe(200)
      expect(echoed.body.url).toBe(masked)
      const sql = yield* SqlClient.SqlClient
      expect((yield* sql<{ url: string }>`select url from webhooks where id = ${id}`)[0]!.url).toBe(url)
      // a url without credentials is shown as it is
      expect((yield* call("PATCH", `/api/webhooks/${id}`, { body: { url: PUBLIC } })).body.url).toBe(PUBLIC)
      yield* call("DELETE", `/api/webhooks/${id}`)
    }))

  it.effect("a chat webhook's url is a credential: shown whole only in the create answer, then masked (Discord: the webhook id shows, the token does not)", () =>
    Effect.gen(function*() {
      const token = "kX9vQ2-SECRET_TOKEN-7Lm"
      const url = `http://93.184.216.34/api/webhooks/123456789012345678/${token}?thread_id=42`
      const masked = "http://93.184.216.34/api/webhooks/123456789012345678/***?thread_id=42"
      const created = yield* call("POST", "/api/alerts/chat/webhooks", { body: { url, name: "masked-chat" } })
      expect(created.status).toBe(201)
      expect(created.body.url).toBe(url)
      const id = created.body.id as string
      const read = yield* createToken("read")
      for (const t of [read.token, undefined]) {
        const list = yield* call("GET", "/api/alerts/chat/webhooks", t === undefined ? {} : { token: t })
        expect(list.body.webhooks.find((w: any) => w.id === id).url).toBe(masked)
        expect(list.text).not.toContain(token)
        const got = yield* call("GET", `/api/alerts/chat/webhooks/${id}`, t === undefined ? {} : { token: t })
        expect(got.body.url).toBe(masked)
        expect(got.text).not.toContain(token)
      }
      const patched = yield* call("PATCH", `/api/alerts/chat/webhooks/${id}`, { body: { mention: "<@&1>" } })
      expect(patched.body.url).toBe(masked)
      expect(patched.text).not.toContain(token)
      // other chat services: everything after the first path segment
      const slack = yield* call("POST", "/api/alerts/chat/webhooks", { body: { url: "http://93.184.216.34/services/T0001/B0002/XXXXSECRET", name: "slackish" } })
      expect(slack.body.url).toBe("http://93.184.216.34/services/T0001/B0002/XXXXSECRET")
      expect((yield* call("GET", `/api/alerts/chat/webhooks/${slack.body.id}`)).body.url).toBe("http://93.184.216.34/services/***")
      yield* call("DELETE", `/api/alerts/chat/webhooks/${id}`)
      yield* call("DELETE", `/api/alerts/chat/webhooks/${slack.body.id}`)
    }))

  it.effect("a NUL character in any stored text field is a 400 naming the field (not a 500)", () =>
    Effect.gen(function*() {
      const hook = yield* call("POST", "/api/webhooks", { body: { url: PUBLIC, events: ["incident.opened"] } })
      const chat = yield* call("POST", "/api/alerts/chat/webhooks", { body: { url: PUBLIC, name: "nul-chat" } })
      const cases: Array<[string, string, unknown, string]> = [
        ["POST", "/api/webhooks", { url: `${PUBLIC}\u0000x`, events: ["incident.opened"] }, "url"],
        ["POST", "/api/webhooks", { url: `\u0000${PUBLIC}`, events: ["incident.opened"] }, "url"],
        ["POST", "/api/webhooks", { url: PUBLIC, events: ["incident.opened"], secret: "0123456789abcdef\u0000" }, "secret"],
        ["PATCH", `/api/webhooks/${hook.body.id}`, { url: `${PUBLIC}?a=\u0000` }, "url"],
        ["POST", "/api/alerts/chat/webhooks", { url: `${PUBLIC}/\u0000`, name: "n" }, "url"],
        ["POST", "/api/alerts/chat/webhooks", { url: PUBLIC, name: "ops\u0000" }, "name"],
        ["POST", "/api/alerts/chat/webhooks", { url: PUBLIC, name: "ops", mention: "<@&1>\u0000" }, "mention"],
        ["PATCH", `/api/alerts/chat/webhooks/${chat.body.id}`, { url: `${PUBLIC}\u0000` }, "url"],
        ["PATCH", `/api/alerts/chat/webhooks/${chat.body.id}`, { name: "a\u0000b" }, "name"],
        ["PATCH", `/api/alerts/chat/webhooks/${chat.body.id}`, { mention: "\u0000" }, "mention"]
      ]
      for (const [method, path, body, field] of cases) {
        const r = yield* call(method as "POST" | "PATCH", path, { body })
        expect(r.status, `${method} ${path} ${JSON.stringify(body)}`).toBe(400)
        expect(r.body).toMatchObject({ _tag: "ValidationError", path: field })
        expect(r.body.message).toContain(`${field} must not contain a NUL character`)
      }
      yield* call("DELETE", `/api/webhooks/${hook.body.id}`)
      yield* call("DELETE", `/api/alerts/chat/webhooks/${chat.body.id}`)
    }))

  it.effect("filters.monitorIds must name monitors of the organization: another organization's is 'no such monitor' (create and PATCH)", () =>
    Effect.gen(function*() {
      const other = yield* createOrganization("filters-other")
      const theirs = yield* createMonitor({ name: "theirs" }) // the default organization's
      const mine = yield* call("POST", "/api/monitors", { token: other.token, body: { name: "mine", schedule: { type: "cron", expression: "0 3 * * *", timezone: "UTC" } } })
      expect(mine.status, mine.text).toBe(201)
      const missing = "00000000-0000-4000-8000-00000000beef"

      const refused = yield* call("POST", "/api/webhooks", {
        token: other.token,
        body: { url: PUBLIC, events: ["ping.received"], filters: { monitorIds: [mine.body.id, theirs.id, missing] } }
      })
      expect(refused.status).toBe(400)
      expect(refused.body).toMatchObject({ _tag: "ValidationError", path: "filters.monitorIds.1" })
      expect(refused.body.message).toBe(`filters.monitorIds: no such monitor: ${theirs.id}, ${missing}.`)
      const ok = yield* call("POST", "/api/webhooks", {
        token: other.token,
        body: { url: PUBLIC, events: ["ping.received"], filters: { monitorIds: [mine.body.id] } }
      })
      expect(ok.status, ok.text).toBe(201)
      const patched = yield* call("PATCH", `/api/webhooks/${ok.body.id}`, { token: other.token, body: { filters: { monitorIds: [theirs.id] } } })
      expect(patched.status).toBe(400)
      expect(patched.body).toMatchObject({ path: "filters.monitorIds.0", message: `filters.monitorIds: no such monitor: ${theirs.id}.` })
      expect((yield* call("GET", `/api/webhooks/${ok.body.id}`, { token: other.token })).body.filters.monitorIds).toEqual([mine.body.id])

      // a deleted monitor is no monitor either
      const gone = yield* createMonitor({ name: "gone" })
      expect((yield* call("DELETE", `/api/monitors/${gone.id}`)).status).toBe(204)
      const deleted = yield* call("POST", "/api/webhooks", { body: { url: PUBLIC, events: ["incident.opened"], filters: { monitorIds: [gone.id] } } })
      expect(deleted.status).toBe(400)
      expect(deleted.body.message).toContain("no such monitor")

      // a filter saved before the check (naming the other organization's monitor) turns on no ping
      // events for that organization: its pings are not recorded
      const sql = yield* SqlClient.SqlClient
      yield* sql`update webhooks set filter_monitor_ids = ${[mine.body.id, theirs.id]}::uuid[] where id = ${ok.body.id}`
      yield* Effect.flatMap(Webhooks, (w) => w.flush)
      expect((yield* sendPing(theirs.id, "success")).status).toBe(200)
      const events = yield* call("GET", "/api/events?type=ping.received")
      expect(events.status).toBe(200)
      expect(events.body.events.filter((e: any) => e.data.ping.monitorId === theirs.id)).toEqual([])
      yield* call("DELETE", `/api/webhooks/${ok.body.id}`, { token: other.token })
    }))

  it.effect(`quotas: at most ${ORGANIZATION_QUOTAS.webhooks} outbound and ${ORGANIZATION_QUOTAS.chatWebhooks} chat webhooks per organization (409 over it); deleted ones do not count`, () =>
    Effect.gen(function*() {
      const org = yield* createOrganization("quota-org")
      const other = yield* createOrganization("quota-other")
      for (const [path, limit, body] of [
        ["/api/webhooks", ORGANIZATION_QUOTAS.webhooks, (i: number) => ({ url: `${PUBLIC}/${i}`, events: ["incident.opened"] })],
        ["/api/alerts/chat/webhooks", ORGANIZATION_QUOTAS.chatWebhooks, (i: number) => ({ url: `${PUBLIC}/${i}`, name: `chat-${i}` })]
      ] as const) {
        const ids: Array<string> = []
        for (let i = 0; i < limit; i++) {
          const r = yield* call("POST", path, { token: org.token, body: body(i) })
          expect(r.status, `${path} #${i + 1}: ${r.text}`).toBe(201)
          ids.push(r.body.id)
        }
        const over = yield* call("POST", path, { token: org.token, body: body(limit) })
        expect(over.status, path).toBe(409)
        expect(over.body._tag).toBe("Conflict")
        expect(over.body.message).toContain(`already has ${limit}`)
        // another organization is not affected
        const elsewhere = yield* call("POST", path, { token: other.token, body: body(0) })
        expect(elsewhere.status).toBe(201)
        // deleting one makes room
        expect((yield* call("DELETE", `${path}/${ids[0]}`, { token: org.token })).status).toBe(204)
        expect((yield* call("POST", path, { token: org.token, body: body(limit + 1) })).status).toBe(201)
        expect((yield* call("POST", path, { token: org.token, body: body(limit + 2) })).status).toBe(409)
      }
    }), { timeout: 120_000 })

  it.effect("error messages repeat at most a short prefix of what was sent", () =>
    Effect.gen(function*() {
      const long = "x".repeat(5000)
      // (ids in a path longer than 100 characters never reach these handlers: the router refuses them)
      const responses = [
        yield* call("POST", "/api/alerts/chat/test", { body: { webhookId: long } }),
        yield* call("POST", "/api/webhooks", { body: { url: PUBLIC, events: ["incident.opened"], filters: { monitorIds: [long] } } }),
        yield* call("POST", "/api/webhooks", { body: { url: `http://${"a".repeat(1500)}.invalid/hook`, events: ["incident.opened"] } })
      ]
      for (const r of responses) {
        expect(r.status).toBeGreaterThanOrEqual(400)
        expect(r.status).toBeLessThan(500)
        expect(r.body.message.length, r.body.message).toBeLessThan(300)
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
