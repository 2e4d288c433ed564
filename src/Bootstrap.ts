import { SqlClient } from "@effect/sql"
import { Effect, Layer, Option, Redacted } from "effect"
import { isAcceptableToken } from "./Auth/Token.js"
import { Tokens } from "./Auth/Tokens.js"
import { AppConfig } from "./Config.js"

/**
 * First start with an empty database: a default organization, an admin user and an admin token
 * (BOOTSTRAP_TOKEN, or a random one printed once). Later starts find the organization 'default' and do nothing.
 */
export const bootstrap = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  const tokens = yield* Tokens
  const config = yield* AppConfig
  const wanted = Option.map(config.bootstrapToken, Redacted.value)
  if (Option.isSome(wanted) && !isAcceptableToken(wanted.value)) {
    return yield* Effect.dieMessage("BOOTSTRAP_TOKEN must be at least 24 printable characters without spaces")
  }
  const created = yield* sql.withTransaction(
    Effect.gen(function*() {
      yield* sql`select pg_advisory_xact_lock(7316402114)`
      // The default organization, not any: one made first with `jobmon org create` does not stand for it.
      const existing = yield* sql<{ n: number }>`select count(*)::int as n from organizations where slug = 'default'`
      if ((existing[0]?.n ?? 0) > 0) return Option.none<string>()
      const [org] = yield* sql<{ id: string }>`
        insert into organizations (slug, name) values ('default', 'Default organization') returning id`
      const [user] = yield* sql<{ id: string }>`
        insert into users (email, name) values ('admin@localhost', 'Admin') returning id`
      yield* sql`insert into memberships (user_id, org_id, role) values (${user!.id}, ${org!.id}, 'admin')`
      const { token } = yield* tokens.create({
        orgId: org!.id,
        userId: user!.id,
        name: "bootstrap admin token",
        scope: "admin",
        expiresAt: null,
        token: Option.getOrUndefined(wanted)
      })
      return Option.some(token)
    })
  ).pipe(Effect.orDie)
  if (Option.isSome(created)) {
    if (Option.isSome(wanted)) {
      yield* Effect.logInfo("created the default organization and its admin token from BOOTSTRAP_TOKEN")
    } else {
      // Shown once, on purpose: it is the only way into a fresh installation.
      yield* Effect.logInfo(`created the default organization; admin token (shown only now): ${created.value}`)
    }
  }
})

export const BootstrapLive = Layer.effectDiscard(bootstrap)
