import { HttpApiEndpoint, HttpApiGroup, HttpApiMiddleware, HttpApiSchema, HttpApiSecurity, OpenApi } from "@effect/platform"
import { Schema } from "effect"
import { Conflict, Forbidden, NotFound, RateLimited, Unauthorized, UnsupportedMediaType, ValidationError } from "../Domain/Errors.js"
import { IsoTimestamp } from "../Domain/Schemas.js"
import { RequiredScope } from "./Access.js"
import { CurrentPrincipal } from "./Principal.js"
import { Scopes } from "./Scopes.js"

/**
 * Authentication for every `/api` endpoint but the public ones: `Authorization: Bearer <token>`, or
 * the dashboard's session cookie (with `X-CSRF-Token` on changes); a Bearer header wins. It also
 * enforces the scope each endpoint declares (`RequiredScope`, src/Auth/Access.ts: tokens and invites
 * `admin`, the ping intake `ping` and a token; otherwise GET `read` and other methods `write`),
 * looked up by the route the router matched (docs/decisions.md#tokens-and-scopes, docs/security.md).
 */
export class Authentication extends HttpApiMiddleware.Tag<Authentication>()("jobmon/Authentication", {
  failure: Schema.Union(Unauthorized, Forbidden, RateLimited),
  provides: CurrentPrincipal,
  security: {
    bearer: HttpApiSecurity.bearer,
    session: HttpApiSecurity.annotate(
      HttpApiSecurity.apiKey({ in: "cookie", key: "jobmon_session" }),
      OpenApi.Description,
      "The dashboard's session cookie, set by POST /api/auth/login (named __Host-jobmon_session when the service is served over https). Requests other than GET and HEAD must also send X-CSRF-Token."
    )
  }
}) {}

export const ScopeSchema = Schema.Literal(...Scopes).annotations({
  description: "admin: everything incl. tokens; write: read and change; read: GET only; ping: only the ping intake; metrics: only the Prometheus scrape (GET /metrics)"
})

export const TokenInfo = Schema.Struct({
  id: Schema.String,
  name: Schema.String,
  scope: ScopeSchema,
  prefix: Schema.String.annotations({ description: "the first characters of the token, not secret" }),
  expiresAt: Schema.NullOr(IsoTimestamp),
  createdAt: IsoTimestamp,
  lastUsedAt: Schema.NullOr(IsoTimestamp)
})

export const CreatedToken = Schema.Struct({
  id: Schema.String,
  name: Schema.String,
  scope: ScopeSchema,
  expiresAt: Schema.NullOr(IsoTimestamp),
  createdAt: IsoTimestamp,
  token: Schema.String.annotations({ description: "the secret token; shown only in this response" })
})

export const CreateTokenRequest = Schema.Struct({
  name: Schema.String.pipe(Schema.minLength(1), Schema.maxLength(200)),
  scope: ScopeSchema,
  expiresAt: Schema.optional(Schema.NullOr(Schema.String))
})

export class TokensApi extends HttpApiGroup.make("tokens")
  .add(
    HttpApiEndpoint.post("create", "/api/tokens")
      .setPayload(CreateTokenRequest)
      .addSuccess(CreatedToken, { status: 201 })
      .addError(Conflict)
      .annotate(OpenApi.Summary, "Create an access token (admin); the token is shown once")
  )
  .add(
    HttpApiEndpoint.get("list", "/api/tokens")
      .addSuccess(Schema.Struct({ tokens: Schema.Array(TokenInfo) }))
      .annotate(OpenApi.Summary, "List the organization's active tokens (admin); no secrets")
  )
  .add(
    HttpApiEndpoint.del("revoke", "/api/tokens/:tokenId")
      .setPath(Schema.Struct({ tokenId: Schema.String }))
      .addSuccess(HttpApiSchema.NoContent)
      .addError(NotFound)
      .annotate(OpenApi.Summary, "Revoke a token (admin); effective at once")
  )
  .middleware(Authentication)
  .annotate(RequiredScope, "admin")
  .annotate(OpenApi.Title, "Tokens")
{}

export const SessionUser = Schema.Struct({
  id: Schema.String,
  email: Schema.String,
  name: Schema.String,
  orgId: Schema.String
})

export const SignedInBody = Schema.Struct({
  user: SessionUser,
  csrfToken: Schema.String.annotations({
    description: "send it as the X-CSRF-Token header on every request other than GET/HEAD made with the session cookie"
  })
})

export const LoginRequest = Schema.Struct({
  email: Schema.String.pipe(Schema.maxLength(320)),
  password: Schema.String.pipe(Schema.maxLength(4096))
})

