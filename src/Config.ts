import { Config, Context, Effect, Layer, LogLevel, Option, Redacted } from "effect"
import { hostname } from "node:os"
import { DEFAULT_MAX_ACTIVE_TOKENS_PER_ORG, DEFAULT_MAX_PENDING_INVITES_PER_ORG } from "./Auth/Limits.js"

/** Every operator setting, read once from the environment (docs/decisions.md#configuration). */
export interface AppConfigShape {
  readonly databaseUrl: Option.Option<Redacted.Redacted<string>>
  readonly dataDir: string
  readonly host: string
  readonly port: number
  readonly publicUrl: string
  readonly bootstrapToken: Option.Option<Redacted.Redacted<string>>
  readonly allowPrivateTargets: boolean
  readonly logLevel: LogLevel.LogLevel
  /** Ping rate limit per monitor: sustained per second and burst (docs/decisions.md#rate-limits). */
  readonly pingRatePerSecond: number
  readonly pingBurst: number
  /** Other endpoints, per token. */
  readonly apiRatePerSecond: number
  readonly apiBurst: number
  /** Days of raw runs kept (TimescaleDB retention policy, or the service's own purge). 0 = forever. */
  readonly runsRetentionDays: number
  /** Compress run chunks older than this many days (TimescaleDB only). 0 = never. */
  readonly runsCompressAfterDays: number
  /** Batches of pings the group-commit writer may have in flight at once (src/Pings/RunWriter.ts). */
  readonly pingWriterLanes: number
  /** How long an idle ping writer waits for more pings before it commits; unset: 0, or 10 in cluster mode. */
  readonly pingWriterLingerMs: Option.Option<number>
  /** Slow clients (docs/security.md): time to send the headers, and the whole request. */
  readonly headersTimeoutMs: number
  readonly requestTimeoutMs: number
  /** Open connections the HTTP server accepts at once; more are refused. */
  readonly maxConnections: number
  /**
   * Reverse proxies in front of the service that append to X-Forwarded-For; 0 = none, the socket's
   * address is the client's (src/Auth/ClientAddress.ts; sign-in limits per address).
   */
  readonly trustProxy: number
  /** Tokens neither revoked nor expired an organization may have (src/Auth/Limits.ts). */
  readonly maxActiveTokensPerOrg: number
  /** Invites neither accepted nor expired an organization may have. */
  readonly maxPendingInvitesPerOrg: number
  /**
   * The longest a statement may run, in milliseconds (the pool's `statement_timeout`; 0 = no
   * limit). API requests answer 503 past it; migrations, the rollup refresh, retention and the
   * engine's start-up are exempt (src/Db/StatementTimeout.ts).
   */
  readonly statementTimeoutMs: number
  /** Connections of the service's pool to PostgreSQL (each instance also holds two LISTEN connections). */
  readonly databasePoolSize: number
  /** Monitors an organization may have (deleted ones do not count); 0 = no limit. */
  readonly maxMonitorsPerOrg: number
  /** Maintenance windows an organization may have (deleted ones do not count); 0 = no limit. */
  readonly maxMaintenanceWindowsPerOrg: number
  /**
   * Monitors slug ping URLs may create (`?create=1`) per organization and hour, in bursts of as
   * many (docs/pings.md#auto-provisioning); 0 turns auto-provisioning off.
   */
  readonly pingAutoCreatePerHour: number
  /**
   * Cluster mode (docs/operations.md, "Several instances"): the TCP port this instance listens on for
   * the other instances. None: a single instance.
   */
  readonly clusterPort: Option.Option<number>
  /**
   * The address the other instances reach this one at: CLUSTER_HOST, else HOST, else (HOST a
   * wildcard such as 0.0.0.0 or ::) the machine's hostname.
   */
  readonly clusterHost: string
  /** How often this instance refreshes its shard locks, in milliseconds. */
  readonly clusterLockRefreshMs: number
  /** After how long without a refresh a silent instance's shards are taken over, in milliseconds. */
  readonly clusterLockExpirationMs: number
  /**
   * The SMTP relay email alerts go through (docs/alerts.md#email): `smtp://user:pass@host:587`
   * (STARTTLS when the server offers it) or `smtps://…:465`. None: email channels cannot be made.
   */
  readonly smtpUrl: Option.Option<Redacted.Redacted<string>>
  /** The sender of email alerts: SMTP_FROM, else `jobmon <jobmon@<PUBLIC_URL's host>>`. */
  readonly smtpFrom: string
}

export class AppConfig extends Context.Tag("jobmon/AppConfig")<AppConfig, AppConfigShape>() {}

