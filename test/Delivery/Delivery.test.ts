import { expect, it, layer } from "@effect/vitest"
import { SqlClient } from "@effect/sql"
import { Effect, Exit, Layer, Scope, TestClock } from "effect"
import { createHmac, randomBytes, timingSafeEqual } from "node:crypto"
import { Webhook as StandardWebhook } from "standardwebhooks"
import { Webhooks } from "../../src/Delivery/Webhooks.js"
import { Engine } from "../../src/Engine/Engine.js"
import { Events } from "../../src/Events/Events.js"
import {
  AppOn,
  call,
  createMonitor,
  createOrganization,
  makeTestDatabase,
  newAdminToken,
  TestServer,
  validMonitor
} from "../support/fixture.js"
import { defaultOrg, raise } from "../Incidents/support.js"
import { receiver } from "./receiver.js"

const flush = Effect.flatMap(Webhooks, (w) => w.flush)

/** Lets the monitors' actors finish judging the pings already answered (they write through the real database). */
const settleEngine = Effect.gen(function*() {
  const engine = yield* Engine
  yield* Effect.promise(() => new Promise((resolve) => setTimeout(resolve, 20)))
  yield* engine.idle
})

const createWebhook = (body: Record<string, unknown>) =>
  Effect.gen(function*() {
    const r = yield* call("POST", "/api/webhooks", { body })
    expect(r.status, r.text).toBe(201)
    return r.body as { id: string; secret: string; [key: string]: any }
  })

const attemptsOf = (deliveryId: string) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    return yield* sql<{ attempt: number; at: Date; status_code: number | null; error: string | null; request_headers: any }>`
      select attempt, at, status_code, error, request_headers from webhook_delivery_attempts
      where delivery_id = ${deliveryId} order by attempt`
  }).pipe(Effect.orDie)

const deliveriesOf = (webhookId: string) =>
  Effect.map(call("GET", `/api/webhooks/${webhookId}/deliveries?limit=500`), (r) => {
    expect(r.status).toBe(200)
    return r.body.deliveries as Array<any>
  })

