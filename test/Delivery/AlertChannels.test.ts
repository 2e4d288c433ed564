import { describe, expect, it, layer } from "@effect/vitest"
import { SqlClient } from "@effect/sql"
import { Effect } from "effect"
import { AlertChannelTypes } from "../../src/Delivery/Api.js"
import { ALERT_CHANNEL_TYPES } from "../../src/Delivery/ChannelRegistry.js"
import { ORGANIZATION_QUOTAS } from "../../src/Delivery/Quotas.js"
import { Webhooks } from "../../src/Delivery/Webhooks.js"
import { call, createMonitor, createOrganization, TestServer } from "../support/fixture.js"
import { raise } from "../Incidents/support.js"
import { receiver } from "./receiver.js"
import { slackReceiver } from "./slackReceiver.js"

// The channels resource through the real server and the real HTTP client (docs/alerts.md).

const flush = Effect.flatMap(Webhooks, (w) => w.flush)
const PUBLIC_URL = "https://jobmon.example"

const create = (body: Record<string, unknown>) =>
  Effect.gen(function*() {
    const r = yield* call("POST", "/api/alerts/channels", { body })
    expect(r.status, r.text).toBe(201)
    return r.body as { id: string; [key: string]: any }
  })

/** A Slack-shaped url on a local receiver: the path's last segments are the credential. */
const slackUrl = (base: string) => `${base.replace(/\/hook$/, "")}/services/T0001/B0002/s3cr3tT0kenValue`

describe("the registry", () => {
  it("every registered type is a type of the API, and discord is the chat webhooks", () => {
    expect([...AlertChannelTypes].sort()).toEqual(["discord", ...ALERT_CHANNEL_TYPES.map((t) => t.type)].sort())
  })
})

