import { expect, layer } from "@effect/vitest"
import { SqlClient } from "@effect/sql"
import { Effect, TestClock, TestContext } from "effect"
import { Accounts } from "../../src/Auth/Accounts.js"
import { createHash } from "node:crypto"
import { call, cookiePair, createMonitor, createUser, sendPing, signIn, TestServer, validMonitor } from "../support/fixture.js"

const PASSWORD = "correct horse battery"

layer(TestServer(), { excludeTestServices: true, timeout: 120_000 })("dashboard sessions", (it) => {
  it.effect("sign-in answers the user and a CSRF token and sets an HttpOnly, SameSite=Lax session cookie stored only hashed", () =>
    Effect.gen(function*() {
      const user = yield* createUser({ email: "Ada@Example.com", password: PASSWORD, name: "Ada Lovelace" })
      const response = yield* call("POST", "/api/auth/login", { token: null, body: { email: "ada@example.com", password: PASSWORD } })
      expect(response.status).toBe(200)
      expect(response.body.user).toEqual({ id: user.id, email: "Ada@Example.com", name: "Ada Lovelace", orgId: expect.any(String) })
      expect(response.body.csrfToken).toMatch(/^[A-Za-z0-9_-]{32}$/)
      const setCookie = response.headers["set-cookie"]!
      expect(setCookie).toMatch(/^jobmon_session=[A-Za-z0-9_-]{43};/)
      expect(setCookie).toMatch(/; HttpOnly/)
      expect(setCookie).toMatch(/; SameSite=Lax/)
      expect(setCookie).toMatch(/; Path=\//)
      expect(setCookie).not.toMatch(/Secure/)
      const secret = cookiePair(setCookie).split("=")[1]!
      const sql = yield* SqlClient.SqlClient
      const rows = yield* sql<{ secret_hash: Buffer }>`select secret_hash from sessions where user_id = ${user.id}`
      expect(rows.map((r) => r.secret_hash.toString("hex"))).toContain(createHash("sha256").update(secret).digest("hex"))
      const plain = yield* sql<{ n: number }>`select count(*)::int as n from sessions s where encode(s.secret_hash, 'escape') like ${`%${secret}%`}`
      expect(plain[0]!.n).toBe(0)
      const stored = yield* sql<{ password_hash: string }>`select password_hash from users where id = ${user.id}`
      expect(stored[0]!.password_hash).toMatch(/^scrypt\$131072\$8\$1\$[A-Za-z0-9_-]{22}\$[A-Za-z0-9_-]{43}$/)
    }))

  it.effect("a wrong password and an unknown email get the same 401", () =>
    Effect.gen(function*() {
      yield* createUser({ email: "grace@example.com", password: PASSWORD })
      const wrong = yield* call("POST", "/api/auth/login", { token: null, body: { email: "grace@example.com", password: "not the password" } })
      const unknown = yield* call("POST", "/api/auth/login", { token: null, body: { email: "nobody@example.com", password: PASSWORD } })
      for (const response of [wrong, unknown]) {
        expect(response.status).toBe(401)
        expect(response.body._tag).toBe("Unauthorized")
        expect(response.headers["set-cookie"]).toBeUndefined()
      }
      expect(wrong.body.message).toBe(unknown.body.message)
      const malformed = yield* call("POST", "/api/auth/login", { token: null, body: { email: "grace@example.com" } })
      expect(malformed.status).toBe(400)
      expect(malformed.body._tag).toBe("ValidationError")
    }))

  it.effect("me answers the user with a session cookie and 401 without one; logout ends the session and clears the cookie", () =>
    Effect.gen(function*() {
      const user = yield* createUser({ email: "linus@example.com", password: PASSWORD, name: "Linus" })
      const session = yield* signIn("linus@example.com", PASSWORD)
      const me = yield* call("GET", "/api/auth/me", { token: null, headers: { cookie: session.cookie } })
      expect(me.status).toBe(200)
      expect(me.body).toEqual({ user: session.user, csrfToken: session.csrfToken })
      expect(me.body.user.id).toBe(user.id)
      const anonymous = yield* call("GET", "/api/auth/me", { token: null })
      expect(anonymous.status).toBe(401)
      expect(anonymous.body._tag).toBe("Unauthorized")
      const bogus = yield* call("GET", "/api/auth/me", { token: null, headers: { cookie: "jobmon_session=forged" } })
      expect(bogus.status).toBe(401)

      const noCsrf = yield* call("POST", "/api/auth/logout", { token: null, headers: { cookie: session.cookie } })
      expect(noCsrf.status).toBe(403)
      expect(noCsrf.headers["set-cookie"]).toBeUndefined()
      expect((yield* call("GET", "/api/auth/me", { token: null, headers: { cookie: session.cookie } })).status).toBe(200)
      const out = yield* call("POST", "/api/auth/logout", {
        token: null,
        headers: { cookie: session.cookie, "x-csrf-token": session.csrfToken }
      })
      expect(out.status).toBe(204)
      expect(out.headers["set-cookie"]).toMatch(/^jobmon_session=; Max-Age=0;/)
      const after = yield* call("GET", "/api/auth/me", { token: null, headers: { cookie: session.cookie } })
      expect(after.status).toBe(401)
      const sql = yield* SqlClient.SqlClient
      const left = yield* sql<{ n: number }>`select count(*)::int as n from sessions where user_id = ${user.id}`
      expect(left[0]!.n).toBe(0)
    }))

  it.effect("the session cookie works on the monitors API; changes need the X-CSRF-Token header", () =>
    Effect.gen(function*() {
      yield* createUser({ email: "margaret@example.com", password: PASSWORD })
      const session = yield* signIn("margaret@example.com", PASSWORD)
      const list = yield* call("GET", "/api/monitors", { token: null, headers: { cookie: session.cookie } })
      expect(list.status).toBe(200)
      expect(Array.isArray(list.body.monitors)).toBe(true)

      const missing = yield* call("POST", "/api/monitors", { token: null, headers: { cookie: session.cookie }, body: validMonitor() })
      expect(missing.status).toBe(403)
      expect(missing.body._tag).toBe("Forbidden")
      expect(missing.body.message).toMatch(/CSRF token is missing/)
      const wrong = yield* call("POST", "/api/monitors", {
        token: null,
        headers: { cookie: session.cookie, "x-csrf-token": "x".repeat(32) },
        body: validMonitor()
      })
      expect(wrong.status).toBe(403)
      expect(wrong.body.message).toMatch(/CSRF token is wrong/)
      const created = yield* call("POST", "/api/monitors", {
        token: null,
        headers: { cookie: session.cookie, "x-csrf-token": session.csrfToken },
        body: validMonitor({ name: "made in the dashboard" })
      })
      expect(created.status).toBe(201)
      expect(created.body.name).toBe("made in the dashboard")
      // Tokens need admin: a signed-in admin may list them.
      const tokens = yield* call("GET", "/api/tokens", { token: null, headers: { cookie: session.cookie } })
      expect(tokens.status).toBe(200)
    }))

  it.effect("a Bearer header wins over the cookie; the ping intake refuses the cookie", () =>
    Effect.gen(function*() {
      yield* createUser({ email: "barbara@example.com", password: PASSWORD })
      const session = yield* signIn("barbara@example.com", PASSWORD)
      const badBearer = yield* call("GET", "/api/monitors", { token: "jmt_notarealtokenatallnotarealtoken", headers: { cookie: session.cookie } })
      expect(badBearer.status).toBe(401)
      expect(badBearer.body.message).toMatch(/access token is not valid/)
      // With a valid Bearer, no CSRF header is needed even though a cookie is sent.
      const bearerPost = yield* call("POST", "/api/monitors", { headers: { cookie: session.cookie }, body: validMonitor() })
      expect(bearerPost.status).toBe(201)

      const monitor = yield* createMonitor()
      const headers = { cookie: session.cookie, "x-csrf-token": session.csrfToken }
      const cookiePing = yield* call("POST", `/api/ping/${monitor.id}/success`, { token: null, headers, body: {} })
      expect(cookiePing.status).toBe(401)
      expect(cookiePing.body._tag).toBe("Unauthorized")
      const withBearer = yield* sendPing(monitor.id, "success", { body: {} })
      expect(withBearer.status).toBe(200)
    }))

  it.effect("acknowledging and resolving through a session name the signed-in user in the API and the events", () =>
    Effect.gen(function*() {
      const user = yield* createUser({ email: "katherine@example.com", password: PASSWORD, name: "Katherine Johnson" })
      const session = yield* signIn("katherine@example.com", PASSWORD)
      const headers = { cookie: session.cookie, "x-csrf-token": session.csrfToken }
      const monitor = yield* createMonitor({ name: "session ack" })
      expect((yield* sendPing(monitor.id, "fail", { body: { exitCode: 3 } })).status).toBe(200)
      let incident: any
      for (let i = 0; i < 300 && incident === undefined; i++) {
        const list = yield* call("GET", `/api/incidents?monitorId=${monitor.id}`, { token: null, headers })
        incident = list.body.incidents?.[0]
        if (incident === undefined) yield* Effect.sleep("100 millis")
      }
      expect(incident).toBeDefined()
      const by = { userId: user.id, name: "Katherine Johnson", email: "katherine@example.com" }
      const ack = yield* call("POST", `/api/incidents/${incident.id}/acknowledge`, { token: null, headers, body: { note: "on it" } })
      expect(ack.status).toBe(200)
      expect(ack.body.acknowledgedBy).toEqual(by)
      const resolved = yield* call("POST", `/api/incidents/${incident.id}/resolve`, { token: null, headers, body: {} })
      expect(resolved.status).toBe(200)
      // resolvedBy has no email in the incident schema (docs/decisions.md#tokens-and-scopes: {userId, name}).
      expect(resolved.body.resolvedBy).toEqual({ userId: user.id, name: "Katherine Johnson" })
      const sql = yield* SqlClient.SqlClient
      const events = yield* sql<{ type: string; data: any }>`
        select type, data from events where data->'incident'->>'id' = ${incident.id}
          and type in ('incident.acknowledged', 'incident.resolved') order by seq`
      expect(events.map((e) => e.type)).toEqual(["incident.acknowledged", "incident.resolved"])
      expect(events[0]!.data.acknowledgedBy).toEqual(by)
      expect(events[1]!.data.resolvedBy).toEqual({ userId: user.id, name: "Katherine Johnson" })
    }))

  it.effect("a session ends after 7 idle days or 30 days in all; use restarts the idle timer", () =>
    Effect.gen(function*() {
      const user = yield* createUser({ email: "edsger@example.com", password: PASSWORD })
      const sql = yield* SqlClient.SqlClient
      const me = (cookie: string) => call("GET", "/api/auth/me", { token: null, headers: { cookie } })

      const idle = yield* signIn("edsger@example.com", PASSWORD)
      yield* sql`update sessions set created_at = now() - interval '8 days', last_seen_at = now() - interval '7 days 1 minute'
                 where user_id = ${user.id}`
      const idleAnswer = yield* me(idle.cookie)
      expect(idleAnswer.status).toBe(401)
      expect(idleAnswer.body.message).toMatch(/idle for 7 days/)
      const listAnswer = yield* call("GET", "/api/monitors", { token: null, headers: { cookie: idle.cookie } })
      expect(listAnswer.status).toBe(401)

      const active = yield* signIn("edsger@example.com", PASSWORD)
      yield* sql`update sessions set created_at = now() - interval '20 days', last_seen_at = now() - interval '6 days 23 hours'
                 where user_id = ${user.id}`
      expect((yield* me(active.cookie)).status).toBe(200)
      const touched = yield* sql<{ last_seen_at: Date }>`select last_seen_at from sessions where user_id = ${user.id}`
      expect(Date.now() - touched[0]!.last_seen_at.getTime()).toBeLessThan(3_600_000)

      yield* sql`update sessions set created_at = now() - interval '30 days 1 minute', last_seen_at = now() - interval '1 hour'
                 where user_id = ${user.id}`
      const old = yield* me(active.cookie)
      expect(old.status).toBe(401)
      expect(old.body.message).toMatch(/older than 30 days/)
      const rows = yield* sql<{ n: number }>`select count(*)::int as n from sessions where user_id = ${user.id}`
      expect(rows[0]!.n).toBe(0)
    }))

  it.effect("expiry follows the service's Clock: used every 6 days a session lives 30 days; 7 idle days end it", () =>
    Effect.gen(function*() {
      yield* createUser({ email: "barbara.liskov@example.com", password: PASSWORD })
      const accounts = yield* Accounts
      yield* TestClock.setTime(Date.parse("2031-03-01T00:00:00Z"))
      const busy = yield* accounts.login({ email: "barbara.liskov@example.com", password: PASSWORD, address: "127.0.0.1" })
      for (let day = 6; day < 30; day += 6) {
        yield* TestClock.adjust("6 days")
        expect((yield* accounts.session(busy.secret)).user.email).toBe("barbara.liskov@example.com")
      }
      yield* TestClock.adjust("6 days")
      const old = yield* Effect.flip(accounts.session(busy.secret))
      expect(old.message).toMatch(/older than 30 days/)

      const idle = yield* accounts.login({ email: "barbara.liskov@example.com", password: PASSWORD, address: "127.0.0.1" })
      yield* TestClock.adjust("7 days")
      const expired = yield* Effect.flip(accounts.session(idle.secret))
      expect(expired.message).toMatch(/idle for 7 days/)
    }).pipe(Effect.provide(TestContext.TestContext)))

  it.effect("after 10 failed sign-ins for an email from one address in 15 minutes, sign-in is 429 with Retry-After, even with the right password; X-Forwarded-For is not trusted by default", () =>
    Effect.gen(function*() {
      yield* createUser({ email: "mallory@example.com", password: PASSWORD })
      yield* createUser({ email: "alice@example.com", password: PASSWORD })
      for (let i = 0; i < 10; i++) {
        // Without TRUST_PROXY a forged X-Forwarded-For changes nothing: all come from 127.0.0.1.
        const wrong = yield* call("POST", "/api/auth/login", {
          token: null,
          headers: { "x-forwarded-for": `198.51.100.${i}` },
          body: { email: "mallory@example.com", password: `guess ${i}` }
        })
        expect(wrong.status).toBe(401)
      }
      const limited = yield* call("POST", "/api/auth/login", { token: null, body: { email: "MALLORY@example.com", password: PASSWORD } })
      expect(limited.status).toBe(429)
      expect(limited.body._tag).toBe("RateLimited")
      const retryAfter = Number(limited.headers["retry-after"])
      expect(retryAfter).toBeGreaterThan(800)
      expect(retryAfter).toBeLessThanOrEqual(900)
      expect(limited.body.retryAfterSeconds).toBe(retryAfter)
      // Another email is not affected.
      expect((yield* call("POST", "/api/auth/login", { token: null, body: { email: "alice@example.com", password: PASSWORD } })).status).toBe(200)
    }))

  it.effect("the sign-in limit lifts when its 15 minutes have passed on the service's Clock", () =>
    Effect.gen(function*() {
      yield* createUser({ email: "trudy@example.com", password: PASSWORD })
      const accounts = yield* Accounts
      const sql = yield* SqlClient.SqlClient
      const start = Date.parse("2031-05-01T00:00:00Z")
      yield* TestClock.setTime(start)
      // Ten failures from 127.0.0.1 at the start (hashing ten wrong passwords again proves nothing new).
      yield* sql`
        insert into sign_in_attempts (email, address, attempted_at)
        select jobmon_email_key('trudy@example.com'), '127.0.0.1', ${new Date(start)} from generate_series(1, 10)`
      const signIn = accounts.login({ email: "trudy@example.com", password: PASSWORD, address: "127.0.0.1" })
      yield* TestClock.adjust("1 minute")
      const limited = yield* Effect.flip(signIn)
      expect(limited._tag).toBe("RateLimited")
      expect((limited as any).retryAfterSeconds).toBe(14 * 60)
      yield* TestClock.adjust("839 seconds")
      expect(((yield* Effect.flip(signIn)) as any).retryAfterSeconds).toBe(1)
      yield* TestClock.adjust("1 second")
      expect((yield* signIn).user.email).toBe("trudy@example.com")
    }).pipe(Effect.provide(TestContext.TestContext)))

  it.effect("the sign-in and user endpoints are in the OpenAPI document, with the session cookie as a security scheme", () =>
    Effect.gen(function*() {
      const doc = yield* call("GET", "/api/openapi.json", { token: null })
      expect(doc.status).toBe(200)
      for (const path of ["/api/auth/login", "/api/auth/me", "/api/auth/logout", "/api/auth/invites", "/api/auth/invites/accept", "/api/users"]) {
        expect(Object.keys(doc.body.paths)).toContain(path)
      }
      expect(doc.body.components.securitySchemes.session).toMatchObject({ type: "apiKey", in: "cookie", name: "jobmon_session" })
    }))
})

layer(TestServer({ publicUrl: "https://jobmon.example.com" }), { excludeTestServices: true, timeout: 120_000 })(
  "dashboard sessions behind https",
  (it) => {
    it.effect("over https the session cookie is __Host-jobmon_session: Secure, Path=/, no Domain", () =>
      Effect.gen(function*() {
        yield* createUser({ email: "tim@example.com", password: PASSWORD })
        const response = yield* call("POST", "/api/auth/login", { token: null, body: { email: "tim@example.com", password: PASSWORD } })
        expect(response.status).toBe(200)
        const setCookie = response.headers["set-cookie"]!
        expect(setCookie).toMatch(/^__Host-jobmon_session=[A-Za-z0-9_-]{43};/)
        expect(setCookie).toMatch(/; Path=\/;/)
        expect(setCookie).toMatch(/; Secure/)
        expect(setCookie).toMatch(/; HttpOnly/)
        expect(setCookie).not.toMatch(/Domain=/i)
        const cookie = cookiePair(setCookie)
        const me = yield* call("GET", "/api/auth/me", { token: null, headers: { cookie } })
        expect(me.status).toBe(200)
        expect(me.body.user.email).toBe("tim@example.com")
        // The plain name means nothing here: a cookie a sibling site could set is not a session.
        const plain = yield* call("GET", "/api/auth/me", { token: null, headers: { cookie: cookie.replace("__Host-", "") } })
        expect(plain.status).toBe(401)
        const out = yield* call("POST", "/api/auth/logout", { token: null, headers: { cookie, "x-csrf-token": me.body.csrfToken } })
        expect(out.status).toBe(204)
        expect(out.headers["set-cookie"]).toMatch(/^__Host-jobmon_session=; Max-Age=0; Path=\/;.*Secure/)
        expect((yield* call("GET", "/api/auth/me", { token: null, headers: { cookie } })).status).toBe(401)
      }))
  }
)
