import {
  HttpApiBuilder,
  HttpApiError,
  HttpApiScalar,
  HttpMiddleware,
  HttpServerError,
  HttpServerRequest,
  HttpServerResponse
} from "@effect/platform"
import { NodeHttpServer } from "@effect/platform-node"
import { Clock, Context, Effect, Layer, Option } from "effect"
import * as http from "node:http"
import type { AddressInfo } from "node:net"
import { Accounts, SESSION_COOKIE } from "../Auth/Accounts.js"
import { AuthHttpLive, UsersHttpLive } from "../Auth/AccountsHttp.js"
import { AuthenticationLive, TokensHttpLive } from "../Auth/Http.js"
import { Tokens } from "../Auth/Tokens.js"
import { AppConfig } from "../Config.js"
import { Database } from "../Db/Database.js"
import { MAX_BODY_BYTES, ValidationError } from "../Domain/Errors.js"
import { MonitorsHttpLive } from "../Monitors/Http.js"
import { StatsHttpLive } from "../Stats/Http.js"
import { IncidentsHttpLive } from "../Incidents/Http.js"
import { EventsHttpLive } from "../Events/Http.js"
import { MaintenanceHttpLive } from "../Maintenance/Http.js"
import { ChatHttpLive, WebhooksHttpLive } from "../Delivery/Http.js"
import { PingsHttpLive, RunsHttpLive } from "../Pings/Http.js"
import { Monitors } from "../Monitors/Monitors.js"
import { Api } from "./Api.js"
import { notFoundOrNotAllowed, routeTable, validationFromDecode } from "./Errors.js"
import { HealthHttpLive } from "./Health.js"
import { RateLimiter } from "./RateLimit.js"
import { webRoutes } from "./Web.js"

/** Where the server listens, once it does (port 0 picks a free one: tests). */
export class ServerAddress extends Context.Tag("jobmon/ServerAddress")<ServerAddress, {
  readonly host: string
  readonly port: number
  readonly url: string
}>() {}

/**
 * A handler that answers some requests itself before the HttpApi router sees them (the ping
 * intake's fast path). It returns false to pass the request on.
 */
export class FastRoutes extends Context.Tag("jobmon/FastRoutes")<FastRoutes, {
  readonly handle: (req: http.IncomingMessage, res: http.ServerResponse) => boolean
}>() {}

export const NoFastRoutes = Layer.succeed(FastRoutes, { handle: () => false })

const routes = routeTable(Api)

/** API-level middleware: decode failures become ValidationError, unknown routes 404 or 405. */
const ErrorMappingLive = HttpApiBuilder.middleware((app) =>
  (app as Effect.Effect<HttpServerResponse.HttpServerResponse, unknown, HttpServerRequest.HttpServerRequest>).pipe(
    Effect.catchIf(
      (e: unknown): e is HttpApiError.HttpApiDecodeError => e instanceof HttpApiError.HttpApiDecodeError,
      (e) => Effect.fail(validationFromDecode(e))
    ),
    // HttpApiBuilder reads the body with orDie: an unreadable body arrives here as a defect.
    Effect.catchSomeDefect((defect) =>
      HttpServerError.isServerError(defect) && (defect as HttpServerError.HttpServerError)._tag === "RequestError"
        ? Option.some(
          Effect.fail(
            new ValidationError({
              path: "",
              message: (defect as HttpServerError.RequestError).reason === "Decode"
                ? "The request body is not valid JSON. Send a JSON object with Content-Type: application/json."
                : `The request could not be read (${(defect as HttpServerError.RequestError).reason}).`
            })
          )
        )
        : Option.none()
    ),
    Effect.catchIf(
      (e: unknown): e is HttpServerError.RouteNotFound =>
        HttpServerError.isServerError(e) && (e as HttpServerError.HttpServerError)._tag === "RouteNotFound",
      () =>
        Effect.flatMap(HttpServerRequest.HttpServerRequest, (request) =>
          Effect.fail(notFoundOrNotAllowed(routes, request.method, request.url)))
    )
  ) as never
)

/**
 * A JSON answer straight from node:http, with the headers every answer carries (the routes served
 * ahead of the router: the ping intake, and the 413 before a body is read). Without extra headers
 * no object is spread: this is on the ping path.
 */
export const sendJson = (res: http.ServerResponse, status: number, body: Record<string, unknown>, headers?: Record<string, string>) => {
  const text = JSON.stringify(body)
  const base = { "content-type": "application/json", "content-length": Buffer.byteLength(text), "x-api-version": "1" }
  res.writeHead(status, headers === undefined ? base : { ...base, ...headers })
  res.end(text)
}

