import { expect, layer } from "@effect/vitest"
import { Effect } from "effect"
import { call, createToken, createUser, signIn, TestApp, TestServer } from "../support/fixture.js"
import { rawRequest } from "../support/raw.js"

/**
 * The scope an endpoint needs is declared with the endpoint and enforced on the router's own match
 * (src/Auth/Access.ts), and the request target is made canonical once before anything reads it
 * (src/Http/Canonical.ts). So however a path is spelled, the answer is the canonical path's answer:
 * a `write` token never reaches an `admin` endpoint through `/api/Tokens`, `/api/%74okens`,
 * `/api//tokens`, `POST http://x/api/tokens`, a trailing slash or a dot segment.
 */

const UNKNOWN_ID = "7d1e2c4a-0000-4000-8000-00000000abcd"

/** Each way of writing one path that a router or a proxy could take for it. */
const spellings = (path: string): ReadonlyArray<readonly [string, string]> => {
  const segments = path.split("/").slice(1)
  const fixed = (f: (segment: string) => string) =>
    "/" + segments.map((s) => (s === UNKNOWN_ID ? s : f(s))).join("/")
  const last = segments.map((s, i) => [s, i] as const).filter(([s]) => s !== UNKNOWN_ID && /^[a-z]/.test(s)).pop()!
  const escaped = [...segments]
  escaped[last[1]] = `%${last[0].charCodeAt(0).toString(16)}${last[0].slice(1)}`
  const rest = segments.slice(1).join("/")
  return [
    ["upper case", fixed((s) => s.toUpperCase())],
    ["mixed case", fixed((s) => s.charAt(0).toUpperCase() + s.slice(1))],
    ["percent-escaped letter", "/" + escaped.join("/")],
    ["doubled slash inside", segments.length > 1 ? `/${segments[0]}//${rest}` : `//${segments[0]}`],
    ["doubled leading slash", `/${path}`],
    ["absolute form", `http://example.test${path}`],
    ["trailing slash", `${path}/`],
    ["dot segment", segments.length > 1 ? `/${segments[0]}/./${rest}` : `/./${segments[0]}`],
    ["parent segment", segments.length > 1 ? `/${segments[0]}/x/../${rest}` : `/x/../${segments[0]}`]
  ]
}

interface Principal {
  readonly name: string
  readonly headers: (method: string) => Record<string, string>
  readonly session: boolean
}

const bearer = (name: string, token: string): Principal => ({
  name,
  session: false,
  headers: () => ({ authorization: `Bearer ${token}` })
})

const session = (name: string, cookie: string, csrfToken: string): Principal => ({
  name,
  session: true,
  headers: (method) => (method === "GET" ? { cookie } : { cookie, "x-csrf-token": csrfToken })
})

let signUps = 0
const principals = Effect.gen(function*() {
  const app = yield* TestApp
  const n = ++signUps
  const list: Array<Principal> = [bearer("admin token", app.adminToken)]
  for (const scope of ["write", "read", "ping"] as const) list.push(bearer(`${scope} token`, (yield* createToken(scope)).token))
  yield* createUser({ email: `owner${n}@example.com`, password: "correct horse battery", role: "admin" })
  yield* createUser({ email: `member${n}@example.com`, password: "correct horse battery", role: "member" })
  const owner = yield* signIn(`owner${n}@example.com`, "correct horse battery")
  const member = yield* signIn(`member${n}@example.com`, "correct horse battery")
  list.push(session("admin session", owner.cookie, owner.csrfToken), session("member session", member.cookie, member.csrfToken))
  list.push({ name: "no credential", session: false, headers: () => ({}) })
  return list
})

/**
 * Every operation of the OpenAPI document as a probe that changes nothing: unknown ids, and a body
 * no endpoint accepts whole. An allowed caller gets 400 or 404 (or a list), a caller without the
 * scope 403, one without a credential 401: the answer tells which check let it through.
 */
const operations = Effect.gen(function*() {
  const spec = (yield* call("GET", "/api/openapi.json", { token: null })).body as {
    paths: Record<string, Record<string, unknown>>
  }
  const out: Array<{ method: string; path: string }> = []
  for (const [template, item] of Object.entries(spec.paths)) {
    for (const method of Object.keys(item)) {
      if (!["get", "post", "put", "patch", "delete"].includes(method)) continue
      out.push({ method: method.toUpperCase(), path: template.replace(/\{[^}]+\}/g, UNKNOWN_ID) })
    }
  }
  return out
})

const probeBody = JSON.stringify({ probe: [1, 2, 3] })