const logLevelConfig = Config.literal("debug", "info", "warn", "error", "trace", "none")("LOG_LEVEL").pipe(
  Config.withDefault("info" as const),
  Config.map((level) =>
    level === "debug"
      ? LogLevel.Debug
      : level === "warn"
      ? LogLevel.Warning
      : level === "error"
      ? LogLevel.Error
      : level === "trace"
      ? LogLevel.Trace
      : level === "none"
      ? LogLevel.None
      : LogLevel.Info
  )
)

/** Addresses that mean "every interface": no other machine can reach this one at them. */
const isWildcard = (host: string) => ["", "0.0.0.0", "::", "[::]", "::0", "0:0:0:0:0:0:0:0"].includes(host.trim())

/** The host name of a url, or `localhost` when it has none that parses. */
const hostOf = (url: string) => {
  try {
    return new URL(url).hostname.replace(/^\[|\]$/g, "") || "localhost"
  } catch {
    return "localhost"
  }
}

/** A whole number of 0 or more, with a default (0 meaning "no limit" where the setting says so). */
const nonNegative = (fallback: number) => (config: Config.Config<number>) =>
  config.pipe(
    Config.validate({ message: "must be a whole number, 0 or more", validation: (n) => n >= 0 }),
    Config.withDefault(fallback)
  )

