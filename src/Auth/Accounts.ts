import { Clock, Effect } from "effect"
import { createHash, randomBytes, timingSafeEqual } from "node:crypto"
import { AppConfig } from "../Config.js"
import { Conflict, Forbidden, NotFound, RateLimited, Unauthorized, ValidationError } from "../Domain/Errors.js"
import { AccountsRepo, type Role, type SessionRow } from "./AccountsRepo.js"
import { addressKey } from "./ClientAddress.js"
import {
  judgeSignIn,
  PASSWORD_HASHES_AT_ONCE,
  PASSWORD_HASHES_WAITING,
  refusalMessage,
  SIGN_IN_CHECKS_AT_ONCE,
  SIGN_IN_CHECKS_WAITING,
  SIGN_IN_KNOWN_ADDRESS_MS,
  type SignInLimit,
  SIGN_IN_WINDOW_MS
} from "./Limits.js"
import {
  cleanEmail,
  CONTROL_CHARACTERS,
  emailProblem,
  hashPassword,
  needsRehash,
  passwordProblem,
  verifyPassword
} from "./Password.js"
import type { Principal } from "./Principal.js"
import type { Scope } from "./Scopes.js"

/** Dashboard accounts: users with passwords, browser sessions and invites (docs/dashboard-auth.md). */

/** The session cookie's name over plain http. */
export const SESSION_COOKIE = "jobmon_session"
/**
 * Its name when the service is served over https: the `__Host-` prefix makes browsers accept the
 * cookie only with Secure, Path=/ and no Domain, so a sibling subdomain cannot set or shadow it.
 */
export const HOST_SESSION_COOKIE = "__Host-jobmon_session"
/** The session cookie's name for a service whose PUBLIC_URL is `publicUrl`. */
export const sessionCookieName = (publicUrl: string): string =>
  publicUrl.startsWith("https:") ? HOST_SESSION_COOKIE : SESSION_COOKIE
export const CSRF_HEADER = "x-csrf-token"
export const SESSION_IDLE_MS = 7 * 24 * 3600_000
export const SESSION_ABSOLUTE_MS = 30 * 24 * 3600_000
/** last_seen_at is written at most this often per session: reads stay reads. */
const TOUCH_EVERY_MS = 60_000
export const INVITE_TTL_MS = 7 * 24 * 3600_000
export const INVITE_PREFIX = "jmi_"

/** A signed-in user acts with the scope of their role: admin → admin, member → write. */
export const scopeOfRole = (role: Role | null): Scope => (role === "admin" ? "admin" : "write")

export const sha256 = (value: string): Buffer => createHash("sha256").update(value, "utf8").digest()

export interface SessionUser {
  readonly id: string
  readonly email: string
  readonly name: string
  readonly orgId: string
}

export interface SignedIn {
  readonly user: SessionUser
  readonly csrfToken: string
  /** The cookie value: goes to the browser only, never stored. */
  readonly secret: string
}

export interface ActiveSession {
  readonly id: string
  readonly user: SessionUser
  readonly role: Role | null
  readonly csrfToken: string
}

const wrongCredentials = () =>
  new Unauthorized({ message: "The email or password is wrong. Check both and try again." })

const noSession = (reason: string) => new Unauthorized({ message: `${reason} Sign in again (POST /api/auth/login).` })

const sameText = (a: string, b: string) => {
  const x = Buffer.from(a, "utf8")
  const y = Buffer.from(b, "utf8")
  return x.length === y.length && timingSafeEqual(x, y)
}

export const checkEmail = (email: string, path = "email") => {
  const problem = emailProblem(email)
  return problem === undefined ? Effect.void : Effect.fail(new ValidationError({ path, message: problem }))
}

export const checkPassword = (password: string) => {
  const problem = passwordProblem(password)
  return problem === undefined ? Effect.void : Effect.fail(new ValidationError({ path: "password", message: problem }))
}

