import { HttpApiBuilder, HttpApp, HttpServerRequest, HttpServerResponse } from "@effect/platform"
import { Duration, Effect, Option } from "effect"
import { AppConfig } from "../Config.js"
import { Forbidden, RateLimited, UnsupportedMediaType } from "../Domain/Errors.js"
import { Api } from "../Http/Api.js"
import { Accounts, CSRF_HEADER, SESSION_ABSOLUTE_MS, sessionCookieName, type SignedIn } from "./Accounts.js"
import { clientAddress } from "./ClientAddress.js"
import { CurrentPrincipal } from "./Principal.js"

/**
 * The public endpoints that sign a browser in take JSON only, and refuse a request a browser marks
 * as made by another site's page: a cross-site form can post url-encoded or multipart bodies
 * without any preflight, and would sign the victim's browser in to the attacker's account (login
 * CSRF). A JSON body needs a CORS preflight the service never grants (docs/dashboard-auth.md).
 */
const signInRequestProblem = (request: HttpServerRequest.HttpServerRequest, what: string) => {
  const site = request.headers["sec-fetch-site"]
  if (site === "cross-site") {
    return Effect.fail(
      new Forbidden({ message: `${what} from another site's page is refused (Sec-Fetch-Site: cross-site). Use the dashboard itself.` })
    )
  }
  const contentType = request.headers["content-type"]
  const mediaType = (contentType ?? "").split(";")[0]!.trim().toLowerCase()
  if (mediaType !== "application/json") {
    return Effect.fail(
      new UnsupportedMediaType({
        message: `${what} takes a JSON body: send Content-Type: application/json${
          contentType === undefined ? "" : ` (not '${contentType.slice(0, 100)}')`
        }.`
      })
    )
  }
  return Effect.void
}

/** Handlers of sign-in (public) and users/invites (authenticated): docs/dashboard-auth.md. */

export const AuthHttpLive = HttpApiBuilder.group(Api, "auth", (handlers) =>
  Effect.gen(function*() {
    const accounts = yield* Accounts
    const config = yield* AppConfig
    const secure = config.publicUrl.startsWith("https:")
    const cookieName = sessionCookieName(config.publicUrl)
    const cookieOptions = { httpOnly: true, sameSite: "lax", path: "/", secure } as const

    const setSessionCookie = (secret: string) =>
      HttpApp.appendPreResponseHandler((_request, response) =>
        Effect.orDie(
          HttpServerResponse.setCookie(response, cookieName, secret, {
            ...cookieOptions,
            maxAge: Duration.millis(SESSION_ABSOLUTE_MS)
          })
        )
      )

    const clearSessionCookie = HttpApp.appendPreResponseHandler((_request, response) =>
      Effect.orDie(HttpServerResponse.setCookie(response, cookieName, "", { ...cookieOptions, maxAge: Duration.zero }))
    )

    const signedIn = (result: SignedIn) =>
      Effect.as(setSessionCookie(result.secret), { user: result.user, csrfToken: result.csrfToken })

    const retryAfter = (error: RateLimited) =>
      HttpApp.appendPreResponseHandler((_request, response) =>
        Effect.succeed(HttpServerResponse.setHeader(response, "retry-after", String(error.retryAfterSeconds)))
      )

    const cookieOf = Effect.map(HttpServerRequest.HttpServerRequest, (request) => request.cookies[cookieName])

    return handlers
      .handle("login", ({ payload }) =>
        Effect.gen(function*() {
          const request = yield* HttpServerRequest.HttpServerRequest
          yield* signInRequestProblem(request, "Sign-in")
          const address = clientAddress(
            Option.getOrUndefined(request.remoteAddress),
            request.headers["x-forwarded-for"],
            config.trustProxy
          )
          return yield* accounts.login({ email: payload.email, password: payload.password, address })
        }).pipe(
          Effect.tapErrorTag("RateLimited", retryAfter),
          Effect.flatMap(signedIn)
        ))
      .handle("me", () =>
        Effect.gen(function*() {
          const active = yield* accounts.session(yield* cookieOf)
          return { user: active.user, csrfToken: active.csrfToken }
        }))
      .handle("logout", () =>
        Effect.gen(function*() {
          const request = yield* HttpServerRequest.HttpServerRequest
          // No live session: nothing to end, the cookie is cleared all the same.
          const active = yield* Effect.option(accounts.session(request.cookies[cookieName]))
          if (active._tag === "Some") {
            yield* accounts.checkCsrf(active.value, request.method, request.headers[CSRF_HEADER])
            yield* accounts.logout(active.value)
          }
          yield* clearSessionCookie
        }))
      .handle("orgs", () =>
        Effect.gen(function*() {
          const active = yield* accounts.session(yield* cookieOf)
          const { current, orgs } = yield* accounts.organizationsOf(active)
          return { current, orgs: orgs.map((org) => ({ id: org.id, slug: org.slug, name: org.name, role: org.role })) }
        }))
      .handle("switchOrg", ({ payload }) =>
        Effect.gen(function*() {
          const request = yield* HttpServerRequest.HttpServerRequest
          const active = yield* accounts.session(request.cookies[cookieName])
          yield* accounts.checkCsrf(active, request.method, request.headers[CSRF_HEADER])
          return yield* accounts.switchOrganization(active, payload.orgId)
        }))
      .handle("acceptInvite", ({ payload }) =>
        Effect.gen(function*() {
          yield* signInRequestProblem(yield* HttpServerRequest.HttpServerRequest, "Accepting an invite")
          return yield* accounts.acceptInvite(payload)
        }).pipe(
          Effect.tapErrorTag("RateLimited", retryAfter),
          Effect.flatMap(signedIn)
        ))
  })
)

export const UsersHttpLive = HttpApiBuilder.group(Api, "users", (handlers) =>
  Effect.gen(function*() {
    const accounts = yield* Accounts
    return handlers
      .handle("invite", ({ payload }) =>
        Effect.gen(function*() {
          const principal = yield* CurrentPrincipal
          const { row, token } = yield* accounts.invite({
            orgId: principal.orgId,
            email: payload.email,
            name: payload.name ?? null,
            role: payload.role ?? "admin",
            invitedBy: principal.userId
          })
          return {
            id: row.id,
            email: row.email,
            name: row.name,
            role: row.role,
            token,
            expiresAt: row.expires_at.toISOString(),
            createdAt: row.created_at.toISOString()
          }
        }))
      .handle("list", () =>
        Effect.gen(function*() {
          const principal = yield* CurrentPrincipal
          const rows = yield* accounts.listMembers(principal.orgId)
          return {
            users: rows.map((row) => ({ id: row.id, email: row.email, name: row.name, createdAt: row.created_at.toISOString() }))
          }
        }))
  })
)