// The whole service runs on the TestClock: retries move only when the test moves the clock.
layer(TestServer({ allowPrivateTargets: true }), { timeout: 120_000 })("webhook deliveries", (it) => {
  it.effect("an incident raised through Incidents reaches a subscribed webhook, signed over the raw body", () =>
    Effect.scoped(Effect.gen(function*() {
      const target = yield* receiver([200])
      const monitor = yield* createMonitor({ name: "db backup" })
      const hook = yield* createWebhook({ url: target.url, events: ["incident.opened"] })
      const { incident } = yield* raise(monitor.id)
      yield* flush
      expect(target.received).toHaveLength(1)
      const got = target.received[0]!
      // the receiver's check: HMAC-SHA256 of the unmodified bytes, lowercase hex, constant-time compare
      const expected = createHmac("sha256", hook.secret).update(got.raw).digest("hex")
      const given = String(got.headers["x-service-signature"])
      expect(given).toMatch(/^[0-9a-f]{64}$/)
      expect(timingSafeEqual(Buffer.from(expected), Buffer.from(given))).toBe(true)
      expect(got.headers["content-type"]).toBe("application/json")
      expect(got.headers["x-service-event"]).toBe("incident.opened")
      expect(got.headers["x-ratelimit-limit"]).toBe("100")
      expect(got.headers["x-ratelimit-remaining"]).toBe("99")
      expect(Number(got.headers["x-ratelimit-reset"])).toBeGreaterThan(0)
      expect(Object.keys(got.body)).toEqual(["event", "id", "createdAt", "data"])
      expect(got.body.event).toBe("incident.opened")
      expect(got.body.data.incident).toMatchObject({ id: incident.id, type: "FAIL", monitorId: monitor.id, monitor: { name: "db backup" } })

      const [delivery, ...rest] = yield* deliveriesOf(hook.id)
      expect(rest).toHaveLength(0)
      expect(delivery).toMatchObject({
        eventId: got.body.id,
        event: "incident.opened",
        status: "succeeded",
        attempts: 1,
        retryCount: 0,
        lastStatusCode: 200,
        nextAttemptAt: null
      })
      expect(got.headers["x-service-delivery"]).toBe(delivery.id)
      expect(got.headers["webhook-id"]).toBe(delivery.id)
      expect(delivery.requestHeaders["X-Service-Delivery"]).toBe(delivery.id)
      expect(JSON.stringify(delivery.requestHeaders)).not.toContain(hook.secret)
      // idempotent: another pass sends nothing more
      yield* TestClock.adjust("10 minutes")
      yield* flush
      expect(target.received).toHaveLength(1)
    })))

  it.effect("500, 500, 200: three attempts 1 s and 2 s apart, one delivery id throughout", () =>
    Effect.scoped(Effect.gen(function*() {
      const target = yield* receiver([500, 500, 200])
      const monitor = yield* createMonitor()
      const hook = yield* createWebhook({ url: target.url, events: ["incident.opened"] })
      yield* raise(monitor.id)
      yield* flush
      expect(target.received).toHaveLength(1)
      let [d] = yield* deliveriesOf(hook.id)
      expect(d).toMatchObject({ status: "pending", attempts: 1, lastStatusCode: 500 })
      expect(Date.parse(d.nextAttemptAt) - (yield* TestClock.currentTimeMillis)).toBe(1000)
      yield* TestClock.adjust("999 millis")
      yield* flush
      expect(target.received).toHaveLength(1)
      yield* TestClock.adjust("1 millis")
      yield* flush
      expect(target.received).toHaveLength(2)
      yield* TestClock.adjust("2 seconds")
      yield* flush
      expect(target.received).toHaveLength(3)
      ;[d] = yield* deliveriesOf(hook.id)
      expect(d).toMatchObject({ status: "succeeded", attempts: 3, retryCount: 2, lastStatusCode: 200, nextAttemptAt: null })
      const attempts = yield* attemptsOf(d.id)
      expect(attempts.map((a) => a.status_code)).toEqual([500, 500, 200])
      expect(attempts[1]!.at.getTime() - attempts[0]!.at.getTime()).toBe(1000)
      expect(attempts[2]!.at.getTime() - attempts[1]!.at.getTime()).toBe(2000)
      expect(new Set(target.received.map((r) => r.headers["x-service-delivery"]))).toEqual(new Set([d.id]))
      // the same bytes every time
      expect(new Set(target.received.map((r) => r.raw.toString("utf8"))).size).toBe(1)
    })))

  it.effect("a 4xx is not retried", () =>
    Effect.scoped(Effect.gen(function*() {
      const target = yield* receiver([400])
      const monitor = yield* createMonitor()
      const hook = yield* createWebhook({ url: target.url, events: ["incident.opened"] })
      yield* raise(monitor.id)
      yield* flush
      yield* TestClock.adjust("10 minutes")
      yield* flush
      expect(target.received).toHaveLength(1)
      const [d] = yield* deliveriesOf(hook.id)
      expect(d).toMatchObject({ status: "failed", attempts: 1, retryCount: 0, lastStatusCode: 400, nextAttemptAt: null })
    })))

  it.effect("always 503: 8 attempts at 0, 1, 3, 7, 15, 31, 63, 127 s, then failed", () =>
    Effect.scoped(Effect.gen(function*() {
      const target = yield* receiver([503])
      const monitor = yield* createMonitor()
      const hook = yield* createWebhook({ url: target.url, events: ["incident.opened"] })
      yield* raise(monitor.id)
      yield* flush
      for (const gap of [1, 2, 4, 8, 16, 32, 64]) {
        yield* TestClock.adjust(`${gap} seconds`)
        yield* flush
      }
      expect(target.received).toHaveLength(8)
      const [d] = yield* deliveriesOf(hook.id)
      expect(d).toMatchObject({ status: "failed", attempts: 8, retryCount: 7, lastStatusCode: 503, nextAttemptAt: null })
      const attempts = yield* attemptsOf(d.id)
      const t0 = attempts[0]!.at.getTime()
      expect(attempts.map((a) => (a.at.getTime() - t0) / 1000)).toEqual([0, 1, 3, 7, 15, 31, 63, 127])
      yield* TestClock.adjust("10 minutes")
      yield* flush
      expect(target.received).toHaveLength(8)
    })))

  it.effect("a refused connection is retried (no response)", () =>
    Effect.scoped(Effect.gen(function*() {
      const target = yield* receiver([200])
      const url = target.url
      yield* Effect.promise(() => new Promise<void>((resolve) => target.server.close(() => resolve())))
      const monitor = yield* createMonitor()
      const hook = yield* createWebhook({ url, events: ["incident.opened"] })
      yield* raise(monitor.id)
      yield* flush
      const [d] = yield* deliveriesOf(hook.id)
      expect(d).toMatchObject({ status: "pending", attempts: 1, lastStatusCode: null })
      expect(d.lastError).toContain("ECONNREFUSED")
    })))

  it.effect("filters: events selection, monitorIds (any of the event's monitors) and severity", () =>
    Effect.scoped(Effect.gen(function*() {
      const target = yield* receiver([200])
      const a = yield* createMonitor({ name: "a" })
      const b = yield* createMonitor({ name: "b" })
      const onlyA = yield* createWebhook({ url: target.url, events: ["incident.opened"], filters: { monitorIds: [a.id] } })
      const onlyLow = yield* createWebhook({ url: target.url, events: ["incident.opened"], filters: { severity: ["LOW"] } })
      const resolvedOnly = yield* createWebhook({ url: target.url, events: ["incident.resolved"] })
      yield* raise(a.id, { type: "FAIL", severity: "HIGH" })
      yield* raise(b.id, { type: "ANOMALY", severity: "LOW", details: {} })
      yield* flush
      const ofA = yield* deliveriesOf(onlyA.id)
      expect(ofA).toHaveLength(1)
      const bodyA = target.received.find((r) => r.headers["x-service-delivery"] === ofA[0].id)!.body
      expect(bodyA.data.incident.monitorId).toBe(a.id)
      const ofLow = yield* deliveriesOf(onlyLow.id)
      expect(ofLow).toHaveLength(1)
      const bodyLow = target.received.find((r) => r.headers["x-service-delivery"] === ofLow[0].id)!.body
      expect(bodyLow.data.incident).toMatchObject({ monitorId: b.id, severity: "LOW" })
      expect(yield* deliveriesOf(resolvedOnly.id)).toHaveLength(0)
      expect(target.received).toHaveLength(2)
    })))

  it.effect("incident.acknowledged, incident.note_added and incident.resolved (by a user, and by a successful run) name their monitor", () =>
    Effect.scoped(Effect.gen(function*() {
      const target = yield* receiver([200])
      const monitor = yield* createMonitor({ name: "invoice export", schedule: { type: "cron", expression: "15 4 * * *" } })
      const unrelated = yield* createMonitor({ name: "unrelated" })
      yield* createWebhook({
        url: target.url,
        events: ["incident.acknowledged", "incident.resolved", "incident.note_added"],
        filters: { monitorIds: [monitor.id] }
      })
      const summary = { id: monitor.id, name: "invoice export", schedule: { type: "cron", expression: "15 4 * * *" } }
      // A failed run opens FAIL; a user acknowledges it, adds a note and resolves it.
      expect((yield* call("POST", `/api/ping/${monitor.id}/fail`, { body: { exitCode: 3 } })).status).toBe(200)
      yield* settleEngine
      const [first] = (yield* call("GET", `/api/incidents?monitorId=${monitor.id}`)).body.incidents
      expect(first).toMatchObject({ type: "FAIL", status: "OPEN" })
      expect((yield* call("POST", `/api/incidents/${first.id}/acknowledge`, { body: { note: "on it" } })).status).toBe(200)
      expect((yield* call("POST", `/api/incidents/${first.id}/notes`, { body: { note: "rolled back" } })).status).toBe(201)
      expect((yield* call("POST", `/api/incidents/${first.id}/resolve`)).status).toBe(200)
      // The next failure is resolved by the service when a run succeeds (autoResolve).
      expect((yield* call("POST", `/api/ping/${monitor.id}/fail`)).status).toBe(200)
      yield* settleEngine
      const [second] = (yield* call("GET", `/api/incidents?monitorId=${monitor.id}&status=OPEN`)).body.incidents
      expect(second.id).not.toBe(first.id)
      expect((yield* call("POST", `/api/ping/${monitor.id}/success`)).status).toBe(200)
      yield* settleEngine
      expect((yield* call("GET", `/api/incidents/${second.id}`)).body.status).toBe("RESOLVED")
      // Another monitor's acknowledgement does not pass the filter.
      expect((yield* call("POST", `/api/ping/${unrelated.id}/fail`)).status).toBe(200)
      yield* settleEngine
      const [other] = (yield* call("GET", `/api/incidents?monitorId=${unrelated.id}`)).body.incidents
      expect((yield* call("POST", `/api/incidents/${other.id}/acknowledge`)).status).toBe(200)
      yield* flush

      const got = target.received.map((r) => r.body)
      expect(got.map((b) => [b.event, b.data.incident.id])).toEqual([
        ["incident.acknowledged", first.id],
        ["incident.note_added", first.id],
        ["incident.resolved", first.id],
        ["incident.resolved", second.id]
      ])
      for (const body of got) {
        expect(body.data.incident.monitorId).toBe(monitor.id)
        expect(body.data.incident.monitor).toEqual(summary)
      }
      // The spec's fields are unchanged beside them.
      expect(got[0].data).toMatchObject({ incident: { status: "ACKNOWLEDGED" }, acknowledgedBy: { name: "Admin" }, note: "on it" })
      expect(got[2].data).toMatchObject({ incident: { status: "RESOLVED" }, resolvedBy: { name: "Admin" }, note: null })
      expect(got[3].data).toMatchObject({
        incident: { status: "RESOLVED", mttrSeconds: expect.any(Number) },
        resolvedBy: { userId: null, name: "system" },
        note: "a successful run"
      })
    })))

  it.effect("test delivery: 200 with the record of a webhook.test event, delivered at once", () =>
    Effect.scoped(Effect.gen(function*() {
      const target = yield* receiver([204])
      const hook = yield* createWebhook({ url: target.url, events: ["incident.opened"] })
      const r = yield* call("POST", `/api/webhooks/${hook.id}/test`)
      expect(r.status).toBe(200)
      expect(r.body).toMatchObject({ event: "webhook.test", status: "succeeded", attempts: 1, lastStatusCode: 204 })
      expect(target.received).toHaveLength(1)
      const got = target.received[0]!
      expect(got.headers["x-service-event"]).toBe("webhook.test")
      expect(got.headers["x-service-delivery"]).toBe(r.body.id)
      expect(got.body).toMatchObject({ event: "webhook.test", id: r.body.eventId })
      expect(createHmac("sha256", hook.secret).update(got.raw).digest("hex")).toBe(got.headers["x-service-signature"])
      expect((yield* deliveriesOf(hook.id))[0].id).toBe(r.body.id)
    })))

  it.effect("150 events in a minute: 100 sent with the X-RateLimit headers counting down, 50 in the next minute", () =>
    Effect.scoped(Effect.gen(function*() {
      const target = yield* receiver([200])
      const monitor = yield* createMonitor()
      const hook = yield* createWebhook({ url: target.url, events: ["monitor.updated"] })
      const { orgId } = yield* defaultOrg
      const events = yield* Events
      const now = yield* TestClock.currentTimeMillis
      // at the start of a minute, so the whole burst falls in one window
      yield* TestClock.adjust(`${60_000 - (now % 60_000)} millis`)
      const minute = yield* TestClock.currentTimeMillis
      yield* events.recordMany(
        Array.from({ length: 150 }, (_, i) => ({
          orgId,
          type: "monitor.updated" as const,
          data: { n: i },
          monitorIds: [monitor.id],
          at: minute
        }))
      )
      yield* flush
      const remaining = (rs: ReadonlyArray<{ headers: Record<string, any> }>) =>
        rs.map((r) => Number(r.headers["x-ratelimit-remaining"])).sort((x, y) => x - y)
      expect(target.received).toHaveLength(100)
      expect(remaining(target.received)).toEqual(Array.from({ length: 100 }, (_, i) => i))
      expect(new Set(target.received.map((r) => r.headers["x-ratelimit-reset"]))).toEqual(new Set([String((minute + 60_000) / 1000)]))
      expect(new Set(target.received.map((r) => r.headers["x-ratelimit-limit"]))).toEqual(new Set(["100"]))
      const pending = (yield* deliveriesOf(hook.id)).filter((d) => d.status === "pending")
      expect(pending).toHaveLength(50)
      // waiting for its turn does not use up an attempt
      expect(pending.every((d) => d.attempts === 0 && Date.parse(d.nextAttemptAt) === minute + 60_000)).toBe(true)
      yield* TestClock.adjust("59 seconds")
      yield* flush
      expect(target.received).toHaveLength(100)
      yield* TestClock.adjust("1 second")
      yield* flush
      expect(target.received).toHaveLength(150)
      const next = target.received.slice(100)
      expect(remaining(next)).toEqual(Array.from({ length: 50 }, (_, i) => 50 + i))
      expect(new Set(next.map((r) => r.headers["x-ratelimit-reset"]))).toEqual(new Set([String((minute + 120_000) / 1000)]))
      expect(new Set(target.received.map((r) => r.body.data.n)).size).toBe(150)
    })))

  it.effect("no answer within 5 s: the attempt times out and is retried 1 s later", () =>
    Effect.scoped(Effect.gen(function*() {
      const target = yield* receiver(["hang", 200])
      const monitor = yield* createMonitor()
      const hook = yield* createWebhook({ url: target.url, events: ["incident.opened"] })
      yield* raise(monitor.id)
      yield* flush
      let [d] = yield* deliveriesOf(hook.id)
      expect(d).toMatchObject({ status: "pending", attempts: 1, lastStatusCode: null })
      expect(d.lastError).toMatch(/^timeout/)
      expect(Date.parse(d.nextAttemptAt) - (yield* TestClock.currentTimeMillis)).toBe(1000)
      yield* TestClock.adjust("1 second")
      yield* flush
      ;[d] = yield* deliveriesOf(hook.id)
      expect(d).toMatchObject({ status: "succeeded", attempts: 2, lastStatusCode: 200 })
      expect(target.received).toHaveLength(2)
    })))

  it.effect("no flush, no clock: a notification wakes the worker and the alert leaves at once", () =>
    Effect.scoped(Effect.gen(function*() {
      const target = yield* receiver([200])
      const monitor = yield* createMonitor()
      yield* createWebhook({ url: target.url, events: ["incident.opened"] })
      yield* flush
      // The TestClock does not move: only LISTEN/NOTIFY can start the worker's pass.
      const { incident } = yield* raise(monitor.id)
      const deadline = Date.now() + 30_000
      while (target.received.length === 0 && Date.now() < deadline) {
        yield* Effect.promise(() => new Promise((resolve) => setTimeout(resolve, 20)))
      }
      expect(target.received).toHaveLength(1)
      expect(target.received[0]!.body.data.incident.id).toBe(incident.id)
    })))

  it.effect("subscribing to ping.received turns ping events on; pings then reach the webhook", () =>
    Effect.scoped(Effect.gen(function*() {
      const target = yield* receiver([200])
      const monitor = yield* createMonitor()
      const hook = yield* createWebhook({ url: target.url, events: ["ping.received"] })
      expect((yield* call("POST", `/api/ping/${monitor.id}/success`, { body: { durationMs: 10 } })).status).toBe(200)
      // the ping writer commits asynchronously: poll (in real time) until the delivery exists
      for (let i = 0; i < 100 && target.received.length === 0; i++) {
        yield* Effect.promise(() => new Promise((resolve) => setTimeout(resolve, 20)))
        yield* flush
      }
      expect(target.received).toHaveLength(1)
      expect(target.received[0]!.body.data.ping).toMatchObject({ monitorId: monitor.id, kind: "success" })
      expect((yield* call("DELETE", `/api/webhooks/${hook.id}`)).status).toBe(204)
    })))

  it.effect("ping.received events are recorded only for the monitors a subscribed webhook can receive", () =>
    Effect.scoped(Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const target = yield* receiver([200])
      const watched = yield* createMonitor()
      const other = yield* createMonitor()
      const eventsOf = (monitorId: string) =>
        Effect.map(
          sql<{ n: number }>`select count(*)::int as n from ping_events where monitor_id = ${monitorId}`,
          (rows) => rows[0]!.n
        ).pipe(Effect.orDie)
      const hook = yield* createWebhook({ url: target.url, events: ["ping.received"], filters: { monitorIds: [watched.id] } })
      expect((yield* call("POST", `/api/ping/${other.id}/success`)).status).toBe(200)
      expect((yield* call("POST", `/api/ping/${watched.id}/success`)).status).toBe(200)
      // A 200 comes after the commit, so both pings are stored by now.
      expect(yield* eventsOf(watched.id)).toBe(1)
      expect(yield* eventsOf(other.id)).toBe(0)
      for (let i = 0; i < 100 && target.received.length === 0; i++) {
        yield* Effect.promise(() => new Promise((resolve) => setTimeout(resolve, 20)))
        yield* flush
      }
      expect(target.received.map((r) => r.body.data.ping.monitorId)).toEqual([watched.id])
      // Without a monitor filter the webhook receives every monitor's pings: all are recorded again.
      expect((yield* call("PATCH", `/api/webhooks/${hook.id}`, { body: { filters: { monitorIds: [] } } })).status).toBe(200)
      expect((yield* call("POST", `/api/ping/${other.id}/success`)).status).toBe(200)
      expect(yield* eventsOf(other.id)).toBe(1)
      expect((yield* call("DELETE", `/api/webhooks/${hook.id}`)).status).toBe(204)
      expect((yield* call("POST", `/api/ping/${other.id}/success`)).status).toBe(200)
      expect(yield* eventsOf(other.id)).toBe(1)
    })))

  it.effect("a ping.received webhook without a monitor filter turns ping events on for its own organization's monitors only", () =>
    Effect.scoped(Effect.gen(function*() {
      const target = yield* receiver([200])
      const tenant = yield* createOrganization("ping-tenant")
      const asTenant = { token: tenant.token }
      const theirs = yield* call("POST", "/api/monitors", { ...asTenant, body: validMonitor({ name: "tenant job" }) })
      expect(theirs.status, theirs.text).toBe(201)
      const ours = yield* createMonitor({ name: "our job" })
      const pingEventsOf = (monitorId: string, token?: string) =>
        Effect.map(
          call("GET", `/api/events?type=ping.received&monitorId=${monitorId}`, token === undefined ? {} : { token }),
          (r) => {
            expect(r.status).toBe(200)
            return r.body.events.length as number
          }
        )
      // The other organization subscribes to every one of its monitors' pings.
      const hook = yield* call("POST", "/api/webhooks", { ...asTenant, body: { url: target.url, events: ["ping.received"] } })
      expect(hook.status, hook.text).toBe(201)
      expect((yield* call("POST", `/api/ping/${theirs.body.id}/success`, asTenant)).status).toBe(200)
      expect((yield* call("POST", `/api/ping/${ours.id}/success`)).status).toBe(200)
      // A 200 comes after the commit: the tenant's ping has its event, ours records none.
      expect(yield* pingEventsOf(theirs.body.id, tenant.token)).toBe(1)
      expect(yield* pingEventsOf(ours.id)).toBe(0)
      // Our own webhook without a monitor filter turns ours on.
      const own = yield* createWebhook({ url: target.url, events: ["ping.received"] })
      expect((yield* call("POST", `/api/ping/${ours.id}/success`)).status).toBe(200)
      expect(yield* pingEventsOf(ours.id)).toBe(1)
      // The tenant unsubscribes: its pings stop recording; ours go on.
      expect((yield* call("DELETE", `/api/webhooks/${hook.body.id}`, asTenant)).status).toBe(204)
      expect((yield* call("POST", `/api/ping/${theirs.body.id}/success`, asTenant)).status).toBe(200)
      expect((yield* call("POST", `/api/ping/${ours.id}/success`)).status).toBe(200)
      expect(yield* pingEventsOf(theirs.body.id, tenant.token)).toBe(1)
      expect(yield* pingEventsOf(ours.id)).toBe(2)
      expect((yield* call("DELETE", `/api/webhooks/${own.id}`)).status).toBe(204)
    })))

  it.effect("ping.received: deliveries are made as the webhook can take them (100 a minute), oldest pings first, none lost", () =>
    Effect.scoped(Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const target = yield* receiver([200])
      const a = yield* createMonitor()
      const b = yield* createMonitor()
      const hook = yield* createWebhook({ url: target.url, events: ["ping.received"], filters: { monitorIds: [a.id, b.id] } })
      const runIds: Array<string> = []
      for (let i = 0; i < 75; i++) {
        for (const m of [a, b]) {
          const r = yield* call("POST", `/api/ping/${m.id}/success`, { body: { durationMs: i + 1 } })
          expect(r.status, r.text).toBe(200)
          runIds.push(r.body.runId)
        }
      }
      // Every ping has its event at once; deliveries are made only as far as the webhook can take them.
      const [events] = yield* sql<{ n: number }>`
        select count(*)::int as n from ping_events where monitor_id = any(${[a.id, b.id]}::uuid[])`
      expect(events!.n).toBe(150)
      yield* flush
      yield* flush
      expect(target.received).toHaveLength(100)
      // the oldest 100 pings first (POSTs run side by side, so their arrival order is not the pings')
      expect(target.received.map((r) => r.body.data.ping.runId).sort()).toEqual(runIds.slice(0, 100).sort())
      const [made] = yield* sql<{ n: number; pending: number }>`
        select count(*)::int as n, count(*) filter (where status = 'pending')::int as pending
        from webhook_deliveries where webhook_id = ${hook.id}`
      expect(made!.n).toBeLessThanOrEqual(150)
      expect(made!.pending).toBeLessThanOrEqual(100)
      // The next minute: the rest, and nothing twice.
      yield* TestClock.adjust("61 seconds")
      yield* flush
      yield* flush
      expect(target.received).toHaveLength(150)
      expect(target.received.map((r) => r.body.data.ping.runId).sort()).toEqual([...runIds].sort())
      expect(new Set(target.received.map((r) => r.headers["x-service-delivery"])).size).toBe(150)
      for (const r of target.received) {
        expect(r.headers["x-service-signature"]).toBe(createHmac("sha256", hook.secret).update(r.raw).digest("hex"))
      }
      expect((yield* call("DELETE", `/api/webhooks/${hook.id}`)).status).toBe(204)
    })))

  it.effect("a webhook that starts subscribing to ping.received receives the pings from then on", () =>
    Effect.scoped(Effect.gen(function*() {
      const first = yield* receiver([200])
      const later = yield* receiver([200])
      const monitor = yield* createMonitor()
      const watching = yield* createWebhook({ url: first.url, events: ["ping.received"], filters: { monitorIds: [monitor.id] } })
      const joining = yield* createWebhook({ url: later.url, events: ["incident.opened"], filters: { monitorIds: [monitor.id] } })
      for (let i = 0; i < 2; i++) expect((yield* call("POST", `/api/ping/${monitor.id}/success`)).status).toBe(200)
      const patched = yield* call("PATCH", `/api/webhooks/${joining.id}`, { body: { events: ["incident.opened", "ping.received"] } })
      expect(patched.status, patched.text).toBe(200)
      const last = yield* call("POST", `/api/ping/${monitor.id}/success`)
      expect(last.status).toBe(200)
      yield* flush
      yield* flush
      expect(first.received).toHaveLength(3)
      expect(later.received.map((r) => r.body.data.ping.runId)).toEqual([last.body.runId])
      for (const hook of [watching, joining]) expect((yield* call("DELETE", `/api/webhooks/${hook.id}`)).status).toBe(204)
    })))

  it.effect("ping events are kept a day after every subscriber has been sent them, and not deleted before", () =>
    Effect.scoped(Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const target = yield* receiver([200])
      const monitor = yield* createMonitor()
      const hook = yield* createWebhook({ url: target.url, events: ["ping.received"], filters: { monitorIds: [monitor.id] } })
      const stored = Effect.map(
        sql<{ n: number }>`select count(*)::int as n from ping_events where monitor_id = ${monitor.id}`,
        (rows) => rows[0]!.n
      ).pipe(Effect.orDie)
      for (let i = 0; i < 3; i++) expect((yield* call("POST", `/api/ping/${monitor.id}/success`)).status).toBe(200)
      yield* flush
      expect(target.received).toHaveLength(3)
      yield* TestClock.adjust("23 hours")
      yield* flush
      expect(yield* stored).toBe(3)
      expect((yield* call("GET", `/api/events?type=ping.received&monitorId=${monitor.id}`)).body.events).toHaveLength(3)
      yield* TestClock.adjust("2 hours")
      const fresh = yield* call("POST", `/api/ping/${monitor.id}/success`)
      expect(fresh.status).toBe(200)
      yield* flush
      // the three from yesterday are gone; today's is kept (and delivered)
      expect(yield* stored).toBe(1)
      expect(target.received.map((r) => r.body.data.ping.runId)).toContain(fresh.body.runId)
      expect((yield* call("DELETE", `/api/webhooks/${hook.id}`)).status).toBe(204)
    })))

  it.effect("a url with credentials is shown masked; a PATCH that sends the masked url back (or no url) keeps the stored one: deliveries still carry the credentials", () =>
    Effect.scoped(Effect.gen(function*() {
      const target = yield* receiver([200])
      const hook = yield* createWebhook({ url: `${target.url}?token=abc123&team=ops`, events: ["webhook.test", "incident.opened"] })
      expect(hook.url).toBe(`${target.url}?token=abc123&team=ops`)
      const shown = (yield* call("GET", `/api/webhooks/${hook.id}`)).body.url
      expect(shown).toBe(`${target.url}?token=***&team=ops`)
      expect((yield* call("PATCH", `/api/webhooks/${hook.id}`, { body: { url: shown } })).status).toBe(200)
      expect((yield* call("PATCH", `/api/webhooks/${hook.id}`, { body: { events: ["webhook.test"] } })).body.url).toBe(shown)
      const sent = yield* call("POST", `/api/webhooks/${hook.id}/test`)
      expect(sent.body).toMatchObject({ status: "succeeded", lastStatusCode: 200 })
      expect(target.received.map((r) => r.url)).toEqual(["/hook?token=abc123&team=ops"])
      expect((yield* call("DELETE", `/api/webhooks/${hook.id}`)).status).toBe(204)
    })))
})

