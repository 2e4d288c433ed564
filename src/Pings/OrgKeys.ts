import { SqlClient } from "@effect/sql"
import { Effect, Runtime } from "effect"
import { News } from "../Cluster/News.js"

/**
 * The organizations' capability keys, in memory (docs/decisions.md#ping-urls-slugs-and-badges): the
 * ping key of slug URLs (/ping/<pingKey>/<slug>) and the badge key (/badge/<badgeKey>/...). Loaded
 * at start-up, kept current on rotation (on every instance: a cluster change), loaded on a miss (an
 * organization created since). The keys are credentials: never logged.
 */
export interface OrgKeysRow {
  readonly id: string
  readonly ping_key: string
  readonly badge_key: string
}

/** What a key may look like: 32 lowercase hex characters (sql/0026_ping_urls.sql). */
const KEY_PATTERN = /^[0-9a-f]{32}$/

export class OrgKeys extends Effect.Service<OrgKeys>()("jobmon/OrgKeys", {
  dependencies: [News.Default],
  scoped: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const news = yield* News
    const runtime = yield* Effect.runtime<never>()
    const byPingKey = new Map<string, string>()
    const byBadgeKey = new Map<string, string>()
    const byOrg = new Map<string, OrgKeysRow>()

    const remember = (row: OrgKeysRow) => {
      const before = byOrg.get(row.id)
      if (before !== undefined) {
        byPingKey.delete(before.ping_key)
        byBadgeKey.delete(before.badge_key)
      }
      byOrg.set(row.id, row)
      byPingKey.set(row.ping_key, row.id)
      byBadgeKey.set(row.badge_key, row.id)
    }
    for (const row of yield* sql<OrgKeysRow>`select id, ping_key, badge_key from organizations`.pipe(Effect.orDie)) remember(row)

    const loadOrg = (orgId: string) =>
      Effect.flatMap(
        sql<OrgKeysRow>`select id, ping_key, badge_key from organizations where id = ${orgId}`.pipe(Effect.orDie),
        (rows) => Effect.sync(() => (rows[0] === undefined ? undefined : (remember(rows[0]), rows[0])))
      )

    /** The organization of a key, from memory or else the database; calls back with undefined when none. */
    const lookup = (kind: "ping" | "badge", key: string, callback: (orgId: string | undefined, error?: unknown) => void): void => {
      const hit = (kind === "ping" ? byPingKey : byBadgeKey).get(key)
      if (hit !== undefined) return callback(hit)
      if (!KEY_PATTERN.test(key)) return callback(undefined)
      const load = kind === "ping"
        ? sql<OrgKeysRow>`select id, ping_key, badge_key from organizations where ping_key = ${key}`
        : sql<OrgKeysRow>`select id, ping_key, badge_key from organizations where badge_key = ${key}`
      Runtime.runCallback(runtime)(
        Effect.map(load.pipe(Effect.orDie), (rows) => {
          if (rows[0] === undefined) return undefined
          remember(rows[0])
          return rows[0].id
        }),
        { onExit: (exit) => (exit._tag === "Success" ? callback(exit.value) : callback(undefined, exit.cause)) }
      )
    }

    const lookupEffect = (kind: "ping" | "badge", key: string) =>
      Effect.async<string | undefined>((resume) => lookup(kind, key, (orgId) => resume(Effect.succeed(orgId))))

    /** The organization's keys (an admin reads them). */
    const keysOf = (orgId: string) =>
      Effect.flatMap(Effect.sync(() => byOrg.get(orgId)), (row) => (row === undefined ? loadOrg(orgId) : Effect.succeed(row)))

    /** A new key: the old one answers 404 from now on, on every instance. */
    const rotate = (orgId: string, kind: "ping" | "badge") =>
      Effect.gen(function*() {
        const rows = kind === "ping"
          ? yield* sql<OrgKeysRow>`
              update organizations set ping_key = replace(gen_random_uuid()::text, '-', '')
              where id = ${orgId} returning id, ping_key, badge_key`.pipe(Effect.orDie)
          : yield* sql<OrgKeysRow>`
              update organizations set badge_key = replace(gen_random_uuid()::text, '-', '')
              where id = ${orgId} returning id, ping_key, badge_key`.pipe(Effect.orDie)
        const row = rows[0]!
        remember(row)
        yield* news.publish({ k: "orgKeys", orgId })
        return row
      })

    if (news.clustered) {
      yield* news.onChange((change) => {
        if (change.k === "orgKeys") Runtime.runFork(runtime)(loadOrg(change.orgId).pipe(Effect.ignoreLogged))
      })
    }

    return { lookup, lookupEffect, keysOf, rotate } as const
  })
}) {}
