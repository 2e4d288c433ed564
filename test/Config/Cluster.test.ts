import { ConfigProvider, Effect, Option } from "effect"
import { hostname } from "node:os"
import { describe, expect, it } from "vitest"
import { appConfig } from "../../src/Config.js"

/**
 * The cluster-mode settings (docs/operations.md, "Several instances"; README, "Configuration"):
 * their defaults, where CLUSTER_HOST comes from when it is not set, and the message a start stops
 * with when they do not fit together.
 */

const read = (env: Record<string, string>) =>
  Effect.runPromise(
    Effect.either(appConfig.pipe(Effect.withConfigProvider(ConfigProvider.fromMap(new Map(Object.entries(env))))))
  ).then((result) => (result._tag === "Right" ? { config: result.right, error: undefined } : { config: undefined, error: String(result.left) }))

const database = { DATABASE_URL: "postgres://jobmon@db:5432/jobmon" }

describe("cluster settings", () => {
  it("unset: a single instance, locks refreshed every second and taken over after five", async () => {
    const { config } = await read({})
    expect(Option.isNone(config!.clusterPort)).toBe(true)
    expect(config!.clusterLockRefreshMs).toBe(1_000)
    expect(config!.clusterLockExpirationMs).toBe(5_000)
  })

  it("CLUSTER_PORT turns cluster mode on; CLUSTER_HOST defaults to HOST, or to the hostname when HOST is a wildcard", async () => {
    const named = await read({ ...database, CLUSTER_PORT: "34431", HOST: "10.1.2.3" })
    expect(named.config!.clusterPort).toEqual(Option.some(34431))
    expect(named.config!.clusterHost).toBe("10.1.2.3")
    for (const wildcard of ["0.0.0.0", "::"]) {
      const { config } = await read({ ...database, CLUSTER_PORT: "34431", HOST: wildcard })
      expect(config!.clusterHost).toBe(hostname())
    }
    const set = await read({ ...database, CLUSTER_PORT: "34431", HOST: "0.0.0.0", CLUSTER_HOST: "172.18.0.5" })
    expect(set.config!.clusterHost).toBe("172.18.0.5")
    const empty = await read({ ...database, CLUSTER_PORT: "34431", HOST: "10.1.2.3", CLUSTER_HOST: "" })
    expect(empty.config!.clusterHost).toBe("10.1.2.3")
  })

  it("a start stops with a message naming the setting when the values do not fit", async () => {
    const cases: Array<[Record<string, string>, string]> = [
      [{ CLUSTER_PORT: "34431" }, "CLUSTER_PORT (cluster mode) needs DATABASE_URL"],
      [{ ...database, CLUSTER_PORT: "8080", PORT: "8080" }, "CLUSTER_PORT must differ from PORT"],
      [{ ...database, CLUSTER_PORT: "cluster" }, "CLUSTER_PORT"],
      [{ CLUSTER_LOCK_REFRESH_MS: "50" }, "CLUSTER_LOCK_REFRESH_MS must be between 100 and 60000"],
      [{ CLUSTER_LOCK_EXPIRATION_MS: "600001" }, "CLUSTER_LOCK_EXPIRATION_MS must be between 1000 and 600000"],
      [{ CLUSTER_LOCK_REFRESH_MS: "3000", CLUSTER_LOCK_EXPIRATION_MS: "3000" }, "CLUSTER_LOCK_EXPIRATION_MS must be greater than CLUSTER_LOCK_REFRESH_MS"]
    ]
    for (const [env, message] of cases) {
      const { error } = await read(env)
      expect(error, JSON.stringify(env)).toContain(message)
    }
  })
})