/**
 * A receiver that verifies with the official Standard Webhooks library, as a receiver whose clock
 * reads `clock()` (the library compares the signed timestamp with Date.now: it reads the receiver's
 * clock for the one synchronous call). Answers 204, or 401 when verification fails.
 */
const standardReceiver = (librarySecret: () => string, clock: () => number) =>
  receiver((request) => (verifiesAt(librarySecret(), request.raw, request.headers, clock()) ? 204 : 401))

const verifiesAt = (librarySecret: string, raw: Buffer, headers: object, receiverNow: number) => {
  const realNow = Date.now
  Date.now = () => receiverNow
  try {
    new StandardWebhook(librarySecret).verify(raw.toString("utf8"), headers as Record<string, string>)
    return true
  } catch {
    return false
  } finally {
    Date.now = realNow
  }
}

// Real time here: the worker's safety poll (30 s) is what a lost LISTEN connection used to cost.
layer(TestServer({ allowPrivateTargets: true }), { excludeTestServices: true, timeout: 120_000 })("the delivery LISTEN connection", (it) => {
  it.effect("dropped by the database: the worker listens again, and an alert notified meanwhile leaves without waiting for the safety poll", () =>
    Effect.scoped(Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const target = yield* receiver([200])
      const monitor = yield* createMonitor()
      yield* createWebhook({ url: target.url, events: ["incident.opened"] })
      const listener = Effect.map(
        sql<{ pid: number }>`
          select pid from pg_stat_activity
          where datname = current_database() and query ilike 'listen %' and pid <> pg_backend_pid()`,
        (rows) => rows[0]?.pid
      ).pipe(Effect.orDie)
      const waitFor = <A>(what: Effect.Effect<A>, done: (a: A) => boolean, ms: number) =>
        Effect.gen(function*() {
          const deadline = Date.now() + ms
          let value = yield* what
          while (!done(value) && Date.now() < deadline) {
            yield* Effect.promise(() => new Promise((resolve) => setTimeout(resolve, 20)))
            value = yield* what
          }
          return value
        })
      const first = yield* waitFor(listener, (pid) => pid !== undefined, 10_000)
      expect(first).toBeDefined()
      yield* sql`select pg_terminate_backend(${first!})`.pipe(Effect.orDie)
      expect(yield* waitFor(listener, (pid) => pid !== first, 10_000)).not.toBe(first)
      // No instance listens now: this incident's notification reaches nobody.
      const t0 = Date.now()
      const { incident } = yield* raise(monitor.id)
      const received = Effect.sync(() => target.received.length)
      expect(yield* waitFor(received, (n) => n === 1, 10_000)).toBe(1)
      expect(target.received[0]!.body.data.incident.id).toBe(incident.id)
      expect(Date.now() - t0).toBeLessThan(10_000)
      // Listening again: the next alert is woken by its notification.
      const again = yield* waitFor(listener, (pid) => pid !== undefined && pid !== first, 10_000)
      expect(again).toBeDefined()
      expect(again).not.toBe(first)
      const other = yield* createMonitor()
      yield* raise(other.id)
      expect(yield* waitFor(received, (n) => n === 2, 5_000)).toBe(2)
    })))
})

