import { FetchHttpClient, HttpClient, HttpClientRequest } from "@effect/platform"
import { SqlClient } from "@effect/sql"
import { Context, Effect, Exit, Layer, Logger, LogLevel, Option, Redacted, Scope } from "effect"
import pg from "pg"
import { randomBytes } from "node:crypto"
import { inject } from "vitest"
import { AppFromConfig, type AppOptions } from "../../src/App.js"
import { Accounts } from "../../src/Auth/Accounts.js"
import { Tokens } from "../../src/Auth/Tokens.js"
import type { Scope as TokenScope } from "../../src/Auth/Scopes.js"
import { AppConfigWith, type AppConfigShape } from "../../src/Config.js"
import { ServerAddress } from "../../src/Http/Server.js"

/** One fixture module builds the test database, the server, organizations and tokens. */

const withDatabase = (adminUrl: string, database: string) => {
  const url = new URL(adminUrl)
  url.pathname = `/${database}`
  return url.toString()
}

/** A fresh database of this test file's own on the test server, dropped when the scope closes. */
export const makeTestDatabase = (prefix = "jobmon_test") =>
  Effect.acquireRelease(
    Effect.promise(async () => {
      const adminUrl = inject("adminDatabaseUrl")
      const name = `${prefix}_${randomBytes(6).toString("hex")}`
      const client = new pg.Client({ connectionString: adminUrl })
      await client.connect()
      try {
        await client.query(`create database ${name}`)
      } finally {
        await client.end()
      }
      return { name, url: withDatabase(adminUrl, name), adminUrl }
    }),
    ({ adminUrl, name }) =>
      Effect.promise(async () => {
        const client = new pg.Client({ connectionString: adminUrl })
        await client.connect()
        try {
          // A pool's end() resolves before its sockets have closed: a forced drop at once killed
          // those backends mid-goodbye, and the client's "terminating connection due to
          // administrator command" surfaced as an unhandled error that failed the run. Give them
          // up to 5 s to leave; force only what stays.
          for (let i = 0; i < 50; i++) {
            const left = await client.query<{ n: number }>(
              "select count(*)::int as n from pg_stat_activity where datname = $1 and pid <> pg_backend_pid()",
              [name]
            )
            if (left.rows[0]!.n === 0) break
            await new Promise((resolve) => setTimeout(resolve, 100))
          }
          await client.query(`drop database if exists ${name} with (force)`)
        } finally {
          await client.end()
        }
      })
  )

export interface TestContextShape {
  readonly baseUrl: string
  readonly databaseUrl: string
  /** The bootstrap admin token of the default organization. */
  readonly adminToken: string
}

export class TestApp extends Context.Tag("test/TestApp")<TestApp, TestContextShape>() {}

const noApiRateLimit = { apiRatePerSecond: 1_000_000, apiBurst: 1_000_000 }

/**
 * The real service on a free port over its own fresh database, with the real HTTP client.
 * Provides the app's services too (SqlClient, Tokens, …) for set-up and for checking the database.
 */
export const TestServer = (
  overrides: Partial<AppConfigShape> = {},
  env: Record<string, string> = {},
  options: AppOptions = {}
) =>
  Layer.unwrapScoped(
    Effect.gen(function*() {
      const db = yield* makeTestDatabase()
      for (const [key, value] of Object.entries(env)) process.env[key] = value
      const adminToken = `jmt_test_${randomBytes(18).toString("base64url")}`
      const config = AppConfigWith({
        databaseUrl: Option.some(Redacted.make(db.url)),
        host: "127.0.0.1",
        port: 0,
        bootstrapToken: Option.some(Redacted.make(adminToken)),
        // Tests make many calls with one token, often on the TestClock (no refill): the API's rate
        // limit is out of the way unless a test sets it (test/Http/RateLimit.test.ts).
        ...noApiRateLimit,
        ...overrides
      })
      const app = AppFromConfig(config, options)
      const context = Layer.effect(
        TestApp,
        Effect.map(ServerAddress, (address) => ({ baseUrl: address.url, databaseUrl: db.url, adminToken }))
      )
      return Layer.provideMerge(context, app).pipe(
        Layer.provideMerge(FetchHttpClient.layer),
        Layer.provide(Logger.minimumLogLevel(LogLevel.Warning))
      )
    })
  )

/**
 * The app over an existing database (no database of its own): to stop a service and start it
 * again on the same data within one test. Build it with Layer.build in a scope you close.
 */
export const AppOn = (databaseUrl: string, adminToken: string, overrides: Partial<AppConfigShape> = {}) =>
  Layer.provideMerge(
    Layer.effect(
      TestApp,
      Effect.map(ServerAddress, (address) => ({ baseUrl: address.url, databaseUrl, adminToken }))
    ),
    AppFromConfig(
      AppConfigWith({
        databaseUrl: Option.some(Redacted.make(databaseUrl)),
        host: "127.0.0.1",
        port: 0,
        bootstrapToken: Option.some(Redacted.make(adminToken)),
        // Tests make many calls with one token, often on the TestClock (no refill): the API's rate
        // limit is out of the way unless a test sets it (test/Http/RateLimit.test.ts).
        ...noApiRateLimit,
        ...overrides
      })
    )
  ).pipe(Layer.provideMerge(FetchHttpClient.layer), Layer.provide(Logger.minimumLogLevel(LogLevel.Warning)))

/**
 * Lives of the service on one existing database: `life(use)` starts the app (AppOn), runs `use` in
 * it and stops it, so a test can stop the service and start it again on the same data.
 */