const checkName = (name: string) =>
  CONTROL_CHARACTERS.test(name)
    ? Effect.fail(new ValidationError({ path: "name", message: "name must not contain control characters (such as NUL)." }))
    : name.trim().length >= 1 && name.length <= 200
    ? Effect.void
    : Effect.fail(new ValidationError({ path: "name", message: "name must be 1 to 200 characters." }))

/** Sign-in looks up any email (an unknown one is a 401 like a wrong password) but one PostgreSQL cannot store. */
const checkLoginEmail = (email: string) =>
  CONTROL_CHARACTERS.test(email)
    ? Effect.fail(new ValidationError({ path: "email", message: "email must not contain control characters (such as NUL)." }))
    : Effect.void

const busy = () =>
  new RateLimited({
    message: "The service is busy checking other sign-ins and passwords. Try again in 2 s.",
    retryAfterSeconds: 2
  })

/**
 * At most `atOnce` runs of an effect at a time and `waiting` more in line; past that `busy` at once
 * (a queue that grows with an attack is a denial of service of its own).
 */
const boundedGate = Effect.fnUntraced(function*<E>(atOnce: number, waiting: number, busy: () => E) {
  const permits = yield* Effect.makeSemaphore(atOnce)
  let admitted = 0
  return <A, E2, R>(effect: Effect.Effect<A, E2, R>): Effect.Effect<A, E | E2, R> =>
    Effect.suspend((): Effect.Effect<A, E | E2, R> => {
      if (admitted >= atOnce + waiting) return Effect.fail(busy())
      admitted++
      return permits.withPermits(1)(effect).pipe(Effect.ensuring(Effect.sync(() => void admitted--)))
    })
})