// A server of its own: the wake-up is throttled on the Clock (at most one a second while pings keep
// coming), and this TestClock never moves, so an earlier ping in the same server would hold it.
layer(TestServer({ allowPrivateTargets: true }), { timeout: 120_000 })("ping.received wake-up", (it) => {
  it.effect("no flush, no clock: a ping's commit wakes the worker, and its ping.received delivery leaves at once", () =>
    Effect.scoped(Effect.gen(function*() {
      const target = yield* receiver([200])
      const monitor = yield* createMonitor()
      yield* createWebhook({ url: target.url, events: ["ping.received"], filters: { monitorIds: [monitor.id] } })
      yield* flush
      // Pings notify nobody and the TestClock does not move: only the intake's commit can start a pass.
      const ping = yield* call("POST", `/api/ping/${monitor.id}/success`)
      expect(ping.status).toBe(200)
      const deadline = Date.now() + 10_000
      while (target.received.length === 0 && Date.now() < deadline) {
        yield* Effect.promise(() => new Promise((resolve) => setTimeout(resolve, 20)))
      }
      expect(target.received.map((r) => r.body.data.ping.runId)).toEqual([ping.body.runId])
    })))
})

layer(TestServer({ allowPrivateTargets: true }), { timeout: 120_000 })("Standard Webhooks signature", (it) => {
  it.effect("the official library verifies webhook-id, webhook-timestamp and webhook-signature; a receiver refuses a stale timestamp", () =>
    Effect.scoped(Effect.gen(function*() {
      // a generated secret (64 hex characters): its whsec_ form is "whsec_" + the base64 of its bytes
      let librarySecret = ""
      let receiverClock = 0
      const target = yield* standardReceiver(() => librarySecret, () => receiverClock)
      const hook = yield* createWebhook({ url: target.url, events: ["webhook.test"] })
      librarySecret = `whsec_${Buffer.from(hook.secret).toString("base64")}`

      // the receiver's clock reads the service's time: verified
      const sentAt = yield* TestClock.currentTimeMillis
      receiverClock = sentAt
      const fresh = yield* call("POST", `/api/webhooks/${hook.id}/test`)
      expect(fresh.body).toMatchObject({ status: "succeeded", lastStatusCode: 204 })
      const got = target.received[0]!
      expect(got.headers["webhook-id"]).toBe(fresh.body.id)
      expect(got.headers["webhook-timestamp"]).toBe(String(Math.floor(sentAt / 1000)))
      expect(String(got.headers["webhook-signature"])).toMatch(/^v1,[A-Za-z0-9+/]{43}=$/)
      expect(fresh.body.requestHeaders["webhook-signature"]).toBe(got.headers["webhook-signature"])
      expect(JSON.stringify(fresh.body.requestHeaders)).not.toContain(hook.secret)
      // the same bytes with another id or another time do not verify: both are signed
      const now = Math.floor(sentAt / 1000)
      for (const headers of [{ ...got.headers, "webhook-id": "another" }, { ...got.headers, "webhook-timestamp": String(now - 1) }]) {
        expect(verifiesAt(librarySecret, got.raw, headers, sentAt)).toBe(false)
      }

      // ten minutes later the same delivery, replayed as it was captured, is refused (the library's
      // window is 5 minutes); its body signature alone would still have passed
      expect(verifiesAt(librarySecret, got.raw, got.headers, sentAt + 10 * 60_000)).toBe(false)
      expect(got.headers["x-service-signature"]).toBe(createHmac("sha256", hook.secret).update(got.raw).digest("hex"))

      // a service whose attempt is signed ten minutes before the receiver's time: 401, final
      receiverClock = (yield* TestClock.currentTimeMillis) + 10 * 60_000
      const stale = yield* call("POST", `/api/webhooks/${hook.id}/test`)
      expect(stale.body).toMatchObject({ status: "failed", attempts: 1, lastStatusCode: 401 })
    })))

  it.effect("a secret given in the whsec_ form is used as the standard says: the library takes it unchanged", () =>
    Effect.scoped(Effect.gen(function*() {
      const secret = `whsec_${randomBytes(32).toString("base64")}`
      const now = yield* TestClock.currentTimeMillis
      const target = yield* standardReceiver(() => secret, () => now)
      const hook = yield* createWebhook({ url: target.url, events: ["webhook.test"], secret })
      const sent = yield* call("POST", `/api/webhooks/${hook.id}/test`)
      expect(sent.body).toMatchObject({ status: "succeeded", lastStatusCode: 204 })
      // X-Service-Signature keeps its rule: HMAC keyed with the secret string as given
      expect(target.received[0]!.headers["x-service-signature"]).toBe(createHmac("sha256", secret).update(target.received[0]!.raw).digest("hex"))
      // a malformed whsec_ secret is refused at creation
      const bad = yield* call("POST", "/api/webhooks", { body: { url: target.url, events: ["webhook.test"], secret: "whsec_not*base64*at*all" } })
      expect(bad.status).toBe(400)
      expect(bad.body.path).toBe("secret")
    })))

  it.effect("a retried delivery is signed again with its attempt's time", () =>
    Effect.scoped(Effect.gen(function*() {
      const secret = `whsec_${randomBytes(24).toString("base64")}`
      let answered = 0
      let receiverClock = 0
      const target = yield* receiver((request) =>
        answered++ === 0 ? 503 : verifiesAt(secret, request.raw, request.headers, receiverClock) ? 204 : 401
      )
      const monitor = yield* createMonitor()
      const hook = yield* createWebhook({ url: target.url, events: ["incident.opened"], secret })
      yield* raise(monitor.id)
      yield* flush
      yield* TestClock.adjust("1 second")
      receiverClock = yield* TestClock.currentTimeMillis
      yield* flush
      expect(target.received).toHaveLength(2)
      const [first, second] = target.received.map((r) => Number(r.headers["webhook-timestamp"]))
      expect(second! - first!).toBe(1)
      expect(new Set(target.received.map((r) => r.headers["webhook-id"])).size).toBe(1)
      const [d] = yield* deliveriesOf(hook.id)
      expect(d).toMatchObject({ status: "succeeded", attempts: 2, lastStatusCode: 204 })
    })))
})