export const serviceLives = (databaseUrl: string, adminToken: string) =>
  <A, E>(use: Effect.Effect<A, E, any>): Effect.Effect<A, unknown> =>
    Effect.gen(function*() {
      const scope = yield* Scope.make()
      const context = yield* Layer.buildWithScope(AppOn(databaseUrl, adminToken), scope)
      return yield* (Effect.provide(use, context) as Effect.Effect<A, E>).pipe(Effect.ensuring(Scope.close(scope, Exit.void)))
    })

export const newAdminToken = () => `jmt_test_${randomBytes(18).toString("base64url")}`

export interface ApiResponse {
  readonly status: number
  readonly headers: Readonly<Record<string, string>>
  readonly body: any
  readonly text: string
}

/** One HTTP request to the test server through the real client. */
export const call = (
  method: "GET" | "POST" | "PATCH" | "DELETE" | "PUT",
  path: string,
  options: { token?: string | null; body?: unknown; rawBody?: string; headers?: Record<string, string> } = {}
) =>
  Effect.gen(function*() {
    const app = yield* TestApp
    const client = yield* HttpClient.HttpClient
    let request = HttpClientRequest.make(method)(`${app.baseUrl}${path}`)
    const token = options.token === undefined ? app.adminToken : options.token
    if (token !== null) request = HttpClientRequest.bearerToken(request, token)
    if (options.headers) request = HttpClientRequest.setHeaders(request, options.headers)
    if (options.rawBody !== undefined) {
      request = HttpClientRequest.bodyText(request, options.rawBody, "application/json")
    } else if (options.body !== undefined) {
      request = HttpClientRequest.bodyUnsafeJson(request, options.body)
    }
    const response = yield* client.execute(request)
    const text = yield* response.text
    let body: unknown = undefined
    try {
      body = text === "" ? undefined : JSON.parse(text)
    } catch {
      body = undefined
    }
    return { status: response.status, headers: response.headers, body, text } as ApiResponse
  }).pipe(Effect.scoped, Effect.orDie)

/** A second organization with its own admin user and a token of the given scope. */
export const createOrganization = (slug: string, scope: TokenScope = "admin") =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const tokens = yield* Tokens
    const [org] = yield* sql<{ id: string }>`insert into organizations (slug, name) values (${slug}, ${slug}) returning id`
    const [user] = yield* sql<{ id: string }>`
      insert into users (email, name) values (${`${slug}@example.test`}, ${`${slug} admin`}) returning id`
    yield* sql`insert into memberships (user_id, org_id) values (${user!.id}, ${org!.id})`
    const { token } = yield* tokens.create({ orgId: org!.id, userId: user!.id, name: `${slug} token`, scope, expiresAt: null })
    return { orgId: org!.id, userId: user!.id, token }
  }).pipe(Effect.orDie)

/** A monitor made through the API; answers its id. */
export const createMonitor = (extra: Record<string, unknown> = {}) =>
  Effect.gen(function*() {
    const response = yield* call("POST", "/api/monitors", { body: validMonitor(extra) })
    if (response.status !== 201) return yield* Effect.dieMessage(`monitor create failed: ${response.status} ${response.text}`)
    return response.body as { id: string; [key: string]: any }
  })

/** A ping through the real HTTP route. */
export const sendPing = (
  monitorId: string,
  kind: "start" | "success" | "fail",
  options: { body?: unknown; rawBody?: string; query?: string; token?: string | null } = {}
) =>
  call("POST", `/api/ping/${monitorId}/${kind}${options.query === undefined ? "" : `?${options.query}`}`, {
    ...(options.body === undefined ? {} : { body: options.body }),
    ...(options.rawBody === undefined ? {} : { rawBody: options.rawBody }),
    ...(options.token === undefined ? {} : { token: options.token })
  })

/** A token of the given scope in the default organization, made through the API like a user would. */
export const createToken = (scope: TokenScope, extra: Record<string, unknown> = {}) =>
  Effect.gen(function*() {
    const response = yield* call("POST", "/api/tokens", { body: { name: `${scope} token`, scope, ...extra } })
    if (response.status !== 201) return yield* Effect.dieMessage(`token create failed: ${response.status} ${response.text}`)
    return response.body as { id: string; token: string; scope: string }
  })

export const validMonitor = (extra: Record<string, unknown> = {}) => ({
  name: "nightly backup",
  schedule: { type: "cron", expression: "0 3 * * *", timezone: "Europe/London" },
  ...extra
})

/** A dashboard user with a password, made through the service (default organization unless orgId). */
export const createUser = (input: { email: string; password: string; name?: string; orgId?: string; role?: "admin" | "member" }) =>
  Effect.gen(function*() {
    const accounts = yield* Accounts
    const orgId = input.orgId ?? (yield* accounts.orgBySlug("default"))!
    return yield* accounts.createUser({
      email: input.email,
      password: input.password,
      name: input.name ?? input.email.split("@")[0]!,
      orgId,
      role: input.role ?? "admin"
    })
  }).pipe(Effect.orDie)

/** The `name=value` part of a Set-Cookie header, to send back as a Cookie header. */
export const cookiePair = (setCookie: string | undefined) => (setCookie ?? "").split(";")[0]!.trim()

/** Sign in through the API like the dashboard does: the Cookie header to send back and the CSRF token. */
export const signIn = (email: string, password: string) =>
  Effect.gen(function*() {
    const response = yield* call("POST", "/api/auth/login", { token: null, body: { email, password } })
    if (response.status !== 200) return yield* Effect.dieMessage(`sign-in failed: ${response.status} ${response.text}`)
    return {
      cookie: cookiePair(response.headers["set-cookie"]),
      csrfToken: response.body.csrfToken as string,
      user: response.body.user as { id: string; email: string; name: string; orgId: string }
    }
  })