/** An organization's slug: what `--org <slug>` names; lower-case letters, digits and inner hyphens. */
export const ORG_SLUG = /^[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?$/

export const orgSlugProblem = (slug: string): string | undefined =>
  ORG_SLUG.test(slug)
    ? undefined
    : `the slug '${slug.slice(0, 80)}' is not valid: use 1 to 63 lower-case letters, digits and hyphens, starting and ending with a letter or digit (for example 'staging').`

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i

/** Refusals of the limits per (email, address) and per address, remembered until they end. */
const REFUSALS_REMEMBERED = 10_000

export class Accounts extends Effect.Service<Accounts>()("jobmon/Accounts", {
  dependencies: [AccountsRepo.Default],
  effect: Effect.gen(function*() {
    const repo = yield* AccountsRepo
    const config = yield* AppConfig
    const now = Effect.map(Clock.currentTimeMillis, (ms) => new Date(ms))

    /**
     * Password hashes, at most PASSWORD_HASHES_AT_ONCE at a time (each holds 128 MiB and a thread
     * of libuv's pool, which DNS lookups and file reads share) with at most PASSWORD_HASHES_WAITING
     * more in line; past that the answer is 429 at once. A hash that started runs to its end with
     * its permit, even if its request is gone.
     */
    const hashGate = yield* boundedGate(PASSWORD_HASHES_AT_ONCE, PASSWORD_HASHES_WAITING, busy)
    const hashing = <A>(work: () => Promise<A>): Effect.Effect<A, RateLimited> =>
      hashGate(Effect.uninterruptible(Effect.promise(work)))

    /** The sign-in limits' database step, bounded per instance (SIGN_IN_CHECKS_AT_ONCE). */
    const checkGate = yield* boundedGate(SIGN_IN_CHECKS_AT_ONCE, SIGN_IN_CHECKS_WAITING, busy)

    /**
     * A refusal for a pair or an address holds until its time is up whatever other requests do (a
     * refused pair or address cannot sign in, so nothing shortens it): while it lasts, requests from
     * there are answered from memory, without the database. The account-wide slow-down depends on
     * the address asking and on other addresses, so it always asks the database.
     */
    const refusals = new Map<string, { readonly limit: SignInLimit; readonly until: number }>()
    const remembered = (keys: ReadonlyArray<string>, at: number) => {
      for (const key of keys) {
        const refusal = refusals.get(key)
        if (refusal === undefined) continue
        if (refusal.until <= at) {
          refusals.delete(key)
          continue
        }
        const retryAfterSeconds = Math.max(1, Math.ceil((refusal.until - at) / 1000))
        return new RateLimited({ message: refusalMessage(refusal.limit, retryAfterSeconds), retryAfterSeconds })
      }
      return undefined
    }
    const remember = (key: string, limit: SignInLimit, until: number) => {
      if (refusals.size >= REFUSALS_REMEMBERED) refusals.clear()
      refusals.set(key, { limit, until })
    }

    const openSession = (user: SessionUser, at: Date) =>
      Effect.gen(function*() {
        const secret = randomBytes(32).toString("base64url")
        const csrfToken = randomBytes(24).toString("base64url")
        yield* repo.purgeSessions(new Date(at.getTime() - SESSION_IDLE_MS), new Date(at.getTime() - SESSION_ABSOLUTE_MS))
        yield* repo.insertSession({ secretHash: sha256(secret), userId: user.id, orgId: user.orgId, csrfToken, at })
        return { user, csrfToken, secret } satisfies SignedIn
      })

    /**
     * Email + password from a client address → a new session. The sign-in limits are checked and
     * the attempt recorded in one step before the password is hashed (docs/dashboard-auth.md).
     */
    const login = (input: { email: string; password: string; address: string }) =>
      Effect.gen(function*() {
        const email = cleanEmail(input.email)
        yield* checkLoginEmail(email)
        const address = addressKey(input.address)
        const at = yield* now
        // The pair's key is the email as given (NFC): another spelling only misses this memory.
        const pairKey = `pair ${address} ${email}`
        const addressOnlyKey = `address ${address}`
        const known = remembered([addressOnlyKey, pairKey], at.getTime())
        if (known !== undefined) return yield* known
        const reservation = yield* checkGate(repo.reserveSignIn({
          email,
          address,
          at,
          since: new Date(at.getTime() - SIGN_IN_WINDOW_MS),
          knownSince: new Date(at.getTime() - SIGN_IN_KNOWN_ADDRESS_MS),
          judge: (history) => judgeSignIn(history, at.getTime())
        }))
        if (reservation._tag === "Refused") {
          if (reservation.limit !== "account") {
            remember(reservation.limit === "pair" ? pairKey : addressOnlyKey, reservation.limit, reservation.until)
          }
          return yield* new RateLimited({ message: reservation.message, retryAfterSeconds: reservation.retryAfterSeconds })
        }
        const member = yield* repo.findMemberByEmail(email)
        const storedHash = member?.password_hash ?? null
        const ok = yield* hashing(() => verifyPassword(input.password, storedHash)).pipe(
          Effect.tapError(() => repo.releaseAttempt(reservation.attemptId))
        )
        if (!ok || member === undefined || storedHash === null) return yield* wrongCredentials()
        yield* repo.signInSucceeded({
          attemptId: reservation.attemptId,
          email,
          address,
          at,
          knownBefore: new Date(at.getTime() - SIGN_IN_KNOWN_ADDRESS_MS)
        })
        if (needsRehash(storedHash)) {
          // Older parameters: the password is at hand only now. A busy service tries next time.
          yield* hashing(() => hashPassword(input.password)).pipe(
            Effect.flatMap((next) => repo.replacePasswordHash(member.id, storedHash, next)),
            Effect.catchTag("RateLimited", () => Effect.void)
          )
        }
        return yield* openSession({ id: member.id, email: member.email, name: member.name, orgId: member.org_id }, at)
      })

    const judge = (row: SessionRow | undefined, at: number) => {
      if (row === undefined) return noSession("The session is unknown or has ended.")
      if (row.created_at.getTime() + SESSION_ABSOLUTE_MS <= at) return noSession("The session is older than 30 days and has expired.")
      if (row.last_seen_at.getTime() + SESSION_IDLE_MS <= at) return noSession("The session was idle for 7 days and has expired.")
      if (row.role === null) return noSession("The user is no longer a member of this organization.")
      return undefined
    }

    /** The live session named by a cookie value, its idle timer restarted; else 401. */
    const session = (secret: string | undefined) =>
      Effect.gen(function*() {
        if (secret === undefined || secret === "") return yield* noSession("Not signed in: there is no session cookie.")
        const row = secret.length > 256 ? undefined : yield* repo.findSession(sha256(secret))
        const at = yield* Clock.currentTimeMillis
        const refused = judge(row, at)
        if (refused !== undefined) {
          if (row !== undefined) yield* repo.deleteSession(row.id)
          return yield* refused
        }
        if (at - row!.last_seen_at.getTime() >= TOUCH_EVERY_MS) yield* repo.touchSession(row!.id, new Date(at))
        return {
          id: row!.id,
          user: { id: row!.user_id, email: row!.email, name: row!.name, orgId: row!.org_id },
          role: row!.role,
          csrfToken: row!.csrf_token
        } satisfies ActiveSession
      })

    /** The principal a session acts as; changes need the session's CSRF token in X-CSRF-Token. */
    const principalOf = (active: ActiveSession): Principal => ({
      tokenId: `session:${active.id}`,
      orgId: active.user.orgId,
      scope: scopeOfRole(active.role),
      userId: active.user.id,
      userName: active.user.name,
      userEmail: active.user.email
    })

    const checkCsrf = (active: ActiveSession, method: string, header: string | undefined) => {
      if (method === "GET" || method === "HEAD" || method === "OPTIONS") return Effect.void
      if (header === undefined || header === "") {
        return Effect.fail(
          new Forbidden({
            message: `The CSRF token is missing: with the session cookie, a ${method} request must send the header X-CSRF-Token with the csrfToken from sign-in or GET /api/auth/me.`
          })
        )
      }
      if (!sameText(header, active.csrfToken)) {
        return Effect.fail(
          new Forbidden({
            message: "The CSRF token is wrong: X-CSRF-Token must equal the csrfToken of this session (from sign-in or GET /api/auth/me)."
          })
        )
      }
      return Effect.void
    }

    const logout = (active: ActiveSession) => repo.deleteSession(active.id)

    /** A new user with a password, in an organization. */
    const createUser = (input: { email: string; name: string; password: string; orgId: string; role: Role }) =>
      Effect.gen(function*() {
        const email = cleanEmail(input.email)
        yield* checkEmail(email)
        yield* checkName(input.name)
        yield* checkPassword(input.password)
        const passwordHash = yield* hashing(() => hashPassword(input.password))
        const at = yield* now
        return yield* repo.insertUser({ email, name: input.name.trim(), passwordHash, orgId: input.orgId, role: input.role, at })
      })

    const invite = (input: { orgId: string; email: string; name: string | null; role: Role; invitedBy: string | null }) =>
      Effect.gen(function*() {
        const email = cleanEmail(input.email)
        yield* checkEmail(email)
        if (input.name !== null) yield* checkName(input.name)
        if (yield* repo.emailExists(email)) {
          return yield* new Conflict({ message: `A user with the email ${email} already exists; there is no need to invite them. ` +
              `To add them to this organization too, the operator runs jobmon org add-member --email ${email} --org <slug>.`
          })
        }
        const token = INVITE_PREFIX + randomBytes(24).toString("base64url")
        const at = yield* now
        const limit = config.maxPendingInvitesPerOrg
        const row = yield* repo.sql.withTransaction(
          Effect.gen(function*() {
            yield* repo.lockOrgInvites(input.orgId)
            if ((yield* repo.countPendingInvites(input.orgId, at)) >= limit) {
              return yield* new Conflict({
                message: `The organization already has ${limit} pending invites, the most it may have (MAX_PENDING_INVITES_PER_ORG). ` +
                  `An invite stops counting once it is accepted or expires (7 days after it was made).`
              })
            }
            return yield* repo.insertInvite({
              orgId: input.orgId,
              email,
              name: input.name,
              role: input.role,
              tokenHash: sha256(token),
              invitedBy: input.invitedBy,
              at,
              expiresAt: new Date(at.getTime() + INVITE_TTL_MS)
            })
          })
        ).pipe(Effect.catchTag("SqlError", Effect.die))
        return { row, token }
      })

    /** An invite token + name + password → a user in the inviter's organization, signed in. */
    const acceptInvite = (input: { token: string; name: string; password: string }) =>
      Effect.gen(function*() {
        yield* checkName(input.name)
        yield* checkPassword(input.password)
        const row = input.token.length > 256 ? undefined : yield* repo.findInvite(sha256(input.token))
        if (row === undefined) {
          return yield* new NotFound({ message: "The invite token is unknown: check the link, or ask for a new invite." })
        }
        const at = yield* now
        if (row.accepted_at !== null) {
          return yield* new ValidationError({ path: "token", message: "This invite has already been used; sign in instead, or ask for a new invite." })
        }
        if (row.expires_at.getTime() <= at.getTime()) {
          return yield* new ValidationError({
            path: "token",
            message: `This invite expired at ${row.expires_at.toISOString()}; ask for a new one.`
          })
        }
        const passwordHash = yield* hashing(() => hashPassword(input.password))
        const user = yield* repo.sql.withTransaction(
          Effect.gen(function*() {
            if (!(yield* repo.claimInvite(row.id, at))) {
              return yield* new ValidationError({ path: "token", message: "This invite has already been used; sign in instead." })
            }
            const user = yield* repo.insertUser({ email: row.email, name: input.name.trim(), passwordHash, orgId: row.org_id, role: row.role, at })
            yield* repo.setInviteUser(row.id, user.id)
            return user
          })
        ).pipe(Effect.catchTag("SqlError", Effect.die))
        return yield* openSession({ id: user.id, email: user.email, name: user.name, orgId: row.org_id }, at)
      })

    /** A new organization (the operator's: `jobmon org create`, docs/decisions.md#organizations). */
    const createOrganization = (input: { slug: string; name: string }) =>
      Effect.gen(function*() {
        const problem = orgSlugProblem(input.slug)
        if (problem !== undefined) return yield* new ValidationError({ path: "slug", message: problem })
        yield* checkName(input.name)
        return yield* repo.insertOrganization({ slug: input.slug, name: input.name.trim(), at: yield* now })
      })

    /** An existing user joins one more organization (`jobmon org add-member`). */
    const addMember = (input: { email: string; orgId: string; role: Role }) =>
      Effect.gen(function*() {
        const email = cleanEmail(input.email)
        const user = yield* repo.userByEmail(email)
        if (user === undefined) {
          return yield* new NotFound({ message: `There is no user with the email ${email}; create one with jobmon user create.` })
        }
        yield* repo.insertMembership({ userId: user.id, orgId: input.orgId, role: input.role, at: yield* now })
        return user
      })

    /** The organizations the session's user belongs to; `current` is the one the session acts in. */
    const organizationsOf = (active: ActiveSession) =>
      Effect.map(repo.userOrganizations(active.user.id), (orgs) => ({ current: active.user.orgId, orgs }))

    /**
     * The session acts in another of its user's organizations from now on: every page and request
     * made with its cookie sees that organization only. Not a member there: 404, as for an unknown id.
     */
    const switchOrganization = (active: ActiveSession, orgId: string) =>
      Effect.gen(function*() {
        const switched = UUID.test(orgId) && (yield* repo.switchSessionOrg(active.id, active.user.id, orgId))
        if (!switched) {
          return yield* new NotFound({
            message: `You are not a member of an organization with the id '${orgId.slice(0, 80)}'; GET /api/auth/orgs lists yours.`
          })
        }
        return { user: { ...active.user, orgId }, csrfToken: active.csrfToken }
      })

    return {
      createOrganization,
      listOrganizations: repo.listOrganizations,
      addMember,
      organizationsOf,
      switchOrganization,
      login,
      session,
      principalOf,
      checkCsrf,
      logout,
      createUser,
      invite,
      acceptInvite,
      listMembers: repo.listMembers,
      orgBySlug: repo.orgBySlug
    } as const
  })
}) {}