it.effect("after a restart, a pending delivery resumes when its retry is due", () =>
  Effect.gen(function*() {
    const db = yield* makeTestDatabase()
    const token = newAdminToken()
    const target = yield* receiver([500, 200])
    const run = <A, E>(use: Effect.Effect<A, E, any>): Effect.Effect<A, unknown> =>
      Effect.gen(function*() {
        const scope = yield* Scope.make()
        const context = yield* Layer.buildWithScope(AppOn(db.url, token, { allowPrivateTargets: true }), scope)
        return yield* (Effect.provide(use, context) as Effect.Effect<A, E>).pipe(Effect.ensuring(Scope.close(scope, Exit.void)))
      })
    const hookId = yield* run(Effect.gen(function*() {
      const monitor = yield* createMonitor()
      const hook = yield* createWebhook({ url: target.url, events: ["incident.opened"] })
      yield* raise(monitor.id)
      yield* flush
      const [d] = yield* deliveriesOf(hook.id)
      expect(d).toMatchObject({ status: "pending", attempts: 1 })
      return hook.id
    }))
    expect(target.received).toHaveLength(1)
    // Down past the due time: the next life sends it.
    yield* TestClock.adjust("5 seconds")
    const after = yield* run(Effect.gen(function*() {
      yield* flush
      return yield* deliveriesOf(hookId)
    }))
    expect(target.received).toHaveLength(2)
    expect(after[0]).toMatchObject({ status: "succeeded", attempts: 2, retryCount: 1 })
    expect(target.received[1]!.headers["x-service-delivery"]).toBe(after[0].id)
  }).pipe(Effect.scoped), 120_000)

