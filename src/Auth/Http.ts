import { HttpApiBuilder, HttpRouter, HttpServerRequest } from "@effect/platform"
import { Clock, Effect, Exit, Layer } from "effect"
import { Api } from "../Http/Api.js"
import { AppConfig } from "../Config.js"
import { Forbidden, notFound, RateLimited, Unauthorized, ValidationError } from "../Domain/Errors.js"
import { iso } from "../Domain/Instant.js"
import { RateLimiter, type RateVerdict } from "../Http/RateLimit.js"
import { accessTable, routeKey } from "./Access.js"
import { Accounts, CSRF_HEADER, sessionCookieName } from "./Accounts.js"
import { Authentication } from "./Api.js"
import type { Principal } from "./Principal.js"
import { CurrentPrincipal } from "./Principal.js"
import { type Need, scopeAllows } from "./Scopes.js"
import { Tokens } from "./Tokens.js"
import type { TokenRow } from "./TokensRepo.js"

const needs = accessTable(Api)

/** The rate-limit verdict of each authenticated request, for its answer's headers (src/Http/Server.ts). */
const rateVerdicts = new WeakMap<object, RateVerdict>()
export const rateVerdictOf = (request: HttpServerRequest.HttpServerRequest): RateVerdict | undefined => rateVerdicts.get(request)

/**
 * The scope the matched endpoint declares (src/Auth/Access.ts). The router's own match decides which
 * endpoint this is: its declared method and path, never a second reading of the request's URL.
 */
export const needOfRoute = (route: HttpRouter.RouteContext): Need => {
  const need = needs.get(routeKey(route.route.method, route.route.path))
  // Every route behind this middleware is an endpoint of Api; one that is not is a wiring bug.
  if (need === undefined) throw new Error(`no declared scope for ${route.route.method} ${route.route.path}`)
  return need
}

export const forbidden = (scope: string, need: Need) =>
  new Forbidden({
    message: `This token has scope '${scope}', which does not allow this request: it needs '${need}'${
      need === "read" ? "" : " or a broader scope"
    }.`
  })

const sessionForbidden = (scope: string, need: Need) =>
  new Forbidden({
    message: `Your account acts with scope '${scope}' (role ${scope === "admin" ? "admin" : "member"}), which does not allow this request: it needs '${need}'. Ask an admin.`
  })

/**
 * A Bearer header, when present, decides alone (and the ping intake takes nothing else); otherwise
 * the session cookie, with the CSRF header on changes (docs/dashboard-auth.md).
 */