/** Response headers every answer carries, and the Bearer challenge on a 401. */
const finalHeaders = (response: HttpServerResponse.HttpServerResponse) => {
  let out = HttpServerResponse.setHeader(response, "x-api-version", "1")
  if (out.status === 401) out = HttpServerResponse.setHeader(out, "www-authenticate", 'Bearer realm="jobmon"')
  return out
}

/**
 * The API's own rate limit (decisions §11): per credential (Bearer token or session cookie), on
 * every /api endpoint but the ping intake, which has its per-monitor limit. Requests without a
 * credential are answered 401 by the endpoints that need one, and public ones (sign-in has its own
 * limit per email) are not counted.
 */
const rateLimited = <R>(
  app: Effect.Effect<HttpServerResponse.HttpServerResponse, never, R>,
  limiter: RateLimiter
) =>
  Effect.gen(function*() {
    const request = yield* HttpServerRequest.HttpServerRequest
    const authorization = request.headers["authorization"]
    const credential = authorization !== undefined && authorization !== ""
      ? `bearer ${authorization}`
      : request.cookies[SESSION_COOKIE] !== undefined
      ? `session ${request.cookies[SESSION_COOKIE]}`
      : undefined
    if (credential === undefined || !request.url.startsWith("/api/") || request.url.startsWith("/api/ping/")) return yield* app
    const verdict = limiter.take(credential, yield* Clock.currentTimeMillis)
    if (verdict.retryAfterSeconds > 0) {
      const wait = verdict.retryAfterSeconds
      return HttpServerResponse.unsafeJson({
        _tag: "RateLimited",
        message: `Too many requests with this credential: at most ${limiter.ratePerSecond} per second (bursts of ${limiter.burst}). Retry in ${wait} s.`,
        retryAfterSeconds: wait
      }, { status: 429, headers: { ...verdict.headers, "retry-after": String(wait) } })
    }
    return HttpServerResponse.setHeaders(yield* app, verdict.headers)
  })

const ApiLive = HttpApiBuilder.api(Api).pipe(
  Layer.provide([HealthHttpLive, AuthHttpLive, UsersHttpLive, TokensHttpLive, MonitorsHttpLive, PingsHttpLive, RunsHttpLive, StatsHttpLive, IncidentsHttpLive, EventsHttpLive, MaintenanceHttpLive, WebhooksHttpLive, ChatHttpLive]),
  Layer.provide(AuthenticationLive)
)

const RouterExtras = Layer.mergeAll(
  HttpApiBuilder.middlewareOpenApi({ path: "/api/openapi.json" }),
  HttpApiScalar.layer({ path: "/api/docs" }),
  ErrorMappingLive
)

/** The HTTP server: the fast routes first, then Effect's HttpApi application. */
export const HttpServerLive = Layer.scoped(
  ServerAddress,
  Effect.gen(function*() {
    const config = yield* AppConfig
    const fast = yield* FastRoutes
    const web = webRoutes()
    const app = rateLimited(yield* HttpApiBuilder.httpApp, new RateLimiter(config.apiRatePerSecond, config.apiBurst))
    // The tracer is off for requests: spans per request cost more than they tell here.
    const handler = yield* NodeHttpServer.makeHandler(Effect.map(app, finalHeaders)).pipe(
      HttpMiddleware.withTracerDisabledWhenEffect(() => true)
    )
    const server = http.createServer((req, res) => {
      const length = Number(req.headers["content-length"] ?? 0)
      if (length > MAX_BODY_BYTES) {
        req.resume()
        return sendJson(res, 413, {
          _tag: "PayloadTooLarge",
          message: `The request body has ${length} bytes; the limit is ${MAX_BODY_BYTES} bytes (2 MiB).`
        }, { connection: "close" })
      }
      if (fast.handle(req, res)) return
      if (web(req, res)) return
      handler(req, res)
    })
    server.keepAliveTimeout = 65_000
    yield* Effect.acquireRelease(
      Effect.async<void, Error>((resume) => {
        server.once("error", (error) => resume(Effect.fail(error)))
        server.listen(config.port, config.host, () => resume(Effect.void))
      }),
      () =>
        Effect.async<void>((resume) => {
          server.close(() => resume(Effect.void))
          server.closeAllConnections()
        })
    )
    const address = server.address() as AddressInfo
    const host = address.family === "IPv6" ? `[${address.address}]` : address.address
    yield* Effect.logInfo(`listening on http://${host}:${address.port}`)
    return { host: address.address, port: address.port, url: `http://${host}:${address.port}` }
  })
).pipe(
  Layer.provide(RouterExtras),
  Layer.provide([HttpApiBuilder.Router.Live, HttpApiBuilder.Middleware.layer]),
  Layer.provide(ApiLive),
  Layer.provide(NodeHttpServer.layerContext)
)

export type ServerDeps = AppConfig | Database | Tokens | Accounts | Monitors | FastRoutes
