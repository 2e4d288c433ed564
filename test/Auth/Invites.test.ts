import { expect, layer } from "@effect/vitest"
import { SqlClient } from "@effect/sql"
import { Effect } from "effect"
import { call, cookiePair, createOrganization, createToken, createUser, signIn, TestServer } from "../support/fixture.js"

const PASSWORD = "a long enough password"

layer(TestServer(), { excludeTestServices: true, timeout: 120_000 })("invites and users", (it) => {
  it.effect("an admin invites by email; accepting creates the user in the inviter's organization and signs them in", () =>
    Effect.gen(function*() {
      const invite = yield* call("POST", "/api/auth/invites", { body: { email: "new.person@example.com", name: "New Person" } })
      expect(invite.status).toBe(201)
      expect(invite.body).toMatchObject({ email: "new.person@example.com", name: "New Person", role: "admin" })
      expect(invite.body.token).toMatch(/^jmi_[A-Za-z0-9_-]{32}$/)
      const days = (Date.parse(invite.body.expiresAt) - Date.parse(invite.body.createdAt)) / 86_400_000
      expect(days).toBe(7)
      const sql = yield* SqlClient.SqlClient
      const stored = yield* sql<{ n: number }>`select count(*)::int as n from invites where encode(token_hash, 'escape') like ${`%${invite.body.token}%`}`
      expect(stored[0]!.n).toBe(0)

      const accepted = yield* call("POST", "/api/auth/invites/accept", {
        token: null,
        body: { token: invite.body.token, name: "Nova", password: PASSWORD }
      })
      expect(accepted.status).toBe(200)
      expect(accepted.body.user).toMatchObject({ email: "new.person@example.com", name: "Nova" })
      expect(accepted.headers["set-cookie"]).toMatch(/^jobmon_session=[A-Za-z0-9_-]{43}; .*HttpOnly/)
      const me = yield* call("GET", "/api/auth/me", { token: null, headers: { cookie: cookiePair(accepted.headers["set-cookie"]) } })
      expect(me.status).toBe(200)
      expect(me.body.user.id).toBe(accepted.body.user.id)
      const [org] = yield* sql<{ id: string }>`select id from organizations where slug = 'default'`
      expect(accepted.body.user.orgId).toBe(org!.id)
      // The same token cannot be used twice; the new user can sign in with the password.
      const again = yield* call("POST", "/api/auth/invites/accept", { token: null, body: { token: invite.body.token, name: "X", password: PASSWORD } })
      expect(again.status).toBe(400)
      expect(again.body._tag).toBe("ValidationError")
      expect(again.body.message).toMatch(/already been used/)
      const session = yield* signIn("new.person@example.com", PASSWORD)
      expect(session.user.id).toBe(accepted.body.user.id)

      const users = yield* call("GET", "/api/users")
      expect(users.status).toBe(200)
      const listed = users.body.users.find((u: any) => u.id === accepted.body.user.id)
      expect(listed).toEqual({ id: accepted.body.user.id, email: "new.person@example.com", name: "Nova", createdAt: expect.any(String) })
      expect(users.text).not.toMatch(/scrypt|password/)
    }))

  it.effect("unknown, expired and badly formed invites are refused with a message that says why", () =>
    Effect.gen(function*() {
      const unknown = yield* call("POST", "/api/auth/invites/accept", { token: null, body: { token: "jmi_nothing", name: "X", password: PASSWORD } })
      expect(unknown.status).toBe(404)
      expect(unknown.body._tag).toBe("NotFound")
      expect(unknown.body.message).toMatch(/invite token is unknown/)

      const invite = yield* call("POST", "/api/auth/invites", { body: { email: "late@example.com" } })
      expect(invite.status).toBe(201)
      expect(invite.body.name).toBeNull()
      const short = yield* call("POST", "/api/auth/invites/accept", { token: null, body: { token: invite.body.token, name: "Late", password: "short" } })
      expect(short.status).toBe(400)
      expect(short.body).toMatchObject({ _tag: "ValidationError", path: "password" })
      expect(short.body.message).toMatch(/at least 8 characters/)
      const sql = yield* SqlClient.SqlClient
      yield* sql`update invites set expires_at = now() - interval '1 second' where id = ${invite.body.id}`
      const expired = yield* call("POST", "/api/auth/invites/accept", { token: null, body: { token: invite.body.token, name: "Late", password: PASSWORD } })
      expect(expired.status).toBe(400)
      expect(expired.body.message).toMatch(/expired/)

      const badEmail = yield* call("POST", "/api/auth/invites", { body: { email: "not-an-email" } })
      expect(badEmail.status).toBe(400)
      expect(badEmail.body).toMatchObject({ _tag: "ValidationError", path: "email" })
      const missing = yield* call("POST", "/api/auth/invites", { body: {} })
      expect(missing.status).toBe(400)
    }))

  it.effect("an existing email is a 409; only admins invite; a signed-in admin invites with the CSRF header", () =>
    Effect.gen(function*() {
      yield* createUser({ email: "taken@example.com", password: PASSWORD })
      const taken = yield* call("POST", "/api/auth/invites", { body: { email: "TAKEN@example.com" } })
      expect(taken.status).toBe(409)
      expect(taken.body._tag).toBe("Conflict")

      const write = yield* createToken("write")
      const byWrite = yield* call("POST", "/api/auth/invites", { token: write.token, body: { email: "w@example.com" } })
      expect(byWrite.status).toBe(403)
      const read = yield* createToken("read")
      expect((yield* call("GET", "/api/users", { token: read.token })).status).toBe(200)

      const session = yield* signIn("taken@example.com", PASSWORD)
      const noCsrf = yield* call("POST", "/api/auth/invites", { token: null, headers: { cookie: session.cookie }, body: { email: "s@example.com" } })
      expect(noCsrf.status).toBe(403)
      const bySession = yield* call("POST", "/api/auth/invites", {
        token: null,
        headers: { cookie: session.cookie, "x-csrf-token": session.csrfToken },
        body: { email: "s@example.com", role: "member" }
      })
      expect(bySession.status).toBe(201)
      const sql = yield* SqlClient.SqlClient
      const [row] = yield* sql<{ invited_by: string }>`select invited_by from invites where id = ${bySession.body.id}`
      expect(row!.invited_by).toBe(session.user.id)

      // A member acts with the write scope: monitors yes, tokens and invites no.
      const accepted = yield* call("POST", "/api/auth/invites/accept", { token: null, body: { token: bySession.body.token, name: "Sam", password: PASSWORD } })
      expect(accepted.status).toBe(200)
      const member = { cookie: cookiePair(accepted.headers["set-cookie"]), "x-csrf-token": accepted.body.csrfToken }
      expect((yield* call("GET", "/api/monitors", { token: null, headers: member })).status).toBe(200)
      const tokens = yield* call("GET", "/api/tokens", { token: null, headers: member })
      expect(tokens.status).toBe(403)
      expect(tokens.body.message).toMatch(/role member/)
    }))

  it.effect("users of another organization are not listed and sign in to their own organization", () =>
    Effect.gen(function*() {
      const other = yield* createOrganization("acme")
      yield* createUser({ email: "wile@acme.example", password: PASSWORD, orgId: other.orgId })
      const session = yield* signIn("wile@acme.example", PASSWORD)
      expect(session.user.orgId).toBe(other.orgId)
      const mine = yield* call("GET", "/api/users")
      expect(mine.body.users.map((u: any) => u.email)).not.toContain("wile@acme.example")
      const theirs = yield* call("GET", "/api/users", { token: null, headers: { cookie: session.cookie } })
      expect(theirs.body.users.map((u: any) => u.email).sort()).toEqual(["acme@example.test", "wile@acme.example"])
    }))

  it.effect("an organization has at most 50 pending invites: the next is 409 until one is accepted or expires", () =>
    Effect.gen(function*() {
      const org = yield* createOrganization("invite-quota")
      const sql = yield* SqlClient.SqlClient
      yield* sql`
        insert into invites (org_id, email, token_hash, created_at, expires_at, accepted_at)
        select ${org.orgId}, 'pending' || i || '@example.com', sha256(convert_to('invite-' || i, 'UTF8')), now(),
               now() + case when i = 0 then interval '-1 day' else interval '7 days' end,
               case when i = 1 then now() end
        from generate_series(0, 51) i`
      const refused = yield* call("POST", "/api/auth/invites", { token: org.token, body: { email: "one.more@example.com" } })
      expect(refused.status).toBe(409)
      expect(refused.body._tag).toBe("Conflict")
      expect(refused.body.message).toMatch(/already has 50 pending invites/)
      yield* sql`update invites set expires_at = now() - interval '1 second' where org_id = ${org.orgId} and email = 'pending2@example.com'`
      expect((yield* call("POST", "/api/auth/invites", { token: org.token, body: { email: "one.more@example.com" } })).status).toBe(201)
    }))

  it.effect("a NUL in an invite's email or name, or in the name given on acceptance, is a 400 that names the field", () =>
    Effect.gen(function*() {
      const badEmail = yield* call("POST", "/api/auth/invites", { body: { email: "nul\u0000@example.com" } })
      expect(badEmail.status).toBe(400)
      expect(badEmail.body).toMatchObject({ _tag: "ValidationError", path: "email" })
      const badName = yield* call("POST", "/api/auth/invites", { body: { email: "nul.name@example.com", name: "N\u0000" } })
      expect(badName.status).toBe(400)
      expect(badName.body).toMatchObject({ _tag: "ValidationError", path: "name" })
      const invite = yield* call("POST", "/api/auth/invites", { body: { email: "nul.accept@example.com" } })
      expect(invite.status).toBe(201)
      const accept = yield* call("POST", "/api/auth/invites/accept", {
        token: null,
        body: { token: invite.body.token, name: "Nul\u0000", password: PASSWORD }
      })
      expect(accept.status).toBe(400)
      expect(accept.body).toMatchObject({ _tag: "ValidationError", path: "name" })
    }))
})