it.effect("two service instances on one database: every delivery and every chat message is sent exactly once", () =>
  Effect.gen(function*() {
    const db = yield* makeTestDatabase()
    const token = newAdminToken()
    const hooks = yield* receiver([200])
    const chat = yield* receiver([{ status: 429, headers: { "retry-after": "1" } }, 204])
    const start = Effect.gen(function*() {
      const scope = yield* Scope.make()
      yield* Effect.addFinalizer(() => Scope.close(scope, Exit.void))
      return yield* Layer.buildWithScope(AppOn(db.url, token, { allowPrivateTargets: true }), scope)
    })
    const a = yield* start
    const b = yield* start
    const onA = <X, E>(effect: Effect.Effect<X, E, any>) => Effect.provide(effect, a) as Effect.Effect<X, E>
    const flushBoth = Effect.all([onA(flush), Effect.provide(flush, b)], { concurrency: "unbounded", discard: true })
    const monitors = yield* onA(Effect.forEach(Array.from({ length: 12 }, (_, i) => i), (i) => createMonitor({ name: `twice-${i}` })))
    for (let i = 0; i < 3; i++) yield* onA(createWebhook({ url: `${hooks.url}/${i}`, events: ["monitor.updated", "incident.opened"] }))
    expect((yield* onA(call("POST", "/api/alerts/chat/webhooks", { body: { url: chat.url, name: "twice" } }))).status).toBe(201)
    const { orgId } = yield* onA(defaultOrg)
    const now = yield* TestClock.currentTimeMillis
    yield* onA(Effect.flatMap(Events, (events) =>
      events.recordMany(Array.from({ length: 60 }, (_, i) => ({ orgId, type: "monitor.updated" as const, data: { n: i }, monitorIds: [], at: now })))
    ))
    yield* onA(raise(monitors[0]!.id))
    yield* flushBoth
    // the chat webhook now waits a second; the other incidents pile up meanwhile
    for (const m of monitors.slice(1)) yield* onA(raise(m.id))
    yield* flushBoth
    yield* TestClock.adjust("1 second")
    yield* flushBoth
    yield* flushBoth
    // 3 webhooks × (60 + 12 incidents)
    expect(hooks.received).toHaveLength(3 * 72)
    expect(new Set(hooks.received.map((r) => r.headers["x-service-delivery"])).size).toBe(3 * 72)
    const titles = chat.received.slice(1).flatMap((r) => r.body.embeds.map((e: any) => e.title))
    expect(titles.sort()).toEqual(monitors.map((m) => `FAIL: ${m.name}`).sort())
  }).pipe(Effect.scoped), 120_000)

