import { Clock, Effect, Runtime } from "effect"
import { Unauthorized } from "../Domain/Errors.js"
import { isUuid } from "../Domain/Ids.js"
import type { Principal } from "./Principal.js"
import { displayPrefix, generateToken, hashToken, type Scope } from "./Token.js"
import { type PrincipalRow, toPrincipal, TokensRepo } from "./TokensRepo.js"

/** Cached answers live this long, so a revocation made by another instance bites within a second. */
export const TOKEN_CACHE_TTL_MS = 900
const CACHE_LIMIT = 50_000

interface CacheEntry {
  readonly row: PrincipalRow | undefined
  readonly fetchedAt: number
  /** The verdict at fetchedAt; it holds for the entry's life unless the token expires meanwhile. */
  readonly verdict: CachedAuth
  /** A reload has been started (see fromCache). */
  refreshing: boolean
}

export type CachedAuth =
  | { readonly _tag: "Hit"; readonly principal: Principal }
  | { readonly _tag: "Denied"; readonly message: string }
  | { readonly _tag: "Miss" }

const MISS: CachedAuth = { _tag: "Miss" }

const missing = "Send an access token: Authorization: Bearer <token> (create one under Settings → Tokens, or with `jobmon token create`)."

const judge = (row: PrincipalRow | undefined, now: number): CachedAuth => {
  if (row === undefined) return { _tag: "Denied", message: "The access token is not valid: it is unknown or malformed." }
  if (row.revoked_at !== null) return { _tag: "Denied", message: "The access token has been revoked." }
  if (row.expires_at !== null && row.expires_at.getTime() <= now) {
    return { _tag: "Denied", message: `The access token expired at ${row.expires_at.toISOString()}.` }
  }
  return { _tag: "Hit", principal: toPrincipal(row) }
}

export class Tokens extends Effect.Service<Tokens>()("jobmon/Tokens", {
  dependencies: [TokensRepo.Default],
  effect: Effect.gen(function*() {
    const repo = yield* TokensRepo
    const runtime = yield* Effect.runtime<never>()
    const cache = new Map<string, CacheEntry>()
    /** Bumped by every revocation: a load that started before it must not refill the cache. */
    let generation = 0

    const fetch = (raw: string) =>
      Effect.gen(function*() {
        const now = yield* Clock.currentTimeMillis
        const startedIn = generation
        const row = raw.length > 512 ? undefined : yield* repo.findByHash(hashToken(raw))
        const verdict = judge(row, now)
        if (startedIn === generation) {
          if (cache.size >= CACHE_LIMIT) cache.clear()
          cache.set(raw, { row, fetchedAt: now, verdict, refreshing: false })
        }
        return verdict
      })

    /**
     * The synchronous part of authentication, for the ping hot path: answers from the cache or says
     * Miss. An entry past half its life is reloaded in the background while it still answers, so a
     * token in steady use never misses (every miss makes its requests wait for the database); no
     * answer comes from an entry older than TOKEN_CACHE_TTL_MS.
     */
    const fromCache = (raw: string, now: number): CachedAuth => {
      const entry = cache.get(raw)
      if (entry === undefined) return MISS
      const age = now - entry.fetchedAt
      if (age > TOKEN_CACHE_TTL_MS) return MISS
      if (age > TOKEN_CACHE_TTL_MS / 2 && !entry.refreshing) {
        entry.refreshing = true
        Runtime.runFork(runtime)(fetch(raw).pipe(Effect.catchAllCause(() => Effect.sync(() => void (entry.refreshing = false)))))
      }
      const row = entry.row
      if (row !== undefined && row.expires_at !== null && row.expires_at.getTime() <= now) return judge(row, now)
      return entry.verdict
    }

    const authenticate = (authorization: string | undefined) =>
      Effect.gen(function*() {
        const raw = parseBearer(authorization)
        if (raw === undefined) return yield* new Unauthorized({ message: missing })
        const now = yield* Clock.currentTimeMillis
        let verdict = fromCache(raw, now)
        if (verdict._tag === "Miss") verdict = yield* fetch(raw)
        if (verdict._tag === "Denied") return yield* new Unauthorized({ message: verdict.message })
        if (verdict._tag === "Miss") return yield* Effect.dieMessage("token cache answered Miss after a load")
        return verdict.principal
      })

    /** Fills the cache after a Miss on the hot path. */
    const load = fetch

    const create = (input: {
      readonly orgId: string
      readonly userId: string | null
      readonly name: string
      readonly scope: Scope
      readonly expiresAt: Date | null
      /** Use this token string instead of a random one (BOOTSTRAP_TOKEN). */
      readonly token?: string | undefined
    }) =>
      Effect.gen(function*() {
        const token = input.token ?? generateToken()
        const row = yield* repo.insert({
          orgId: input.orgId,
          userId: input.userId,
          name: input.name,
          scope: input.scope,
          hash: hashToken(token),
          prefix: displayPrefix(token),
          expiresAt: input.expiresAt
        })
        return { row, token }
      })

    const revoke = (orgId: string, tokenId: string) =>
      Effect.gen(function*() {
        if (!isUuid(tokenId)) return false
        const revoked = yield* repo.revoke(orgId, tokenId)
        // Revocation is immediate on this instance; other instances notice within the cache TTL.
        if (revoked) {
          generation++
          cache.clear()
        }
        return revoked
      })

    return {
      authenticate,
      fromCache,
      load,
      create,
      revoke,
      list: repo.list
    } as const
  })
}) {}

export const parseBearer = (authorization: string | undefined): string | undefined => {
  if (authorization === undefined) return undefined
  const match = /^\s*Bearer\s+(\S+)\s*$/i.exec(authorization)
  return match?.[1]
}
