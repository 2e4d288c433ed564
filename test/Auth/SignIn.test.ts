import { expect, layer } from "@effect/vitest"
import { HttpClient, HttpClientRequest } from "@effect/platform"
import { SqlClient } from "@effect/sql"
import { Effect } from "effect"
import { hashPassword } from "../../src/Auth/Password.js"
import { call, createUser, TestApp, TestServer } from "../support/fixture.js"

/**
 * Sign-in limits (docs/dashboard-auth.md, "Sign-in limits"). The server trusts one proxy
 * (TRUST_PROXY=1), so each test speaks from addresses of its own through X-Forwarded-For.
 * Every password check costs a real scrypt hash (~270 ms): the tests make as few as they can.
 */

const PASSWORD = "correct horse battery"

const login = (email: string, password: string, from: string, headers: Record<string, string> = {}) =>
  call("POST", "/api/auth/login", { token: null, headers: { "x-forwarded-for": from, ...headers }, body: { email, password } })

/** A request with a body of any content type (the fixture's `call` sends JSON). */
const post = (path: string, body: string, contentType: string | undefined, headers: Record<string, string> = {}) =>
  Effect.gen(function*() {
    const app = yield* TestApp
    const client = yield* HttpClient.HttpClient
    let request = HttpClientRequest.post(`${app.baseUrl}${path}`).pipe(HttpClientRequest.setHeaders(headers))
    request = HttpClientRequest.bodyText(request, body, contentType)
    const response = yield* client.execute(request)
    const text = yield* response.text
    return { status: response.status, headers: response.headers, body: text === "" ? undefined : JSON.parse(text) }
  }).pipe(Effect.scoped, Effect.orDie)

const statuses = (responses: ReadonlyArray<{ status: number }>) => {
  const counts: Record<number, number> = {}
  for (const r of responses) counts[r.status] = (counts[r.status] ?? 0) + 1
  return counts
}