const answerOf = (method: string, target: string, principal: Principal) =>
  Effect.gen(function*() {
    const app = yield* TestApp
    const response = yield* rawRequest(app.baseUrl, method, target, {
      headers: principal.headers(method),
      ...(method === "GET" || method === "DELETE" ? {} : { body: probeBody })
    })
    return `${response.status} ${response.body?._tag ?? ""}`.trim()
  }).pipe(Effect.orDie)

layer(TestServer(), { excludeTestServices: true, timeout: 300_000 })("authorization by the matched route, whatever the spelling", (it) => {
  it.effect("every endpoint, every scope and session role, every spelling of its path: the canonical path's answer", () =>
    Effect.gen(function*() {
      const callers = yield* principals
      const ops = yield* operations
      expect(ops.length).toBeGreaterThan(50)
      const differences: Array<string> = []
      let compared = 0
      for (const op of ops) {
        for (const principal of callers) {
          // Signing out would end the session the rest of the walk uses.
          if (principal.session && op.path === "/api/auth/logout") continue
          const canonical = yield* answerOf(op.method, op.path, principal)
          expect(canonical, `${principal.name} ${op.method} ${op.path}`).not.toMatch(/^5/)
          for (const [how, target] of spellings(op.path)) {
            const answer = yield* answerOf(op.method, target, principal)
            compared++
            if (answer !== canonical) differences.push(`${principal.name} ${op.method} ${target} (${how}): ${answer}, canonical ${canonical}`)
          }
        }
      }
      expect(differences).toEqual([])
      expect(compared).toBeGreaterThan(2000)
    }))

  it.effect("tokens and invites need admin: a write or read token and a member session are 403 on every spelling", () =>
    Effect.gen(function*() {
      const callers = (yield* principals).filter((p) => ["write token", "read token", "ping token", "member session"].includes(p.name))
      const adminOnly = [
        ["POST", "/api/tokens"],
        ["GET", "/api/tokens"],
        ["DELETE", `/api/tokens/${UNKNOWN_ID}`],
        ["POST", "/api/auth/invites"]
      ] as const
      for (const [method, path] of adminOnly) {
        for (const principal of callers) {
          for (const [how, target] of [["canonical", path] as const, ...spellings(path)]) {
            const answer = yield* answerOf(method, target, principal)
            expect(answer, `${principal.name} ${method} ${target} (${how})`).toBe("403 Forbidden")
          }
        }
      }
      // And the real thing, with a body that would be accepted: no admin token comes out of it.
      const write = (yield* createToken("write")).token
      const app = yield* TestApp
      for (const target of ["/api/Tokens", "/api/%74okens", "/api//tokens", "http://x/api/tokens", "/api/tokens/"]) {
        const minted = yield* rawRequest(app.baseUrl, "POST", target, {
          headers: { authorization: `Bearer ${write}` },
          body: JSON.stringify({ name: "escalate", scope: "admin" })
        })
        expect(minted.status, target).toBe(403)
      }
      const tokens = (yield* call("GET", "/api/tokens")).body.tokens as Array<{ name: string }>
      expect(tokens.map((t) => t.name)).not.toContain("escalate")
    }))

  it.effect("a malformed escape is 400, an overlong target 414, an overlong id 404: each with a message that says so", () =>
    Effect.gen(function*() {
      const app = yield* TestApp
      const headers = { authorization: `Bearer ${app.adminToken}` }
      for (const path of ["/api/monitors/%ZZ", "/api/monitors/%C3%28", "/api/incidents/%ZZ", `/api/monitors/%C3%28/runs`]) {
        const bad = yield* rawRequest(app.baseUrl, "GET", path, { headers })
        expect(bad.status, path).toBe(400)
        expect(bad.body._tag).toBe("ValidationError")
        expect(bad.body.message).toMatch(/percent-escape/)
      }
      const badDelete = yield* rawRequest(app.baseUrl, "DELETE", "/api/alerts/chat/webhooks/%ZZ", { headers })
      expect(badDelete.status).toBe(400)
      const long = yield* rawRequest(app.baseUrl, "GET", `/api/monitors/${"a".repeat(5000)}`, { headers })
      expect(long.status).toBe(414)
      expect(long.body.message).toMatch(/limit is 4096/)
      for (const [method, path] of [["GET", `/api/monitors/${"a".repeat(500)}`], ["GET", `/api/monitors/${"a".repeat(500)}/runs`], ["GET", `/api/incidents/${"b".repeat(500)}`], ["DELETE", `/api/alerts/chat/webhooks/${"c".repeat(500)}`]] as const) {
        const overlong = yield* rawRequest(app.baseUrl, method, path, { headers })
        expect(overlong.status, path.slice(0, 40)).toBe(404)
        expect(overlong.body._tag).toBe("NotFound")
        expect(overlong.body.message).not.toMatch(/not allowed/)
        expect(overlong.text.length).toBeLessThan(400)
      }
    }))
})