export const AcceptInviteRequest = Schema.Struct({
  token: Schema.String.pipe(Schema.maxLength(512)),
  name: Schema.String,
  password: Schema.String.pipe(Schema.maxLength(4096))
})

export const RoleSchema = Schema.Literal("admin", "member").annotations({
  description: "admin: acts with the admin scope; member: acts with the write scope (no tokens, no invites)"
})

export const OrganizationOfUser = Schema.Struct({
  id: Schema.String,
  slug: Schema.String,
  name: Schema.String,
  role: RoleSchema
})

export const SessionOrganizations = Schema.Struct({
  current: Schema.String.annotations({ description: "the id of the organization the session acts in" }),
  orgs: Schema.Array(OrganizationOfUser).annotations({ description: "every organization the user belongs to, oldest membership first" })
})

export const SwitchOrganizationRequest = Schema.Struct({
  orgId: Schema.String.pipe(Schema.maxLength(100))
})

export const CreateInviteRequest = Schema.Struct({
  email: Schema.String.pipe(Schema.maxLength(320)),
  name: Schema.optional(Schema.NullOr(Schema.String)),
  role: Schema.optional(RoleSchema)
})

export const CreatedInvite = Schema.Struct({
  id: Schema.String,
  email: Schema.String,
  name: Schema.NullOr(Schema.String),
  role: RoleSchema,
  token: Schema.String.annotations({ description: "the invite token; shown only in this response" }),
  expiresAt: IsoTimestamp,
  createdAt: IsoTimestamp
})

export const UserInfo = Schema.Struct({
  id: Schema.String,
  email: Schema.String,
  name: Schema.String,
  createdAt: IsoTimestamp
})

/** Sign-in for the dashboard. Public: these endpoints read the session cookie themselves. */
export class AuthApi extends HttpApiGroup.make("auth")
  .add(
    HttpApiEndpoint.post("login", "/api/auth/login")
      .setPayload(LoginRequest)
      .addSuccess(SignedInBody)
      .addError(Unauthorized)
      .addError(RateLimited)
      .addError(Forbidden)
      .addError(UnsupportedMediaType)
      .annotate(OpenApi.Summary, "Sign in with email and password (public); sets the jobmon_session cookie")
  )
  .add(
    HttpApiEndpoint.get("me", "/api/auth/me")
      .addSuccess(SignedInBody)
      .addError(Unauthorized)
      .annotate(OpenApi.Summary, "The signed-in user and the session's CSRF token (session cookie)")
  )
  .add(
    HttpApiEndpoint.post("logout", "/api/auth/logout")
      .addSuccess(HttpApiSchema.NoContent)
      .addError(Forbidden)
      .annotate(OpenApi.Summary, "Sign out: ends the session and clears the cookie (needs X-CSRF-Token)")
  )
  .add(
    HttpApiEndpoint.get("orgs", "/api/auth/orgs")
      .addSuccess(SessionOrganizations)
      .addError(Unauthorized)
      .annotate(OpenApi.Summary, "The signed-in user's organizations and the one the session acts in (session cookie)")
  )
  .add(
    HttpApiEndpoint.post("switchOrg", "/api/auth/org")
      .setPayload(SwitchOrganizationRequest)
      .addSuccess(SignedInBody)
      .addError(Unauthorized)
      .addError(Forbidden)
      .addError(NotFound)
      .annotate(
        OpenApi.Summary,
        "Switch the session to another of the user's organizations (session cookie, X-CSRF-Token); every later request sees that organization"
      )
  )
  .add(
    HttpApiEndpoint.post("acceptInvite", "/api/auth/invites/accept")
      .setPayload(AcceptInviteRequest)
      .addSuccess(SignedInBody)
      .addError(NotFound)
      .addError(Conflict)
      .addError(ValidationError)
      .addError(Forbidden)
      .addError(UnsupportedMediaType)
      .annotate(OpenApi.Summary, "Accept an invite (public): creates the user in the inviter's organization and signs in")
  )
  .annotate(OpenApi.Title, "Sign-in")
{}

export class UsersApi extends HttpApiGroup.make("users")
  .add(
    HttpApiEndpoint.post("invite", "/api/auth/invites")
      .setPayload(CreateInviteRequest)
      .addSuccess(CreatedInvite, { status: 201 })
      .addError(Conflict)
      .annotate(RequiredScope, "admin")
      .annotate(OpenApi.Summary, "Invite a user to the organization (admin); the token is shown once and lasts 7 days")
  )
  .add(
    HttpApiEndpoint.get("list", "/api/users")
      .addSuccess(Schema.Struct({ users: Schema.Array(UserInfo) }))
      .annotate(OpenApi.Summary, "The organization's users")
  )
  .middleware(Authentication)
  .annotate(OpenApi.Title, "Users")
{}
