import { HttpApiBuilder, HttpApp, HttpServerRequest, HttpServerResponse } from "@effect/platform"
import { Duration, Effect } from "effect"
import { AppConfig } from "../Config.js"
import { RateLimited } from "../Domain/Errors.js"
import { Api } from "../Http/Api.js"
import { Accounts, CSRF_HEADER, SESSION_ABSOLUTE_MS, SESSION_COOKIE, type SignedIn } from "./Accounts.js"
import { CurrentPrincipal } from "./Principal.js"

/** Handlers of sign-in (public) and users/invites (authenticated): docs/dashboard-auth.md. */

export const AuthHttpLive = HttpApiBuilder.group(Api, "auth", (handlers) =>
  Effect.gen(function*() {
    const accounts = yield* Accounts
    const config = yield* AppConfig
    const secure = config.publicUrl.startsWith("https:")
    const cookieOptions = { httpOnly: true, sameSite: "lax", path: "/", secure } as const

    const setSessionCookie = (secret: string) =>
      HttpApp.appendPreResponseHandler((_request, response) =>
        Effect.orDie(
          HttpServerResponse.setCookie(response, SESSION_COOKIE, secret, {
            ...cookieOptions,
            maxAge: Duration.millis(SESSION_ABSOLUTE_MS)
          })
        )
      )

    const clearSessionCookie = HttpApp.appendPreResponseHandler((_request, response) =>
      Effect.orDie(HttpServerResponse.setCookie(response, SESSION_COOKIE, "", { ...cookieOptions, maxAge: Duration.zero }))
    )

    const signedIn = (result: SignedIn) =>
      Effect.as(setSessionCookie(result.secret), { user: result.user, csrfToken: result.csrfToken })

    const retryAfter = (error: RateLimited) =>
      HttpApp.appendPreResponseHandler((_request, response) =>
        Effect.succeed(HttpServerResponse.setHeader(response, "retry-after", String(error.retryAfterSeconds)))
      )

    const cookieOf = Effect.map(HttpServerRequest.HttpServerRequest, (request) => request.cookies[SESSION_COOKIE])

    return handlers
      .handle("login", ({ payload }) =>
        accounts.login(payload.email.trim(), payload.password).pipe(
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
          const active = yield* Effect.option(accounts.session(request.cookies[SESSION_COOKIE]))
          if (active._tag === "Some") {
            yield* accounts.checkCsrf(active.value, request.method, request.headers[CSRF_HEADER])
            yield* accounts.logout(active.value)
          }
          yield* clearSessionCookie
        }))
      .handle("acceptInvite", ({ payload }) => Effect.flatMap(accounts.acceptInvite(payload), signedIn))
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