layer(TestServer({ allowPrivateTargets: true, publicUrl: PUBLIC_URL }), { timeout: 120_000 })("alert channels", (it) => {
  it.effect("create, list, get, patch, delete a Slack channel; its url (a secret) is never shown back", () =>
    Effect.scoped(Effect.gen(function*() {
      const slack = yield* slackReceiver([200])
      const url = slackUrl(slack.url)
      const created = yield* create({ type: "slack", name: "ops", config: { url }, rules: { severity: ["HIGH"] } })
      expect(created).toMatchObject({
        type: "slack",
        name: "ops",
        rules: { monitorIds: [], tags: [], types: [], severity: ["HIGH"], events: [] },
        reminders: null,
        status: "active",
        statusReason: null
      })
      const masked = created.config.url as string
      expect(masked).toMatch(/\/services\/\*\*\*$/)
      const listed = yield* call("GET", "/api/alerts/channels")
      expect(listed.status).toBe(200)
      expect(listed.body.channels.map((c: any) => c.id)).toContain(created.id)
      expect(listed.text).not.toContain("s3cr3tT0kenValue")
      const got = yield* call("GET", `/api/alerts/channels/${created.id}`)
      expect(got.body).toEqual(created)
      // a PATCH that sends back the masked url keeps the real one
      const patched = yield* call("PATCH", `/api/alerts/channels/${created.id}`, {
        body: { name: "ops-2", config: { url: masked, mention: "<!here>" }, reminders: { everyMinutes: 30, max: 2 } }
      })
      expect(patched.status, patched.text).toBe(200)
      expect(patched.body).toMatchObject({ name: "ops-2", config: { url: masked, mention: "<!here>" }, reminders: { everyMinutes: 30, max: 2 } })
      expect(patched.text).not.toContain("s3cr3tT0kenValue")
      const sent = yield* call("POST", `/api/alerts/channels/${created.id}/test`)
      expect(sent.status, sent.text).toBe(200)
      expect(new URL(slack.received[0]!.url, "http://x").pathname).toBe("/services/T0001/B0002/s3cr3tT0kenValue")
      // null removes an optional field
      const unmentioned = yield* call("PATCH", `/api/alerts/channels/${created.id}`, { body: { config: { mention: null }, reminders: null } })
      expect(unmentioned.body.config).toEqual({ url: masked })
      expect(unmentioned.body.reminders).toBeNull()
      expect((yield* call("DELETE", `/api/alerts/channels/${created.id}`)).status).toBe(204)
      expect((yield* call("GET", `/api/alerts/channels/${created.id}`)).status).toBe(404)
      expect((yield* call("GET", "/api/alerts/channels")).body.channels.map((c: any) => c.id)).not.toContain(created.id)
    })))

  it.effect("validation: 400s name the field", () =>
    Effect.gen(function*() {
      const monitor = yield* createMonitor()
      const cases: ReadonlyArray<[Record<string, unknown>, string]> = [
        [{ type: "pager", config: {} }, "type"],
        [{ type: "slack", config: {} }, "config.url"],
        [{ type: "slack", config: { url: "ftp://example.com/x" } }, "config.url"],
        [{ type: "slack", config: { url: "http://127.0.0.1:1/a\u0000b" } }, "config.url"],
        [{ type: "slack", name: "a\u0000b", config: { url: "http://127.0.0.1:1/x" } }, "name"],
        [{ type: "slack", name: "", config: { url: "http://127.0.0.1:1/x" } }, "name"],
        [{ type: "slack", config: { url: "http://127.0.0.1:1/x", mention: "" } }, "config.mention"],
        [{ type: "slack", config: { url: "http://127.0.0.1:1/x" }, rules: { monitorIds: ["7d1e2c4a-0000-4000-8000-00000000abcd"] } }, "rules.monitorIds.0"],
        [{ type: "slack", config: { url: "http://127.0.0.1:1/x" }, rules: { monitorIds: [monitor.id, "nope"] } }, "rules.monitorIds.1"],
        [{ type: "slack", config: { url: "http://127.0.0.1:1/x" }, rules: { events: ["incident.note_added"] } }, "rules.events.0"],
        [{ type: "slack", config: { url: "http://127.0.0.1:1/x" }, rules: { tags: ["a\u0000"] } }, "rules.tags.0"],
        [{ type: "slack", config: { url: "http://127.0.0.1:1/x" }, reminders: { everyMinutes: 0, max: 3 } }, "reminders.everyMinutes"],
        [{ type: "slack", config: { url: "http://127.0.0.1:1/x" }, reminders: { everyMinutes: 5, max: 101 } }, "reminders.max"],
        // this server has no SMTP_URL
        [{ type: "email", config: { to: ["oncall@example.com"] } }, "type"],
        [{ type: "discord", config: { url: "http://127.0.0.1:1/x" } }, "type"]
      ]
      for (const [body, path] of cases) {
        const r = yield* call("POST", "/api/alerts/channels", { body })
        expect(r.status, JSON.stringify(body)).toBe(400)
        expect(r.body.path, JSON.stringify(body)).toBe(path)
      }
      const email = yield* call("POST", "/api/alerts/channels", { body: { type: "email", config: { to: ["a@example.com"] } } })
      expect(email.body.message).toContain("SMTP_URL")
      const c = yield* create({ type: "slack", config: { url: "http://127.0.0.1:1/x" } })
      expect(c.name).toBe("slack")
      const bad = yield* call("PATCH", `/api/alerts/channels/${c.id}`, { body: { config: { url: "not a url" } } })
      expect([bad.status, bad.body.path]).toEqual([400, "config.url"])
      const badRules = yield* call("PATCH", `/api/alerts/channels/${c.id}`, { body: { rules: { types: ["RESOLVED"] } } })
      expect([badRules.status, badRules.body.path]).toEqual([400, "rules.types.0"])
      expect((yield* call("GET", "/api/alerts/channels/not-a-uuid")).status).toBe(404)
      expect((yield* call("DELETE", `/api/alerts/channels/${c.id}`)).status).toBe(204)
    }))

  it.effect("another organization's channel is 404; quotas: at most 100 a organization, 409 past it", () =>
    Effect.gen(function*() {
      const other = yield* createOrganization("channels-other")
      const theirs = yield* call("POST", "/api/alerts/channels", { token: other.token, body: { type: "slack", config: { url: "http://127.0.0.1:1/x" } } })
      expect(theirs.status).toBe(201)
      for (const [method, path] of [["GET", ""], ["PATCH", ""], ["DELETE", ""], ["POST", "/test"], ["GET", "/deliveries"]] as const) {
        const r = yield* call(method, `/api/alerts/channels/${theirs.body.id}${path}`, method === "PATCH" ? { body: { name: "x" } } : {})
        expect(r.status, `${method} ${path}`).toBe(404)
      }
      expect((yield* call("GET", "/api/alerts/channels")).body.channels.map((c: any) => c.id)).not.toContain(theirs.body.id)
      const limit = ORGANIZATION_QUOTAS.alertChannels
      const sql = yield* SqlClient.SqlClient
      const [{ n }] = yield* sql<{ n: number }>`select count(*)::int as n from alert_channels where org_id = ${other.orgId} and deleted_at is null`
      yield* Effect.forEach(Array.from({ length: limit - n }, (_, i) => i), (i) =>
        call("POST", "/api/alerts/channels", { token: other.token, body: { type: "slack", name: `s${i}`, config: { url: "http://127.0.0.1:1/x" } } }), {
        concurrency: 8
      })
      const over = yield* call("POST", "/api/alerts/channels", { token: other.token, body: { type: "slack", config: { url: "http://127.0.0.1:1/x" } } })
      expect(over.status).toBe(409)
      expect(over.body.message).toContain(`${limit} alert channels`)
    }))

  it.effect("chat webhooks are listed as type discord: read, tested, their deliveries listed and deleted here; changed at their own path", () =>
    Effect.scoped(Effect.gen(function*() {
      const chat = yield* receiver([204])
      const made = yield* call("POST", "/api/alerts/chat/webhooks", {
        body: { url: `${chat.url.replace(/\/hook$/, "")}/api/webhooks/123/discordSecretToken`, name: "discord-ops", rules: { types: ["FAIL"] } }
      })
      expect(made.status).toBe(201)
      const listed = yield* call("GET", "/api/alerts/channels")
      const channel = listed.body.channels.find((c: any) => c.id === made.body.id)
      expect(channel).toMatchObject({
        type: "discord",
        name: "discord-ops",
        config: { url: expect.stringMatching(/\/api\/webhooks\/123\/\*\*\*$/), mention: null },
        rules: { types: ["FAIL"], severity: [], monitorIds: [], tags: [], events: ["incident.opened", "incident.resolved"] },
        reminders: null,
        status: "active"
      })
      expect(listed.text).not.toContain("discordSecretToken")
      expect((yield* call("GET", `/api/alerts/channels/${made.body.id}`)).body).toEqual(channel)
      const patch = yield* call("PATCH", `/api/alerts/channels/${made.body.id}`, { body: { name: "x" } })
      expect(patch.status).toBe(400)
      expect(patch.body.message).toContain("/api/alerts/chat/webhooks")
      const tested = yield* call("POST", `/api/alerts/channels/${made.body.id}/test`)
      expect(tested.status).toBe(200)
      expect(tested.body).toMatchObject({ sent: true, answer: "HTTP 204", channel: { status: "active" }, delivery: { event: "channel.test", status: "succeeded" } })
      expect(chat.received[0]!.body.embeds[0].title).toBe("Test message: discord-ops")
      const list = yield* call("GET", `/api/alerts/channels/${made.body.id}/deliveries`)
      expect(list.body.deliveries.map((d: any) => d.event)).toEqual(["channel.test"])
      expect((yield* call("DELETE", `/api/alerts/channels/${made.body.id}`)).status).toBe(204)
      expect((yield* call("GET", `/api/alerts/chat/webhooks/${made.body.id}`)).status).toBe(404)
    })))

  it.effect("a provider that says the channel is gone: invalid with the reason, nothing more sent until it is edited", () =>
    Effect.scoped(Effect.gen(function*() {
      let gone = true
      const slack = yield* slackReceiver(() => (gone ? { status: 404, body: "no_service" } : 200))
      const a = yield* createMonitor({ name: "gone a" })
      const b = yield* createMonitor({ name: "gone b" })
      const channel = yield* create({ type: "slack", name: "gone", config: { url: slackUrl(slack.url) }, rules: { monitorIds: [a.id, b.id] } })
      yield* raise(a.id)
      yield* flush
      expect(slack.received).toHaveLength(1)
      const got = (yield* call("GET", `/api/alerts/channels/${channel.id}`)).body
      expect(got.status).toBe("invalid")
      expect(got.statusReason).toContain("no_service")
      const [first] = (yield* call("GET", `/api/alerts/channels/${channel.id}/deliveries`)).body.deliveries
      expect(first).toMatchObject({ event: "incident.opened", status: "failed", lastStatusCode: 404, lastError: "HTTP 404: no_service" })
      yield* raise(b.id)
      yield* flush
      expect(slack.received).toHaveLength(1)
      // the test endpoint says what the provider answered
      const tested = yield* call("POST", `/api/alerts/channels/${channel.id}/test`)
      expect(tested.body).toMatchObject({ sent: false, answer: "HTTP 404: no_service", channel: { status: "invalid" } })
      gone = false
      const edited = yield* call("PATCH", `/api/alerts/channels/${channel.id}`, { body: { name: "back" } })
      expect(edited.body).toMatchObject({ status: "active", statusReason: null })
      yield* raise(b.id, { type: "LATE", severity: "MEDIUM", details: {} })
      yield* flush
      expect(slack.received).toHaveLength(3)
      expect(slack.received[2]!.body.text).toBe("LATE: gone b")
      const tested2 = yield* call("POST", `/api/alerts/channels/${channel.id}/test`)
      expect(tested2.body).toMatchObject({ sent: true, answer: "HTTP 200: ok", delivery: { status: "succeeded", attempts: 1 } })
      expect(slack.refused).toEqual([])
    })))
})