export const appConfig: Config.Config<AppConfigShape> = Config.all({
  databaseUrl: Config.option(Config.redacted("DATABASE_URL")).pipe(
    Config.map(Option.filter((url) => Redacted.value(url).trim() !== ""))
  ),
  dataDir: Config.string("DATA_DIR").pipe(Config.withDefault("./data")),
  host: Config.string("HOST").pipe(Config.withDefault("127.0.0.1")),
  port: Config.port("PORT").pipe(Config.withDefault(8080)),
  publicUrl: Config.option(Config.string("PUBLIC_URL")),
  bootstrapToken: Config.option(Config.redacted("BOOTSTRAP_TOKEN")),
  allowPrivateTargets: Config.boolean("ALLOW_PRIVATE_TARGETS").pipe(Config.withDefault(false)),
  logLevel: logLevelConfig,
  pingRatePerSecond: Config.number("PING_RATE_PER_SECOND").pipe(Config.withDefault(10)),
  pingBurst: Config.number("PING_BURST").pipe(Config.withDefault(100)),
  apiRatePerSecond: Config.number("API_RATE_PER_SECOND").pipe(Config.withDefault(50)),
  apiBurst: Config.number("API_BURST").pipe(Config.withDefault(200)),
  runsRetentionDays: Config.integer("RUNS_RETENTION_DAYS").pipe(Config.withDefault(0)),
  runsCompressAfterDays: Config.integer("RUNS_COMPRESS_AFTER_DAYS").pipe(Config.withDefault(7)),
  pingWriterLanes: Config.integer("PING_WRITER_LANES").pipe(
    Config.withDefault(1),
    Config.validate({ message: "PING_WRITER_LANES must be between 1 and 8", validation: (n) => n >= 1 && n <= 8 })
  ),
  pingWriterLingerMs: Config.option(Config.integer("PING_WRITER_LINGER_MS").pipe(
    Config.validate({ message: "PING_WRITER_LINGER_MS must be between 0 and 100", validation: (n) => n >= 0 && n <= 100 })
  )),
  headersTimeoutMs: Config.integer("HEADERS_TIMEOUT_MS").pipe(
    Config.withDefault(10_000),
    Config.validate({ message: "HEADERS_TIMEOUT_MS must be between 1000 and 120000", validation: (n) => n >= 1000 && n <= 120_000 })
  ),
  requestTimeoutMs: Config.integer("REQUEST_TIMEOUT_MS").pipe(
    Config.withDefault(30_000),
    Config.validate({ message: "REQUEST_TIMEOUT_MS must be between 1000 and 600000", validation: (n) => n >= 1000 && n <= 600_000 })
  ),
  maxConnections: Config.integer("MAX_CONNECTIONS").pipe(
    Config.withDefault(10_000),
    Config.validate({ message: "MAX_CONNECTIONS must be at least 16", validation: (n) => n >= 16 })
  ),
  trustProxy: Config.integer("TRUST_PROXY").pipe(
    Config.withDefault(0),
    Config.validate({ message: "TRUST_PROXY must be the number of reverse proxies in front of the service (0 to 10)", validation: (n) => n >= 0 && n <= 10 })
  ),
  maxActiveTokensPerOrg: Config.integer("MAX_ACTIVE_TOKENS_PER_ORG").pipe(
    Config.withDefault(DEFAULT_MAX_ACTIVE_TOKENS_PER_ORG),
    Config.validate({ message: "MAX_ACTIVE_TOKENS_PER_ORG must be at least 1", validation: (n) => n >= 1 })
  ),
  maxPendingInvitesPerOrg: Config.integer("MAX_PENDING_INVITES_PER_ORG").pipe(
    Config.withDefault(DEFAULT_MAX_PENDING_INVITES_PER_ORG),
    Config.validate({ message: "MAX_PENDING_INVITES_PER_ORG must be at least 1", validation: (n) => n >= 1 })
  ),
  statementTimeoutMs: Config.integer("STATEMENT_TIMEOUT_MS").pipe(nonNegative(5_000)),
  databasePoolSize: Config.integer("DATABASE_POOL_SIZE").pipe(
    Config.withDefault(20),
    Config.validate({ message: "DATABASE_POOL_SIZE must be between 4 and 500", validation: (n) => n >= 4 && n <= 500 })
  ),
  maxMonitorsPerOrg: Config.integer("MAX_MONITORS_PER_ORG").pipe(nonNegative(10_000)),
  maxMaintenanceWindowsPerOrg: Config.integer("MAX_MAINTENANCE_WINDOWS_PER_ORG").pipe(nonNegative(1_000)),
  pingAutoCreatePerHour: Config.integer("PING_AUTO_CREATE_PER_HOUR").pipe(nonNegative(20)),
  clusterPort: Config.option(Config.port("CLUSTER_PORT")),
  clusterHost: Config.option(Config.string("CLUSTER_HOST")).pipe(Config.map(Option.filter((host) => host.trim() !== ""))),
  clusterLockRefreshMs: Config.integer("CLUSTER_LOCK_REFRESH_MS").pipe(
    Config.withDefault(1_000),
    Config.validate({ message: "CLUSTER_LOCK_REFRESH_MS must be between 100 and 60000", validation: (n) => n >= 100 && n <= 60_000 })
  ),
  clusterLockExpirationMs: Config.integer("CLUSTER_LOCK_EXPIRATION_MS").pipe(
    Config.withDefault(5_000),
    Config.validate({ message: "CLUSTER_LOCK_EXPIRATION_MS must be between 1000 and 600000", validation: (n) => n >= 1000 && n <= 600_000 })
  ),
  smtpUrl: Config.option(Config.redacted("SMTP_URL")).pipe(
    Config.map(Option.filter((url) => Redacted.value(url).trim() !== "")),
    Config.validate({
      message: "SMTP_URL must be an smtp:// or smtps:// url, e.g. smtp://user:password@mail.example.com:587",
      validation: Option.match({ onNone: () => true, onSome: (url) => /^smtps?:\/\/[^/?#]+/i.test(Redacted.value(url).trim()) })
    })
  ),
  smtpFrom: Config.option(Config.string("SMTP_FROM")).pipe(Config.map(Option.filter((from) => from.trim() !== "")))
}).pipe(
  Config.validate({
    message: "CLUSTER_PORT (cluster mode) needs DATABASE_URL: every instance must use the same external PostgreSQL, not the embedded one",
    validation: (c) => Option.isNone(c.clusterPort) || Option.isSome(c.databaseUrl)
  }),
  Config.validate({
    message: "CLUSTER_PORT must differ from PORT (the HTTP port)",
    validation: (c) => Option.isNone(c.clusterPort) || c.clusterPort.value !== c.port
  }),
  Config.validate({
    message: "CLUSTER_LOCK_EXPIRATION_MS must be greater than CLUSTER_LOCK_REFRESH_MS",
    validation: (c) => c.clusterLockExpirationMs > c.clusterLockRefreshMs
  }),
  Config.map(({ clusterHost, publicUrl: givenPublicUrl, smtpFrom, ...rest }) => {
    const publicUrl = Option.getOrElse(givenPublicUrl, () => `http://${rest.host}:${rest.port}`).replace(/\/+$/, "")
    return {
      ...rest,
      publicUrl,
      smtpFrom: Option.getOrElse(smtpFrom, () => `jobmon <jobmon@${hostOf(publicUrl)}>`).trim(),
      clusterHost: Option.getOrElse(clusterHost, () => (isWildcard(rest.host) ? hostname() : rest.host)).trim()
    }
  })
)

export const AppConfigLive = Layer.effect(AppConfig, appConfig)

/** A config layer with overrides, for tests and the CLI. */
export const AppConfigWith = (overrides: Partial<AppConfigShape>) =>
  Layer.effect(AppConfig, Effect.map(appConfig, (base) => ({ ...base, ...overrides })))
