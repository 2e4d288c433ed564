import { HttpApiEndpoint, HttpApiGroup, HttpApiMiddleware, HttpApiSchema, HttpApiSecurity, OpenApi } from "@effect/platform"
import { Schema } from "effect"
import { Forbidden, NotFound, Unauthorized } from "../Domain/Errors.js"
import { CurrentPrincipal } from "./Principal.js"
import { Scopes } from "./Token.js"

/**
 * Bearer-token authentication for every `/api` endpoint but the public ones. It also enforces the
 * token's scope from the request: GET needs `read`, other methods `write`, `/api/tokens` `admin`,
 * the ping intake `ping` (decisions §2).
 */
export class Authentication extends HttpApiMiddleware.Tag<Authentication>()("jobmon/Authentication", {
  failure: Schema.Union(Unauthorized, Forbidden),
  provides: CurrentPrincipal,
  security: { bearer: HttpApiSecurity.bearer }
}) {}

export const ScopeSchema = Schema.Literal(...Scopes).annotations({
  description: "admin: everything incl. tokens; write: read and change; read: GET only; ping: only the ping intake"
})

export const IsoTimestamp = Schema.String.annotations({ description: "ISO 8601 UTC timestamp", examples: ["2026-01-31T12:00:00.000Z"] })

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
  .annotate(OpenApi.Title, "Tokens")
{}
