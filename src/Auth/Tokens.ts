import { Clock, Effect, Queue, Runtime } from "effect"
import { AppConfig } from "../Config.js"
import { Conflict, Unauthorized, ValidationError } from "../Domain/Errors.js"
import { isUuid } from "../Domain/Ids.js"
import { CONTROL_CHARACTERS } from "./Password.js"
import type { Principal } from "./Principal.js"
import type { Scope } from "./Scopes.js"
import { displayPrefix, generateToken, hashToken } from "./Token.js"
import { type PrincipalRow, toPrincipal, TokensRepo } from "./TokensRepo.js"

/** Cached answers live this long, so a revocation made by another instance bites within a second. */
export const TOKEN_CACHE_TTL_MS = 900
const CACHE_LIMIT = 50_000
/** A token's last_used_at is written at most this often (per instance), in batches, off the request. */
export const TOKEN_USE_RECORD_EVERY_MS = 60_000
/** How often the uses noted since the last write are written. */
const USE_FLUSH_EVERY = "1 second"

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
  scoped: Effect.gen(function*() {
    const repo = yield* TokensRepo
    const config = yield* AppConfig
    const runtime = yield* Effect.runtime<never>()
    const cache = new Map<string, CacheEntry>()
    /** Bumped by every revocation: a load that started before it must not refill the cache. */
    let generation = 0

    /**
     * last_used_at: a successful authentication notes the token here (a map look-up on the ping
     * path); a background fiber writes the noted tokens a second after the first of them in one
     * statement. A token is noted at most once per TOKEN_USE_RECORD_EVERY_MS, so a busy token costs
     * a write a minute. With nothing noted the fiber waits for the next note, not on a timer: an idle
     * service (or a test that moves the clock by a day) wakes nothing.
     */
    const lastNoted = new Map<string, number>()
    let noted = new Set<string>()
    const wake = yield* Queue.sliding<void>(1)
    const noteUse = (tokenId: string, now: number) => {
      const last = lastNoted.get(tokenId)
      if (last !== undefined && now - last < TOKEN_USE_RECORD_EVERY_MS) return
      if (lastNoted.size >= CACHE_LIMIT) lastNoted.clear()
      lastNoted.set(tokenId, now)
      if (noted.size === 0) Queue.unsafeOffer(wake, undefined)
      noted.add(tokenId)
    }
    const writeUses = Effect.gen(function*() {
      if (noted.size === 0) return
      const ids = [...noted]
      noted = new Set()
      const at = yield* Clock.currentTimeMillis
      yield* repo.touch(ids, new Date(at))
    }).pipe(
      Effect.catchAllCause((cause) => Effect.logWarning("could not record when tokens were last used", cause))
    )
    yield* Effect.forkScoped(Effect.forever(Queue.take(wake).pipe(Effect.zipRight(Effect.sleep(USE_FLUSH_EVERY)), Effect.zipRight(writeUses))))
    yield* Effect.addFinalizer(() => writeUses)

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
      if (entry.verdict._tag === "Hit") noteUse(entry.verdict.principal.tokenId, now)
      return entry.verdict
    }

    const authenticate = (authorization: string | undefined) =>
      Effect.gen(function*() {
        const raw = parseBearer(authorization)
        if (raw === undefined) return yield* new Unauthorized({ message: missing })
        const now = yield* Clock.currentTimeMillis
        let verdict = fromCache(raw, now)
        if (verdict._tag === "Miss") verdict = yield* load(raw)
        if (verdict._tag === "Denied") return yield* new Unauthorized({ message: verdict.message })
        if (verdict._tag === "Miss") return yield* Effect.dieMessage("token cache answered Miss after a load")
        return verdict.principal
      })

    /** Fills the cache after a Miss (the ping path's and authenticate's); a use of the token. */
    const load = (raw: string) =>
      Effect.tap(fetch(raw), (verdict) =>
        verdict._tag === "Hit"
          ? Effect.map(Clock.currentTimeMillis, (now) => noteUse(verdict.principal.tokenId, now))
          : Effect.void)

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
        if (CONTROL_CHARACTERS.test(input.name)) {
          return yield* new ValidationError({ path: "name", message: "name must not contain control characters (such as NUL)." })
        }
        const token = input.token ?? generateToken()
        const at = new Date(yield* Clock.currentTimeMillis)
        const limit = config.maxActiveTokensPerOrg
        const row = yield* repo.sql.withTransaction(
          Effect.gen(function*() {
            yield* repo.lockOrgTokens(input.orgId)
            if ((yield* repo.countActive(input.orgId, at)) >= limit) {
              return yield* new Conflict({
                message: `The organization already has ${limit} active tokens, the most it may have (MAX_ACTIVE_TOKENS_PER_ORG). ` +
                  `Revoke tokens that are no longer used (DELETE /api/tokens/{tokenId}), then create this one.`
              })
            }
            return yield* repo.insert({
              orgId: input.orgId,
              userId: input.userId,
              name: input.name,
              scope: input.scope,
              hash: hashToken(token),
              prefix: displayPrefix(token),
              expiresAt: input.expiresAt
            })
          })
        ).pipe(Effect.catchTag("SqlError", Effect.die))
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
