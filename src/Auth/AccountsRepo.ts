import { SqlClient, SqlError } from "@effect/sql"
import { Effect } from "effect"
import { Conflict } from "../Domain/Errors.js"
import type { SignInHistory, SignInVerdict } from "./Limits.js"

export type Role = "admin" | "member"

export interface UserRow {
  readonly id: string
  readonly email: string
  readonly name: string
  readonly password_hash: string | null
  readonly created_at: Date
}

/** A user with the organization they act in (their oldest membership) and their role there. */
export interface MemberRow extends UserRow {
  readonly org_id: string
  readonly role: Role
}

export interface SessionRow {
  readonly id: string
  readonly user_id: string
  readonly org_id: string
  readonly csrf_token: string
  readonly created_at: Date
  readonly last_seen_at: Date
  readonly email: string
  readonly name: string
  readonly role: Role | null
}

export interface OrganizationRow {
  readonly id: string
  readonly slug: string
  readonly name: string
  readonly created_at: Date
}

/** An organization as the operator lists it (`jobmon org list`). */
export interface OrganizationSummaryRow extends OrganizationRow {
  readonly members: number
  readonly monitors: number
}

/** An organization a user belongs to, with their role there. */
export interface UserOrganizationRow {
  readonly id: string
  readonly slug: string
  readonly name: string
  readonly role: Role
}

export interface InviteRow {
  readonly id: string
  readonly org_id: string
  readonly email: string
  readonly name: string | null
  readonly role: Role
  readonly created_at: Date
  readonly expires_at: Date
  readonly accepted_at: Date | null
}

const isUniqueViolation = (error: unknown) =>
  error instanceof SqlError.SqlError && (error.cause as { code?: string } | undefined)?.code === "23505"

/** Advisory lock classes (pg_advisory_xact_lock(class, key)): one per kind of thing serialised. */
const LOCK_SIGN_IN_EMAIL = 731_640
const LOCK_SIGN_IN_ADDRESS = 731_641
const LOCK_ORG_INVITES = 731_643

export type Reservation =
  | { readonly _tag: "Reserved"; readonly attemptId: string }
  | Extract<SignInVerdict, { _tag: "Refused" }>

const emailTaken = (email: string) =>
  new Conflict({ message: `A user with the email ${email} already exists; sign in instead, or use another address.` })

/**
 * SQL for users, memberships, sessions, sign-in attempts and invites. Emails are matched on their
 * key, jobmon_email_key (sql/0016_sign_in_limits.sql): users.email_key and invites.email_key are
 * generated from it, and every lookup applies it to the email it is given.
 */
