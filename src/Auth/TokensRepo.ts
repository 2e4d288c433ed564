import { SqlClient } from "@effect/sql"
import { Effect } from "effect"
import type { Principal } from "./Principal.js"
import type { Scope } from "./Scopes.js"

export interface TokenRow {
  readonly id: string
  readonly name: string
  readonly scope: Scope
  readonly token_prefix: string
  readonly user_id: string | null
  readonly created_at: Date
  readonly expires_at: Date | null
  readonly revoked_at: Date | null
  readonly last_used_at: Date | null
}

export interface PrincipalRow {
  readonly id: string
  readonly org_id: string
  readonly scope: Scope
  readonly user_id: string | null
  readonly user_name: string | null
  readonly user_email: string | null
  readonly expires_at: Date | null
  readonly revoked_at: Date | null
}

export const toPrincipal = (row: PrincipalRow): Principal => ({
  tokenId: row.id,
  orgId: row.org_id,
  scope: row.scope,
  userId: row.user_id,
  userName: row.user_name,
  userEmail: row.user_email
})

/** Advisory lock class serialising the creation of one organization's tokens (quota). */
const LOCK_ORG_TOKENS = 731_642

export class TokensRepo extends Effect.Service<TokensRepo>()("jobmon/TokensRepo", {
  effect: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient

    const findByHash = (hash: Buffer) =>
      sql<PrincipalRow>`
        select t.id, t.org_id, t.scope, t.user_id, u.name as user_name, u.email as user_email,
               t.expires_at, t.revoked_at
        from api_tokens t left join users u on u.id = t.user_id
        where t.token_hash = ${hash}`.pipe(
        Effect.map((rows) => rows[0]),
        Effect.orDie,
        Effect.withSpan("TokensRepo.findByHash")
      )

    const insert = (row: {
      orgId: string
      userId: string | null
      name: string
      scope: Scope
      hash: Buffer
      prefix: string
      expiresAt: Date | null
    }) =>
      sql<TokenRow>`
        insert into api_tokens (org_id, user_id, name, scope, token_hash, token_prefix, expires_at)
        values (${row.orgId}, ${row.userId}, ${row.name}, ${row.scope}, ${row.hash}, ${row.prefix}, ${row.expiresAt})
        returning id, name, scope, token_prefix, user_id, created_at, expires_at, revoked_at, last_used_at`.pipe(
        Effect.map((rows) => rows[0]!),
        Effect.orDie,
        Effect.withSpan("TokensRepo.insert")
      )

    const list = (orgId: string) =>
      sql<TokenRow>`
        select id, name, scope, token_prefix, user_id, created_at, expires_at, revoked_at, last_used_at
        from api_tokens where org_id = ${orgId} and revoked_at is null
        order by created_at, id`.pipe(Effect.orDie, Effect.withSpan("TokensRepo.list"))

    const revoke = (orgId: string, tokenId: string) =>
      sql<{ id: string }>`
        update api_tokens set revoked_at = now()
        where org_id = ${orgId} and id = ${tokenId} and revoked_at is null
        returning id`.pipe(
        Effect.map((rows) => rows.length > 0),
        Effect.orDie,
        Effect.withSpan("TokensRepo.revoke")
      )

    /** Records that these tokens were used at `at` (never moving last_used_at back). */
    const touch = (tokenIds: ReadonlyArray<string>, at: Date) =>
      tokenIds.length === 0
        ? Effect.void
        : sql`
          update api_tokens set last_used_at = ${at}
          where id in ${sql.in(tokenIds)} and (last_used_at is null or last_used_at < ${at})`.pipe(
          Effect.asVoid,
          Effect.orDie,
          Effect.withSpan("TokensRepo.touch")
        )

    /**
     * Serialises the creation of an organization's tokens until the transaction ends, so that
     * counting them and adding one cannot interleave with another request doing the same.
     */
    const lockOrgTokens = (orgId: string) =>
      sql`select pg_advisory_xact_lock(${LOCK_ORG_TOKENS}, hashtext(${orgId}::text))`.pipe(Effect.asVoid, Effect.orDie)

    /** Tokens of the organization neither revoked nor expired at `at`. */
    const countActive = (orgId: string, at: Date) =>
      sql<{ n: number }>`
        select count(*)::int as n from api_tokens
        where org_id = ${orgId} and revoked_at is null and (expires_at is null or expires_at > ${at})`.pipe(
        Effect.map((rows) => rows[0]?.n ?? 0),
        Effect.orDie
      )

    return { sql, findByHash, insert, list, revoke, touch, lockOrgTokens, countActive } as const
  })
}) {}