it.effect("two service instances: a ping.received subscription made on one turns ping events on (and off) on the other, without a restart", () =>
  Effect.gen(function*() {
    const db = yield* makeTestDatabase()
    const token = newAdminToken()
    const target = yield* receiver([200])
    const start = Effect.gen(function*() {
      const scope = yield* Scope.make()
      yield* Effect.addFinalizer(() => Scope.close(scope, Exit.void))
      return yield* Layer.buildWithScope(AppOn(db.url, token, { allowPrivateTargets: true, pingBurst: 100_000 }), scope)
    })
    const a = yield* start
    const b = yield* start
    const onA = <X, E>(effect: Effect.Effect<X, E, any>) => Effect.provide(effect, a) as Effect.Effect<X, E>
    const onB = <X, E>(effect: Effect.Effect<X, E, any>) => Effect.provide(effect, b) as Effect.Effect<X, E>
    const monitor = yield* onA(createMonitor())
    const recorded = onA(Effect.flatMap(SqlClient.SqlClient, (sql) =>
      Effect.map(sql<{ n: number }>`select count(*)::int as n from ping_events where monitor_id = ${monitor.id}`, (rows) => rows[0]!.n)
    ).pipe(Effect.orDie))
    const pingB = Effect.gen(function*() {
      const r = yield* onB(call("POST", `/api/ping/${monitor.id}/success`, { body: { durationMs: 5 } }))
      expect(r.status).toBe(200)
    })
    /** Pings through B (in real time) until one records an event, or gives up after ~3 s. */
    const pingUntilRecorded = Effect.gen(function*() {
      const before = yield* recorded
      for (let i = 0; i < 150; i++) {
        yield* pingB
        if ((yield* recorded) > before) return true
        yield* Effect.promise(() => new Promise((resolve) => setTimeout(resolve, 20)))
      }
      return false
    })
    yield* pingB
    expect(yield* recorded).toBe(0)
    // Subscribed through A: B hears of it (LISTEN/NOTIFY) and records its pings' events.
    const hook = yield* onA(createWebhook({ url: target.url, events: ["ping.received"] }))
    expect(yield* pingUntilRecorded).toBe(true)
    // Unsubscribed through A: B stops recording.
    expect((yield* onA(call("DELETE", `/api/webhooks/${hook.id}`))).status).toBe(204)
    for (let i = 0; i < 150; i++) {
      const before = yield* recorded
      yield* pingB
      if ((yield* recorded) === before) break
      yield* Effect.promise(() => new Promise((resolve) => setTimeout(resolve, 20)))
    }
    const settled = yield* recorded
    for (let i = 0; i < 5; i++) yield* pingB
    expect(yield* recorded).toBe(settled)
  }).pipe(Effect.scoped), 120_000)