export class AccountsRepo extends Effect.Service<AccountsRepo>()("jobmon/AccountsRepo", {
  effect: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient

    const findMemberByEmail = (email: string) =>
      sql<MemberRow>`
        select u.id, u.email, u.name, u.password_hash, u.created_at, m.org_id, m.role
        from users u join memberships m on m.user_id = u.id
        where u.email_key = jobmon_email_key(${email})
        order by m.created_at, m.org_id
        limit 1`.pipe(Effect.map((rows) => rows[0]), Effect.orDie, Effect.withSpan("AccountsRepo.findMemberByEmail"))

    /** A user and their membership, in one transaction; a taken email is a Conflict. */
    const insertUser = (input: { email: string; name: string; passwordHash: string; orgId: string; role: Role; at: Date }) =>
      sql.withTransaction(
        Effect.gen(function*() {
          const [user] = yield* sql<UserRow>`
            insert into users (email, name, password_hash, created_at)
            values (${input.email}, ${input.name}, ${input.passwordHash}, ${input.at})
            returning id, email, name, password_hash, created_at`
          yield* sql`insert into memberships (user_id, org_id, role, created_at)
                     values (${user!.id}, ${input.orgId}, ${input.role}, ${input.at})`
          return user!
        })
      ).pipe(
        Effect.catchIf(isUniqueViolation, () => Effect.fail(emailTaken(input.email))),
        Effect.catchTag("SqlError", Effect.die),
        Effect.withSpan("AccountsRepo.insertUser")
      )

    const emailExists = (email: string) =>
      sql<{ id: string }>`select id from users where email_key = jobmon_email_key(${email})`.pipe(
        Effect.map((rows) => rows.length > 0),
        Effect.orDie
      )

    const listMembers = (orgId: string) =>
      sql<UserRow>`
        select u.id, u.email, u.name, u.password_hash, u.created_at
        from users u join memberships m on m.user_id = u.id
        where m.org_id = ${orgId}
        order by u.created_at, u.id`.pipe(Effect.orDie, Effect.withSpan("AccountsRepo.listMembers"))

    const orgBySlug = (slug: string) =>
      sql<{ id: string }>`select id from organizations where slug = ${slug}`.pipe(
        Effect.map((rows) => rows[0]?.id),
        Effect.orDie
      )

    /** A new organization; a taken slug is a Conflict. */
    const insertOrganization = (input: { slug: string; name: string; at: Date }) =>
      sql<OrganizationRow>`
        insert into organizations (slug, name, created_at) values (${input.slug}, ${input.name}, ${input.at})
        returning id, slug, name, created_at`.pipe(
        Effect.map((rows) => rows[0]!),
        Effect.catchIf(isUniqueViolation, () =>
          Effect.fail(new Conflict({ message: `An organization with the slug '${input.slug}' already exists; choose another slug.` }))),
        Effect.catchTag("SqlError", Effect.die),
        Effect.withSpan("AccountsRepo.insertOrganization")
      )

    /** Every organization of the instance, oldest first, with its members and live monitors counted. */
    const listOrganizations = () =>
      sql<OrganizationSummaryRow>`
        select o.id, o.slug, o.name, o.created_at,
               (select count(*)::int from memberships m where m.org_id = o.id) as members,
               (select count(*)::int from monitors x where x.org_id = o.id and x.deleted_at is null) as monitors
        from organizations o
        order by o.created_at, o.slug`.pipe(Effect.orDie, Effect.withSpan("AccountsRepo.listOrganizations"))

    /** The organizations a user belongs to, oldest membership first (sign-in opens the first). */
    const userOrganizations = (userId: string) =>
      sql<UserOrganizationRow>`
        select o.id, o.slug, o.name, m.role
        from memberships m join organizations o on o.id = m.org_id
        where m.user_id = ${userId}
        order by m.created_at, m.org_id`.pipe(Effect.orDie, Effect.withSpan("AccountsRepo.userOrganizations"))

    const userByEmail = (email: string) =>
      sql<{ id: string; email: string }>`select id, email from users where email_key = jobmon_email_key(${email})`.pipe(
        Effect.map((rows) => rows[0]),
        Effect.orDie
      )

    /** One more membership for an existing user; already a member is a Conflict. */
    const insertMembership = (input: { userId: string; orgId: string; role: Role; at: Date }) =>
      sql`insert into memberships (user_id, org_id, role, created_at)
          values (${input.userId}, ${input.orgId}, ${input.role}, ${input.at})`.pipe(
        Effect.asVoid,
        Effect.catchIf(isUniqueViolation, () =>
          Effect.fail(new Conflict({ message: "The user is already a member of this organization." }))),
        Effect.catchTag("SqlError", Effect.die),
        Effect.withSpan("AccountsRepo.insertMembership")
      )

    /** The session now acts in `orgId`, if its user is a member there (else false, nothing changed). */
    const switchSessionOrg = (sessionId: string, userId: string, orgId: string) =>
      sql<{ id: string }>`
        update sessions s set org_id = ${orgId}
        where s.id = ${sessionId}
          and exists (select 1 from memberships m where m.user_id = ${userId} and m.org_id = ${orgId})
        returning s.id`.pipe(
        Effect.map((rows) => rows.length > 0),
        Effect.orDie,
        Effect.withSpan("AccountsRepo.switchSessionOrg")
      )

    const insertSession = (input: { secretHash: Buffer; userId: string; orgId: string; csrfToken: string; at: Date }) =>
      sql`
        insert into sessions (secret_hash, user_id, org_id, csrf_token, created_at, last_seen_at)
        values (${input.secretHash}, ${input.userId}, ${input.orgId}, ${input.csrfToken}, ${input.at}, ${input.at})`.pipe(
        Effect.asVoid,
        Effect.orDie,
        Effect.withSpan("AccountsRepo.insertSession")
      )

    const findSession = (secretHash: Buffer) =>
      sql<SessionRow>`
        select s.id, s.user_id, s.org_id, s.csrf_token, s.created_at, s.last_seen_at, u.email, u.name, m.role
        from sessions s
          join users u on u.id = s.user_id
          left join memberships m on m.user_id = s.user_id and m.org_id = s.org_id
        where s.secret_hash = ${secretHash}`.pipe(
        Effect.map((rows) => rows[0]),
        Effect.orDie,
        Effect.withSpan("AccountsRepo.findSession")
      )

    const touchSession = (id: string, at: Date) =>
      sql`update sessions set last_seen_at = ${at} where id = ${id} and last_seen_at < ${at}`.pipe(Effect.asVoid, Effect.orDie)

    const deleteSession = (id: string) => sql`delete from sessions where id = ${id}`.pipe(Effect.asVoid, Effect.orDie)

    /** Sessions that can no longer be used (anyone's: the table stays as small as the live sessions). */
    const purgeSessions = (idleBefore: Date, createdBefore: Date) =>
      sql`delete from sessions where last_seen_at <= ${idleBefore} or created_at <= ${createdBefore}`.pipe(
        Effect.asVoid,
        Effect.orDie
      )

    /**
     * The sign-in limits' check and record, as one step that holds under concurrency and across
     * instances: under advisory locks on the email's key and on the address (always taken in that
     * order), the recent attempts are counted, `judge` decides, and an allowed attempt is recorded
     * before its password is checked. The row stays as a failure unless signInSucceeded or
     * releaseAttempt removes it.
     */
    const reserveSignIn = (input: {
      email: string
      address: string
      at: Date
      since: Date
      knownSince: Date
      judge: (history: SignInHistory) => SignInVerdict
    }) =>
      sql.withTransaction(
        Effect.gen(function*() {
          yield* sql`select pg_advisory_xact_lock(${LOCK_SIGN_IN_EMAIL}, hashtext(jobmon_email_key(${input.email})))`
          yield* sql`select pg_advisory_xact_lock(${LOCK_SIGN_IN_ADDRESS}, hashtext(${input.address}))`
          const [row] = yield* sql<{
            pair_count: number
            pair_oldest: Date | null
            address_count: number
            address_oldest: Date | null
            account_count: number
            account_latest: Date | null
            known_address: boolean
          }>`
            select
              count(a.id) filter (where a.email = k.email and a.address = ${input.address})::int as pair_count,
              min(a.attempted_at) filter (where a.email = k.email and a.address = ${input.address}) as pair_oldest,
              count(a.id) filter (where a.address = ${input.address})::int as address_count,
              min(a.attempted_at) filter (where a.address = ${input.address}) as address_oldest,
              count(a.id) filter (where a.email = k.email)::int as account_count,
              max(a.attempted_at) filter (where a.email = k.email) as account_latest,
              exists (select 1 from sign_in_known n
                      where n.email = k.email and n.address = ${input.address} and n.signed_in_at > ${input.knownSince}) as known_address
            from (select jobmon_email_key(${input.email}) as email) k
              left join sign_in_attempts a
                on (a.email = k.email or a.address = ${input.address}) and a.attempted_at > ${input.since}
            group by k.email`
          const verdict = input.judge({
            pairCount: row!.pair_count,
            pairOldest: row!.pair_oldest,
            addressCount: row!.address_count,
            addressOldest: row!.address_oldest,
            accountCount: row!.account_count,
            accountLatest: row!.account_latest,
            knownAddress: row!.known_address
          })
          if (verdict._tag === "Refused") return verdict as Reservation
          const [attempt] = yield* sql<{ id: string }>`
            insert into sign_in_attempts (email, address, attempted_at)
            values (jobmon_email_key(${input.email}), ${input.address}, ${input.at})
            returning id::text as id`
          // Rows past the window count for nothing; those another request is purging are skipped.
          yield* sql`
            delete from sign_in_attempts where id in (
              select id from sign_in_attempts where attempted_at <= ${input.since}
              order by attempted_at limit 500 for update skip locked)`
          return { _tag: "Reserved", attemptId: attempt!.id } as Reservation
        })
      ).pipe(Effect.orDie, Effect.withSpan("AccountsRepo.reserveSignIn"))

    /**
     * The attempt was right: it and this account's earlier failures from this address are
     * forgotten, and the address becomes known to the account (for SIGN_IN_KNOWN_ADDRESS_MS).
     */
    const signInSucceeded = (input: { attemptId: string; email: string; address: string; at: Date; knownBefore: Date }) =>
      sql`
        with k as (select jobmon_email_key(${input.email}) as email),
        cleared as (
          delete from sign_in_attempts a using k
          where a.id = ${input.attemptId}::bigint or (a.email = k.email and a.address = ${input.address})),
        forgotten as (
          delete from sign_in_known where (email, address) in (
            select email, address from sign_in_known where signed_in_at <= ${input.knownBefore}
            limit 100 for update skip locked))
        insert into sign_in_known (email, address, signed_in_at)
        select k.email, ${input.address}, ${input.at} from k
        on conflict (email, address) do update set signed_in_at = excluded.signed_in_at`.pipe(
        Effect.asVoid,
        Effect.orDie,
        Effect.withSpan("AccountsRepo.signInSucceeded")
      )

    /** The password was never checked (the service was too busy): the attempt does not count. */
    const releaseAttempt = (attemptId: string) =>
      sql`delete from sign_in_attempts where id = ${attemptId}::bigint`.pipe(Effect.asVoid, Effect.orDie)

    /** A hash with the current parameters, unless the password changed meanwhile. */
    const replacePasswordHash = (userId: string, previous: string, next: string) =>
      sql`update users set password_hash = ${next} where id = ${userId} and password_hash = ${previous}`.pipe(
        Effect.asVoid,
        Effect.orDie,
        Effect.withSpan("AccountsRepo.replacePasswordHash")
      )

    /**
     * Serialises the creation of an organization's invites until the transaction ends, so that
     * counting them and adding one cannot interleave with another request doing the same.
     */
    const lockOrgInvites = (orgId: string) =>
      sql`select pg_advisory_xact_lock(${LOCK_ORG_INVITES}, hashtext(${orgId}::text))`.pipe(Effect.asVoid, Effect.orDie)

    /** Invites neither accepted nor expired at `at`. */
    const countPendingInvites = (orgId: string, at: Date) =>
      sql<{ n: number }>`
        select count(*)::int as n from invites
        where org_id = ${orgId} and accepted_at is null and expires_at > ${at}`.pipe(
        Effect.map((rows) => rows[0]?.n ?? 0),
        Effect.orDie
      )

    const insertInvite = (input: {
      orgId: string
      email: string
      name: string | null
      role: Role
      tokenHash: Buffer
      invitedBy: string | null
      at: Date
      expiresAt: Date
    }) =>
      sql<InviteRow>`
        insert into invites (org_id, email, name, role, token_hash, invited_by, created_at, expires_at)
        values (${input.orgId}, ${input.email}, ${input.name}, ${input.role}, ${input.tokenHash}, ${input.invitedBy},
                ${input.at}, ${input.expiresAt})
        returning id, org_id, email, name, role, created_at, expires_at, accepted_at`.pipe(
        Effect.map((rows) => rows[0]!),
        Effect.orDie,
        Effect.withSpan("AccountsRepo.insertInvite")
      )

    const findInvite = (tokenHash: Buffer) =>
      sql<InviteRow>`
        select id, org_id, email, name, role, created_at, expires_at, accepted_at
        from invites where token_hash = ${tokenHash}`.pipe(Effect.map((rows) => rows[0]), Effect.orDie)

    /** Marks the invite used, unless another request used it first (then false). */
    const claimInvite = (id: string, at: Date) =>
      sql<{ id: string }>`update invites set accepted_at = ${at} where id = ${id} and accepted_at is null returning id`.pipe(
        Effect.map((rows) => rows.length > 0),
        Effect.orDie
      )

    const setInviteUser = (id: string, userId: string) =>
      sql`update invites set accepted_by = ${userId} where id = ${id}`.pipe(Effect.asVoid, Effect.orDie)

    return {
      sql,
      findMemberByEmail,
      insertUser,
      emailExists,
      listMembers,
      orgBySlug,
      insertOrganization,
      listOrganizations,
      userOrganizations,
      userByEmail,
      insertMembership,
      switchSessionOrg,
      insertSession,
      findSession,
      touchSession,
      deleteSession,
      purgeSessions,
      reserveSignIn,
      signInSucceeded,
      releaseAttempt,
      replacePasswordHash,
      lockOrgInvites,
      countPendingInvites,
      insertInvite,
      findInvite,
      claimInvite,
      setInviteUser
    } as const
  })
}) {}