layer(TestServer({ trustProxy: 1 }), { excludeTestServices: true, timeout: 120_000 })("sign-in limits", (it) => {
  it.effect("40 concurrent wrong passwords from one address: 10 are checked, 30 are 429; the owner still signs in from another address, and no spelling of the email escapes the limit", () =>
    Effect.gen(function*() {
      yield* createUser({ email: "ivan@example.com", password: PASSWORD })
      const attacker = "203.0.113.10"
      const guesses = yield* Effect.all(
        Array.from({ length: 40 }, (_, i) => login("ivan@example.com", `guess number ${i}`, attacker)),
        { concurrency: "unbounded" }
      )
      expect(statuses(guesses)).toEqual({ 401: 10, 429: 30 })
      for (const refused of guesses.filter((r) => r.status === 429)) {
        expect(refused.body._tag).toBe("RateLimited")
        expect(refused.body.message).toMatch(/for this email from your address: at most 10 in 15 minutes/)
        expect(Number(refused.headers["retry-after"])).toBeGreaterThan(800)
        expect(refused.body.retryAfterSeconds).toBe(Number(refused.headers["retry-after"]))
      }

      // From the attacker's address every spelling of the account is refused, even with the password…
      for (const spelling of ["ivan@example.com", "IVAN@Example.COM", " ivan@example.com "]) {
        expect((yield* login(spelling, PASSWORD, attacker)).status).toBe(429)
      }
      // …and İvan@ (dotted capital I) is not a way around it: it is another, unknown account.
      const dotted = yield* login("İvan@example.com", PASSWORD, attacker)
      expect(dotted.status).toBe(401)
      expect(dotted.headers["set-cookie"]).toBeUndefined()

      // The owner, from another address, is neither locked out nor slowed down.
      const owner = yield* login("Ivan@example.com", PASSWORD, "198.51.100.7")
      expect(owner.status).toBe(200)
      expect(owner.body.user.email).toBe("ivan@example.com")
      // Their success does not lift the attacker's limit.
      expect((yield* login("ivan@example.com", PASSWORD, attacker)).status).toBe(429)
    }))

  it.effect("emails match whatever their ASCII letter case and Unicode form (NFC): for users, sign-in and invites alike", () =>
    Effect.gen(function*() {
      // Created with a combining accent (E + U+0301), signed in with the precomposed É (U+00C9).
      yield* createUser({ email: "E\u0301mile@Example.com", password: PASSWORD })
      const composed = yield* login("\u00c9mile@example.com", PASSWORD, "203.0.113.20")
      expect(composed.status).toBe(200)
      expect(composed.body.user.email).toBe("\u00c9mile@Example.com")
      expect((yield* login("E\u0301MILE@EXAMPLE.COM".replace("MILE", "mile"), PASSWORD, "203.0.113.20")).status).toBe(200)
      // Only ASCII letters are case-folded (the same on every PostgreSQL, whatever its locale).
      expect((yield* login("\u00e9mile@example.com", PASSWORD, "203.0.113.20")).status).toBe(401)
      const invited = yield* call("POST", "/api/auth/invites", { body: { email: "E\u0301mile@example.COM" } })
      expect(invited.status).toBe(409)
    }))

  it.effect("20 failed sign-ins from one address (an IPv6 /64), whatever the emails, make it 429; other addresses are unaffected", () =>
    Effect.gen(function*() {
      expect((yield* login("nobody0@example.com", "not a password", "2001:db8:1:2::1")).status).toBe(401)
      // 18 more failures from the same address, as the database records them (not hashed again).
      const sql = yield* SqlClient.SqlClient
      yield* sql`
        insert into sign_in_attempts (email, address, attempted_at)
        select 'nobody' || i || '@example.com', a.address, now() from generate_series(1, 18) i,
          (select address from sign_in_attempts where email = 'nobody0@example.com') a`
      // The 20th from another address of the same /64.
      expect((yield* login("nobody19@example.com", "not a password", "2001:db8:1:2::2")).status).toBe(401)
      const refused = yield* login("somebody.else@example.com", "not a password", "2001:db8:1:2:ffff::1")
      expect(refused.status).toBe(429)
      expect(refused.body.message).toMatch(/from your address: at most 20 in 15 minutes, whatever the email/)
      expect(Number(refused.headers["retry-after"])).toBeGreaterThan(800)
      const elsewhere = yield* login("somebody.else@example.com", "not a password", "2001:db8:1:3::1")
      expect(elsewhere.status).toBe(401)
    }))

  it.effect("many failures for one account from many addresses slow new addresses down without locking the owner out of a known one", () =>
    Effect.gen(function*() {
      yield* createUser({ email: "victim@example.com", password: PASSWORD })
      const home = "192.0.2.50"
      expect((yield* login("victim@example.com", PASSWORD, home)).status).toBe(200)
      // A distributed attack: 25 failures for the account from 25 addresses, a moment ago (as the
      // database records them: hashing 25 wrong passwords would only make the test slow).
      const sql = yield* SqlClient.SqlClient
      yield* sql`
        insert into sign_in_attempts (email, address, attempted_at)
        select jobmon_email_key('victim@example.com'), '192.0.2.' || i, now() - interval '1 second'
        from generate_series(1, 25) i`
      const fromNew = yield* login("victim@example.com", PASSWORD, "192.0.2.99")
      expect(fromNew.status).toBe(429)
      expect(fromNew.body.message).toMatch(/slowed down/)
      const wait = Number(fromNew.headers["retry-after"])
      expect(wait).toBeGreaterThanOrEqual(1)
      expect(wait).toBeLessThanOrEqual(6)
      // The owner's known address is not slowed down.
      expect((yield* login("victim@example.com", PASSWORD, home)).status).toBe(200)
      // A new address gets its turn after the wait (slowed, not locked).
      yield* sql`update sign_in_attempts set attempted_at = attempted_at - interval '1 minute'
                 where email = jobmon_email_key('victim@example.com')`
      expect((yield* login("victim@example.com", PASSWORD, "192.0.2.99")).status).toBe(200)
    }))

  it.effect("at most 2 passwords are hashed at once and 16 wait: past that, sign-in is 429 with Retry-After at once", () =>
    Effect.gen(function*() {
      const answers = yield* Effect.all(
        Array.from({ length: 40 }, (_, i) => login(`crowd${i}@example.com`, "not a password", `100.64.0.${i + 1}`)),
        { concurrency: "unbounded" }
      )
      const busy = answers.filter((r) => r.status === 429)
      expect(busy.length).toBeGreaterThan(0)
      for (const r of busy) {
        expect(r.body.message).toMatch(/busy checking other sign-ins and passwords/)
        expect(r.headers["retry-after"]).toBe("2")
      }
      expect(answers.filter((r) => r.status === 401).length).toBe(40 - busy.length)
      // A refused attempt was never checked, so it does not count against its address.
      const sql = yield* SqlClient.SqlClient
      const counted = yield* sql<{ n: number }>`select count(*)::int as n from sign_in_attempts where address like '100.64.0.%'`
      expect(counted[0]!.n).toBe(40 - busy.length)
    }))

  it.effect("sign-in and invite acceptance take JSON only and refuse cross-site requests (login CSRF)", () =>
    Effect.gen(function*() {
      const form = yield* post("/api/auth/login", "email=a%40example.com&password=whatever1", "application/x-www-form-urlencoded")
      expect(form.status).toBe(415)
      expect(form.body._tag).toBe("UnsupportedMediaType")
      expect(form.body.message).toMatch(/Content-Type: application\/json/)
      const multipart = yield* post(
        "/api/auth/login",
        "--x\r\ncontent-disposition: form-data; name=\"email\"\r\n\r\na@example.com\r\n--x\r\ncontent-disposition: form-data; name=\"password\"\r\n\r\nwhatever1\r\n--x--\r\n",
        "multipart/form-data; boundary=x"
      )
      expect([400, 415]).toContain(multipart.status)
      const plain = yield* post("/api/auth/login", JSON.stringify({ email: "a@example.com", password: "whatever1" }), "text/plain")
      expect([400, 415]).toContain(plain.status)
      const json = JSON.stringify({ email: "a@example.com", password: "whatever1" })
      const crossSite = yield* post("/api/auth/login", json, "application/json", { "sec-fetch-site": "cross-site", "x-forwarded-for": "203.0.113.60" })
      expect(crossSite.status).toBe(403)
      expect(crossSite.body.message).toMatch(/another site/)
      const accept = yield* post("/api/auth/invites/accept", "token=jmi_x&name=X&password=whatever1", "application/x-www-form-urlencoded")
      expect(accept.status).toBe(415)
      // The dashboard's own request (same origin, JSON) goes through to the password check.
      const sameOrigin = yield* post("/api/auth/login", json, "application/json; charset=utf-8", {
        "sec-fetch-site": "same-origin",
        "x-forwarded-for": "203.0.113.60"
      })
      expect(sameOrigin.status).toBe(401)
    }))

  it.effect("a NUL or other control character in the email is a 400 that names the field, not a database error", () =>
    Effect.gen(function*() {
      for (const email of ["a\u0000@example.com", "\u0000", "a@example.com\u0007"]) {
        const response = yield* login(email, "whatever1", "203.0.113.70")
        expect(response.status).toBe(400)
        expect(response.body).toMatchObject({ _tag: "ValidationError", path: "email" })
        expect(response.body.message).toMatch(/control characters/)
      }
    }))

  it.effect("a password hashed with an older scrypt cost keeps working and is rehashed at N = 2^17 on sign-in", () =>
    Effect.gen(function*() {
      const user = yield* createUser({ email: "old.hash@example.com", password: PASSWORD })
      const sql = yield* SqlClient.SqlClient
      const old = yield* Effect.promise(() => hashPassword(PASSWORD, { N: 1 << 15, r: 8, p: 1 }))
      yield* sql`update users set password_hash = ${old} where id = ${user.id}`
      expect((yield* login("old.hash@example.com", PASSWORD, "203.0.113.80")).status).toBe(200)
      const [row] = yield* sql<{ password_hash: string }>`select password_hash from users where id = ${user.id}`
      expect(row!.password_hash).toMatch(/^scrypt\$131072\$8\$1\$/)
      expect((yield* login("old.hash@example.com", PASSWORD, "203.0.113.80")).status).toBe(200)
      expect((yield* login("old.hash@example.com", "not the password", "203.0.113.80")).status).toBe(401)
    }))
})