export const AuthenticationLive = Layer.effect(
  Authentication,
  Effect.gen(function*() {
    const tokens = yield* Tokens
    const accounts = yield* Accounts
    const config = yield* AppConfig
    // `__Host-jobmon_session` when served over https (docs/dashboard-auth.md).
    const cookieName = sessionCookieName(config.publicUrl)
    const limiter = new RateLimiter(config.apiRatePerSecond, config.apiBurst)
    /**
     * The API's own rate limit (docs/decisions.md#rate-limits), per authenticated token or session: however the
     * header is spelled or the path written, one credential is one bucket. The ping intake has its
     * per-monitor limit instead. The verdict is kept for the response's X-RateLimit-* headers.
     */
    const limit = (request: HttpServerRequest.HttpServerRequest, principal: Principal) =>
      Effect.gen(function*() {
        const verdict = limiter.take(principal.tokenId, yield* Clock.currentTimeMillis)
        rateVerdicts.set(request, verdict)
        if (verdict.retryAfterSeconds > 0) {
          return yield* new RateLimited({
            message: `Too many requests with this credential: at most ${limiter.ratePerSecond} per second (bursts of ${limiter.burst}). Retry in ${verdict.retryAfterSeconds} s.`,
            retryAfterSeconds: verdict.retryAfterSeconds
          })
        }
      })
    const authenticate = Effect.gen(function*() {
      const request = yield* HttpServerRequest.HttpServerRequest
      const need = needOfRoute(yield* HttpRouter.RouteContext)
      const authorization = request.headers["authorization"]
      const cookie = request.cookies[cookieName]
      if (authorization !== undefined || cookie === undefined || need === "ping") {
        if (authorization === undefined && cookie !== undefined) {
          return yield* new Unauthorized({
            message: "The ping intake accepts only an access token (Authorization: Bearer <token>), not the dashboard session."
          })
        }
        const principal = yield* tokens.authenticate(authorization)
        if (need !== "ping") yield* limit(request, principal)
        if (!scopeAllows(principal.scope, need)) return yield* forbidden(principal.scope, need)
        return principal
      }
      const active = yield* accounts.session(cookie)
      yield* accounts.checkCsrf(active, request.method, request.headers[CSRF_HEADER])
      const principal = accounts.principalOf(active)
      yield* limit(request, principal)
      if (!scopeAllows(principal.scope, need)) return yield* sessionForbidden(principal.scope, need)
      return principal
    })
    // HttpApi tries the security schemes in turn and keeps the last failure: both schemes share one
    // verdict per request, so the answer is the same whichever of them reports it.
    const verdicts = new WeakMap<object, Exit.Exit<Principal, Unauthorized | Forbidden | RateLimited>>()
    const once = Effect.gen(function*() {
      const request = yield* HttpServerRequest.HttpServerRequest
      const known = verdicts.get(request)
      if (known !== undefined) return yield* known
      const exit = yield* Effect.exit(authenticate)
      verdicts.set(request, exit)
      return yield* exit
    })
    return { bearer: () => once, session: () => once }
  })
)

export const tokenInfo = (row: TokenRow) => ({
  id: row.id,
  name: row.name,
  scope: row.scope,
  prefix: row.token_prefix,
  expiresAt: iso(row.expires_at),
  createdAt: row.created_at.toISOString(),
  lastUsedAt: iso(row.last_used_at)
})

export const parseExpiry = (value: string | null | undefined, now: number) => {
  if (value === null || value === undefined) return Effect.succeed(null)
  const time = Date.parse(value)
  if (!/^\d{4}-\d{2}-\d{2}/.test(value) || Number.isNaN(time)) {
    return Effect.fail(
      new ValidationError({ path: "expiresAt", message: `expiresAt must be an ISO 8601 timestamp such as 2027-01-01T00:00:00Z, not '${value}'.` })
    )
  }
  if (time <= now) {
    return Effect.fail(new ValidationError({ path: "expiresAt", message: "expiresAt must be in the future." }))
  }
  return Effect.succeed(new Date(time))
}

export const TokensHttpLive = HttpApiBuilder.group(Api, "tokens", (handlers) =>
  Effect.gen(function*() {
    const tokens = yield* Tokens
    return handlers
      .handle("create", ({ payload }) =>
        Effect.gen(function*() {
          const principal = yield* CurrentPrincipal
          const expiresAt = yield* parseExpiry(payload.expiresAt, yield* Clock.currentTimeMillis)
          const { row, token } = yield* tokens.create({
            orgId: principal.orgId,
            userId: principal.userId,
            name: payload.name,
            scope: payload.scope,
            expiresAt
          })
          return {
            id: row.id,
            name: row.name,
            scope: row.scope,
            expiresAt: iso(row.expires_at),
            createdAt: row.created_at.toISOString(),
            token
          }
        }))
      .handle("list", () =>
        Effect.gen(function*() {
          const principal = yield* CurrentPrincipal
          const rows = yield* tokens.list(principal.orgId)
          return { tokens: rows.map(tokenInfo) }
        }))
      .handle("revoke", ({ path }) =>
        Effect.gen(function*() {
          const principal = yield* CurrentPrincipal
          const revoked = yield* tokens.revoke(principal.orgId, path.tokenId)
          if (!revoked) return yield* notFound("Token", path.tokenId)
        }))
  })
)
