import { SqlClient, SqlError } from "@effect/sql"
import { Effect } from "effect"
import { Conflict } from "../Domain/Errors.js"

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

const emailTaken = (email: string) =>
  new Conflict({ message: `A user with the email ${email} already exists; sign in instead, or use another address.` })

/** SQL for users, memberships, sessions, failed sign-ins and invites. */
export class AccountsRepo extends Effect.Service<AccountsRepo>()("jobmon/AccountsRepo", {
  effect: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient

    const findMemberByEmail = (email: string) =>
      sql<MemberRow>`
        select u.id, u.email, u.name, u.password_hash, u.created_at, m.org_id, m.role
        from users u join memberships m on m.user_id = u.id
        where lower(u.email) = lower(${email})
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
      sql<{ id: string }>`select id from users where lower(email) = lower(${email})`.pipe(
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

    /** Failed sign-ins for this email since `since`: how many, and the oldest. */
    const recentFailures = (email: string, since: Date) =>
      sql<{ n: number; oldest: Date | null }>`
        select count(*)::int as n, min(failed_at) as oldest
        from sign_in_failures where email = ${email.toLowerCase()} and failed_at > ${since}`.pipe(
        Effect.map((rows) => ({ count: rows[0]?.n ?? 0, oldest: rows[0]?.oldest ?? null })),
        Effect.orDie
      )

    const recordFailure = (email: string, at: Date, purgeBefore: Date) =>
      sql`
        with purged as (delete from sign_in_failures where failed_at <= ${purgeBefore})
        insert into sign_in_failures (email, failed_at) values (${email.toLowerCase()}, ${at})`.pipe(
        Effect.asVoid,
        Effect.orDie
      )

    const clearFailures = (email: string) =>
      sql`delete from sign_in_failures where email = ${email.toLowerCase()}`.pipe(Effect.asVoid, Effect.orDie)

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
      insertSession,
      findSession,
      touchSession,
      deleteSession,
      purgeSessions,
      recentFailures,
      recordFailure,
      clearFailures,
      insertInvite,
      findInvite,
      claimInvite,
      setInviteUser
    } as const
  })
}) {}