it.effect("two service instances: a ping.received subscription whose notification is lost still reaches the other within one worker pass", () =>
  Effect.gen(function*() {
    const db = yield* makeTestDatabase()
    const token = newAdminToken()
    const target = yield* receiver([200])
    const start = Effect.gen(function*() {
      const scope = yield* Scope.make()
      yield* Effect.addFinalizer(() => Scope.close(scope, Exit.void))
      return yield* Layer.buildWithScope(AppOn(db.url, token, { allowPrivateTargets: true, pingBurst: 100_000 }), scope)
    })
    const a = yield* start
    const b = yield* start
    const onA = <X, E>(effect: Effect.Effect<X, E, any>) => Effect.provide(effect, a) as Effect.Effect<X, E>
    const onB = <X, E>(effect: Effect.Effect<X, E, any>) => Effect.provide(effect, b) as Effect.Effect<X, E>
    const sql = onA(SqlClient.SqlClient)
    const monitor = yield* onA(createMonitor())
    const recorded = onA(Effect.flatMap(SqlClient.SqlClient, (sql) =>
      Effect.map(sql<{ n: number }>`select count(*)::int as n from ping_events where monitor_id = ${monitor.id}`, (rows) => rows[0]!.n)
    ).pipe(Effect.orDie))
    const pingB = Effect.gen(function*() {
      const r = yield* onB(call("POST", `/api/ping/${monitor.id}/success`, { body: { durationMs: 5 } }))
      expect(r.status).toBe(200)
    })
    /**
     * Changes a webhook in the database (as an operator's SQL would) with the wake-up trigger of
     * sql/0012 off for the statement: no instance is notified.
     */
    const changeSilently = (statement: (sql: SqlClient.SqlClient) => Effect.Effect<unknown, unknown>) =>
      Effect.flatMap(sql, (sql) =>
        sql.withTransaction(Effect.gen(function*() {
          yield* sql`alter table webhooks disable trigger webhooks_subscription_notify`
          yield* statement(sql)
          yield* sql`alter table webhooks enable trigger webhooks_subscription_notify`
        }))).pipe(Effect.orDie)
    const hook = yield* onA(createWebhook({ url: target.url, events: ["incident.opened"] }))
    yield* onA(flush)
    yield* onB(flush)
    yield* pingB
    expect(yield* recorded).toBe(0)

    // Subscribed without a notification; no flush either: B's own next pass (its 30 s safety poll,
    // on the TestClock) turns its pings' events on.
    yield* changeSilently((sql) => sql`update webhooks set events = array_append(events, 'ping.received') where id = ${hook.id}`)
    yield* pingB
    expect(yield* recorded).toBe(0)
    yield* TestClock.adjust("30 seconds")
    let on = false
    for (let i = 0; i < 150 && !on; i++) {
      yield* Effect.promise(() => new Promise((resolve) => setTimeout(resolve, 20)))
      const before = yield* recorded
      yield* pingB
      on = (yield* recorded) > before
    }
    expect(on).toBe(true)

    // Unsubscribed (deleted by hand) without a notification: one pass of B's worker turns them off.
    yield* changeSilently((sql) => sql`update webhooks set deleted_at = now() where id = ${hook.id}`)
    yield* onB(flush)
    const settled = yield* recorded
    for (let i = 0; i < 3; i++) yield* pingB
    expect(yield* recorded).toBe(settled)
  }).pipe(Effect.scoped), 120_000)
