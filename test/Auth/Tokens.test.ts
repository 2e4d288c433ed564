import { expect, layer } from "@effect/vitest"
import { SqlClient } from "@effect/sql"
import { Effect } from "effect"
import { call, createMonitor, createOrganization, createToken, sendPing, TestServer, validMonitor } from "../support/fixture.js"

/** GET /api/tokens until the token shows a lastUsedAt (it is written in the background, within a second or two). */
const lastUsedAt = (tokenId: string, until: (value: string | null) => boolean) =>
  Effect.gen(function*() {
    let value: string | null = null
    for (let i = 0; i < 50; i++) {
      const list = yield* call("GET", "/api/tokens")
      value = list.body.tokens.find((t: any) => t.id === tokenId)?.lastUsedAt ?? null
      if (until(value)) return value
      yield* Effect.sleep("100 millis")
    }
    return value
  })

layer(TestServer(), { excludeTestServices: true, timeout: 120_000 })("tokens and scopes", (it) => {
  it.effect("the bootstrap admin token works and the health check is public", () =>
    Effect.gen(function*() {
      const health = yield* call("GET", "/healthz", { token: null })
      expect(health.status).toBe(200)
      expect(health.body.status).toBe("ok")
      const list = yield* call("GET", "/api/monitors")
      expect(list.status).toBe(200)
      expect(list.headers["x-api-version"]).toBe("1")
    }))

  it.effect("a request without a token, or with an unknown one, is 401 with a Bearer challenge", () =>
    Effect.gen(function*() {
      const none = yield* call("GET", "/api/monitors", { token: null })
      expect(none.status).toBe(401)
      expect(none.body._tag).toBe("Unauthorized")
      expect(none.body.message).toMatch(/Bearer/)
      expect(none.headers["www-authenticate"]).toMatch(/^Bearer/)
      const unknown = yield* call("GET", "/api/monitors", { token: "jmt_notarealtokenatallnotarealtoken" })
      expect(unknown.status).toBe(401)
      expect(unknown.body.message).toMatch(/not valid/)
      const malformed = yield* call("GET", "/api/monitors", { headers: { authorization: "Basic abc" }, token: null })
      expect(malformed.status).toBe(401)
    }))

  it.effect("token create shows the secret once; the list never does", () =>
    Effect.gen(function*() {
      const created = yield* call("POST", "/api/tokens", { body: { name: "ci", scope: "write" } })
      expect(created.status).toBe(201)
      expect(created.body.token).toMatch(/^jmt_[A-Za-z0-9_-]{32}$/)
      expect(Object.keys(created.body).sort()).toEqual(["createdAt", "expiresAt", "id", "name", "scope", "token"])
      const list = yield* call("GET", "/api/tokens")
      expect(list.status).toBe(200)
      const listed = list.body.tokens.find((t: any) => t.id === created.body.id)
      expect(listed).toMatchObject({ name: "ci", scope: "write" })
      expect(list.text).not.toContain(created.body.token)
      // Only a hash is stored.
      const sql = yield* SqlClient.SqlClient
      const rows = yield* sql<{ n: number }>`select count(*)::int as n from api_tokens where token_prefix = ${created.body.token}`
      expect(rows[0]!.n).toBe(0)
    }))

  it.effect("a read token can GET but not POST (403); a ping token cannot list monitors (403)", () =>
    Effect.gen(function*() {
      const read = yield* createToken("read")
      expect((yield* call("GET", "/api/monitors", { token: read.token })).status).toBe(200)
      const post = yield* call("POST", "/api/monitors", { token: read.token, body: validMonitor() })
      expect(post.status).toBe(403)
      expect(post.body._tag).toBe("Forbidden")
      expect(post.body.message).toMatch(/scope 'read'/)
      const ping = yield* createToken("ping")
      const list = yield* call("GET", "/api/monitors", { token: ping.token })
      expect(list.status).toBe(403)
      const write = yield* createToken("write")
      expect((yield* call("POST", "/api/monitors", { token: write.token, body: validMonitor() })).status).toBe(201)
      // Only admin manages tokens.
      expect((yield* call("GET", "/api/tokens", { token: write.token })).status).toBe(403)
      expect((yield* call("POST", "/api/tokens", { token: write.token, body: { name: "x", scope: "admin" } })).status)
        .toBe(403)
    }))

  it.effect("a revoked token stops working at once", () =>
    Effect.gen(function*() {
      const token = yield* createToken("read")
      expect((yield* call("GET", "/api/monitors", { token: token.token })).status).toBe(200)
      const revoked = yield* call("DELETE", `/api/tokens/${token.id}`)
      expect(revoked.status).toBe(204)
      const after = yield* call("GET", "/api/monitors", { token: token.token })
      expect(after.status).toBe(401)
      expect(after.body.message).toMatch(/revoked/)
      expect((yield* call("DELETE", `/api/tokens/${token.id}`)).status).toBe(404)
      expect((yield* call("DELETE", `/api/tokens/not-a-uuid`)).status).toBe(404)
    }))

  it.effect("a token revoked directly in the database (another instance) stops within a second", () =>
    Effect.gen(function*() {
      const token = yield* createToken("read")
      expect((yield* call("GET", "/api/monitors", { token: token.token })).status).toBe(200)
      const sql = yield* SqlClient.SqlClient
      yield* sql`update api_tokens set revoked_at = now() where id = ${token.id}`
      yield* Effect.sleep("1 second")
      expect((yield* call("GET", "/api/monitors", { token: token.token })).status).toBe(401)
    }))

  it.effect("an expired token is 401; expiry must be a future ISO timestamp", () =>
    Effect.gen(function*() {
      const soon = new Date(Date.now() + 1500).toISOString()
      const token = yield* createToken("read", { expiresAt: soon })
      expect((yield* call("GET", "/api/monitors", { token: token.token })).status).toBe(200)
      yield* Effect.sleep("2500 millis")
      const after = yield* call("GET", "/api/monitors", { token: token.token })
      expect(after.status).toBe(401)
      expect(after.body.message).toMatch(/expired/)
      const past = yield* call("POST", "/api/tokens", { body: { name: "x", scope: "read", expiresAt: "2001-01-01T00:00:00Z" } })
      expect(past.status).toBe(400)
      expect(past.body.path).toBe("expiresAt")
      const junk = yield* call("POST", "/api/tokens", { body: { name: "x", scope: "read", expiresAt: "tomorrow" } })
      expect(junk.status).toBe(400)
      const scope = yield* call("POST", "/api/tokens", { body: { name: "x", scope: "root" } })
      expect(scope.status).toBe(400)
      expect(scope.body._tag).toBe("ValidationError")
      expect(scope.body.path).toBe("scope")
    }))

  it.effect("another organization's token sees none of this organization's monitors (404, never 403)", () =>
    Effect.gen(function*() {
      const mine = yield* call("POST", "/api/monitors", { body: validMonitor({ name: "mine" }) })
      expect(mine.status).toBe(201)
      const other = yield* createOrganization("acme")
      for (const [method, path] of [
        ["GET", `/api/monitors/${mine.body.id}`],
        ["PATCH", `/api/monitors/${mine.body.id}`],
        ["DELETE", `/api/monitors/${mine.body.id}`],
        ["POST", `/api/monitors/${mine.body.id}/pause`]
      ] as const) {
        const response = yield* call(method, path, { token: other.token, body: method === "PATCH" ? { name: "x" } : undefined })
        expect(response.status, `${method} ${path}`).toBe(404)
        expect(response.body._tag).toBe("NotFound")
      }
      const list = yield* call("GET", "/api/monitors", { token: other.token })
      expect(list.body.total).toBe(0)
      // The other organization cannot revoke this one's tokens either.
      const tokens = yield* call("GET", "/api/tokens")
      const victim = tokens.body.tokens[0].id
      expect((yield* call("DELETE", `/api/tokens/${victim}`, { token: other.token })).status).toBe(404)
    }))

  it.effect("lastUsedAt is recorded for a token used on the API and on the ping intake, at most once a minute", () =>
    Effect.gen(function*() {
      const read = yield* createToken("read")
      const ping = yield* createToken("ping")
      const listed = yield* call("GET", "/api/tokens")
      expect(listed.body.tokens.find((t: any) => t.id === read.id).lastUsedAt).toBeNull()

      expect((yield* call("GET", "/api/monitors", { token: read.token })).status).toBe(200)
      const first = yield* lastUsedAt(read.id, (v) => v !== null)
      expect(first).not.toBeNull()
      expect(Math.abs(Date.parse(first!) - Date.now())).toBeLessThan(60_000)

      const monitor = yield* createMonitor()
      expect((yield* sendPing(monitor.id, "success", { token: ping.token, body: {} })).status).toBe(200)
      expect(yield* lastUsedAt(ping.id, (v) => v !== null)).not.toBeNull()

      // Used again within the minute: no new write.
      expect((yield* call("GET", "/api/monitors", { token: read.token })).status).toBe(200)
      yield* Effect.sleep("1500 millis")
      expect(yield* lastUsedAt(read.id, () => true)).toBe(first)
    }))

  it.effect("an organization has at most 500 active tokens: the next is 409 until one is revoked; expired ones do not count", () =>
    Effect.gen(function*() {
      const org = yield* createOrganization("token-quota")
      const sql = yield* SqlClient.SqlClient
      // With the organization's own admin token, 499 active tokens and one expired one.
      yield* sql`
        insert into api_tokens (org_id, name, scope, token_hash, token_prefix, expires_at)
        select ${org.orgId}, 'fleet ' || i, 'ping', sha256(convert_to('quota-' || i, 'UTF8')), 'jmt_quota',
               case when i = 0 then now() - interval '1 day' end
        from generate_series(0, 499) i`
      const refused = yield* call("POST", "/api/tokens", { token: org.token, body: { name: "one too many", scope: "ping" } })
      expect(refused.status).toBe(409)
      expect(refused.body._tag).toBe("Conflict")
      expect(refused.body.message).toMatch(/already has 500 active tokens/)
      expect(refused.body.message).toMatch(/MAX_ACTIVE_TOKENS_PER_ORG/)
      // Another organization is not affected.
      expect((yield* call("POST", "/api/tokens", { body: { name: "default org", scope: "ping" } })).status).toBe(201)

      const [victim] = yield* sql<{ id: string }>`select id from api_tokens where org_id = ${org.orgId} and name = 'fleet 1'`
      expect((yield* call("DELETE", `/api/tokens/${victim!.id}`, { token: org.token })).status).toBe(204)
      const created = yield* call("POST", "/api/tokens", { token: org.token, body: { name: "now there is room", scope: "ping" } })
      expect(created.status).toBe(201)
    }))

  it.effect("a token name with a NUL is a 400 that names the field", () =>
    Effect.gen(function*() {
      const response = yield* call("POST", "/api/tokens", { body: { name: "ci\u0000", scope: "read" } })
      expect(response.status).toBe(400)
      expect(response.body).toMatchObject({ _tag: "ValidationError", path: "name" })
    }))
})
