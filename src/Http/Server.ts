import {
  HttpApiBuilder,
  HttpApiError,
  HttpApiScalar,
  HttpIncomingMessage,
  HttpMiddleware,
  HttpServerError,
  HttpServerRequest,
  HttpServerResponse
} from "@effect/platform"
import { NodeHttpServer } from "@effect/platform-node"
import { Cause, Context, Effect, Layer, Option } from "effect"
import * as http from "node:http"
import type { AddressInfo } from "node:net"
import { AuthHttpLive, UsersHttpLive } from "../Auth/AccountsHttp.js"
import { AuthenticationLive, rateVerdictOf, TokensHttpLive } from "../Auth/Http.js"
import { AppConfig } from "../Config.js"
import { isStatementTimeout, RETRY_AFTER_SECONDS, statementTimeoutMessage } from "../Db/StatementTimeout.js"
import {
  ERROR_STATUS,
  type ErrorReply,
  errorBody,
  errorReply,
  MAX_BODY_BYTES,
  PAYLOAD_TOO_LARGE_REPLY,
  type PayloadTooLarge,
  payloadTooLarge,
  ValidationError
} from "../Domain/Errors.js"
import { jsonNestedDeeperThan, tooDeepMessage } from "../Domain/Json.js"
import { MonitorsHttpLive } from "../Monitors/Http.js"
import { StatsHttpLive } from "../Stats/Http.js"
import { IncidentsHttpLive } from "../Incidents/Http.js"
import { EventsHttpLive } from "../Events/Http.js"
import { MaintenanceHttpLive } from "../Maintenance/Http.js"
import { AlertChannelsHttpLive, ChatHttpLive, WebhooksHttpLive } from "../Delivery/Http.js"
import { KeysHttpLive, PingsHttpLive, RunsHttpLive } from "../Pings/Http.js"
import { ClusterHttpLive } from "../Cluster/Http.js"
import { StorageHttpLive } from "../Db/StorageHttp.js"
import { MetricsHttpLive } from "../Metrics/Http.js"
import { Api } from "./Api.js"
import { notFoundOrNotAllowed, routeTable, validationFromDecode } from "./Errors.js"
import { HealthHttpLive } from "./Health.js"
import { canonicalTarget } from "./Canonical.js"
import { webRoutes } from "./Web.js"

/**
 * After refusing a body (413) the rest of it is discarded, not read: for at most a second, so that a
 * client still sending can read the answer instead of a reset connection, then the connection is
 * closed. One that finishes sending sooner keeps its connection.
 */
export const refuseRestOfBody = (req: http.IncomingMessage) => {
  req.removeAllListeners("data")
  req.resume()
  if (req.complete) return
  const timer = setTimeout(() => {
    if (!req.complete) req.socket.destroy()
  }, 1_000)
  timer.unref()
  req.once("end", () => clearTimeout(timer))
}

/**
 * Reads a request's body for the routes served ahead of the router (the ping intake), limited as it
 * arrives: past `MAX_BODY_BYTES` what came is dropped, the rest refused (`refuseRestOfBody`) and
 * `tooLarge` called instead of `done`. A request that fails while it is read loses its connection.
 */
export const readLimitedBody = (
  req: http.IncomingMessage,
  res: http.ServerResponse,
  tooLarge: () => void,
  done: (body: string) => void
): void => {
  const chunks: Array<Buffer> = []
  let size = 0
  let refused = false
  req.on("data", (chunk: Buffer) => {
    if (refused) return
    size += chunk.length
    if (size > MAX_BODY_BYTES) {
      refused = true
      chunks.length = 0
      refuseRestOfBody(req)
      tooLarge()
      return
    }
    chunks.push(chunk)
  })
  req.on("error", () => {
    if (!res.headersSent) res.destroy()
  })
  req.on("end", () => {
    if (refused) return
    done(chunks.length === 0 ? "" : chunks.length === 1 ? chunks[0]!.toString("utf8") : Buffer.concat(chunks).toString("utf8"))
  })
}

/**
 * Effect's body reader destroys the request when it stops at the size limit, and the socket, and the
 * 413 with it. A request handed to it is instead left to `refuseRestOfBody` when destroyed before it
 * was read whole; a finished or abandoned one is destroyed as usual.
 */
const keepConnectionForAnswer = (req: http.IncomingMessage) => {
  req.destroy = function(this: http.IncomingMessage, error?: Error) {
    if (this.complete || this.socket === null || this.socket.destroyed) {
      return http.IncomingMessage.prototype.destroy.call(this, error)
    }
    refuseRestOfBody(this)
    return this
  }
}

/**
 * A request Node could not parse (headers over 16 KiB, a malformed request line, a client too slow)
 * gets the error envelope too, not Node's bare status line.
 */
const answerClientError = (error: Error & { code?: string }, socket: import("node:stream").Duplex) => {
  if (error.code === "ECONNRESET" || !socket.writable) return socket.destroy()
  const { status, body: reply } = error.code === "HPE_HEADER_OVERFLOW"
    ? errorReply("HeadersTooLarge", "The request's headers (with its request line) are over 16 KiB: send a shorter URL or fewer headers.")
    : error.code === "ERR_HTTP_REQUEST_TIMEOUT"
    ? errorReply("RequestTimeout", "The request did not arrive in time: send the headers and the body without pausing.")
    : errorReply("BadRequest", "The request could not be parsed as HTTP/1.1.")
  const body = JSON.stringify(reply)
  socket.end(
    `HTTP/1.1 ${status} ${http.STATUS_CODES[status]}\r\ncontent-type: application/json\r\ncontent-length: ${Buffer.byteLength(body)}\r\n` +
      `x-api-version: 1\r\nx-content-type-options: nosniff\r\ncache-control: no-store\r\nconnection: close\r\n\r\n${body}`
  )
}

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

/**
 * The public capability routes, answered ahead of the router whatever FastRoutes is: ping URLs
 * (/ping/...) and badges (/badge/...), where the URL is the credential (src/Pings/PingUrlRoute.ts).
 */
export class PublicRoutes extends Context.Tag("jobmon/PublicRoutes")<PublicRoutes, {
  readonly handle: (req: http.IncomingMessage, res: http.ServerResponse) => boolean
}>() {}

const routes = routeTable(Api)

/** An answer of at most 2 MiB was read (HttpIncomingMessage.MaxBodySize on the app). */
const isBodyOverLimit = (error: HttpServerError.RequestError) =>
  error.reason === "Decode" && error.cause instanceof Error && error.cause.message === "maxBytes exceeded"

const hasJsonBody = (request: HttpServerRequest.HttpServerRequest) =>
  request.method !== "GET" && request.method !== "HEAD" && request.method !== "DELETE" &&
  (request.headers["content-type"] ?? "application/json").toLowerCase().includes("json")

/**
 * A JSON body is read (at most 2 MiB: the app's MaxBodySize) and its nesting checked before the
 * router decodes it (src/Domain/Json.ts); the text is kept, so the body is read once.
 */
const checkJsonBody = Effect.gen(function*() {
  const request = yield* HttpServerRequest.HttpServerRequest
  if (!hasJsonBody(request)) return
  const text = yield* Effect.either(request.text)
  if (text._tag === "Left") {
    const error = text.left
    return yield* (error._tag === "RequestError" && isBodyOverLimit(error)
      ? Effect.fail(payloadTooLarge())
      : Effect.fail(new ValidationError({ path: "", message: `The request body could not be read (${error.reason}).` })))
  }
  if (jsonNestedDeeperThan(text.right)) return yield* new ValidationError({ path: "", message: tooDeepMessage })
})

/** API-level middleware: decode failures become ValidationError, unknown routes 404 or 405. */
const ErrorMappingLive = HttpApiBuilder.middleware((app) =>
  (Effect.zipRight(checkJsonBody, app) as Effect.Effect<HttpServerResponse.HttpServerResponse, unknown, HttpServerRequest.HttpServerRequest>).pipe(
    Effect.catchIf(
      (e: unknown): e is HttpApiError.HttpApiDecodeError => e instanceof HttpApiError.HttpApiDecodeError,
      (e) => Effect.fail(validationFromDecode(e))
    ),
    // HttpApiBuilder reads the body with orDie: an unreadable body arrives here as a defect.
    Effect.catchSomeDefect((defect): Option.Option<Effect.Effect<never, PayloadTooLarge | ValidationError>> => {
      if (!HttpServerError.isServerError(defect) || (defect as HttpServerError.HttpServerError)._tag !== "RequestError") {
        return Option.none()
      }
      const error = defect as HttpServerError.RequestError
      if (isBodyOverLimit(error)) return Option.some(Effect.fail(payloadTooLarge()))
      return Option.some(
        Effect.fail(
          new ValidationError({
            path: "",
            message: error.reason === "Decode"
              ? "The request body is not valid JSON. Send a JSON object with Content-Type: application/json."
              : `The request could not be read (${error.reason}).`
          })
        )
      )
    }),
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
 * ahead of the router: the ping intake, and the answers given before a request is routed). Without
 * extra headers no object is spread: this is on the ping path.
 */
export const sendJson = (res: http.ServerResponse, status: number, body: Record<string, unknown>, headers?: Record<string, string>) => {
  const text = JSON.stringify(body)
  const base = {
    "content-type": "application/json",
    "content-length": Buffer.byteLength(text),
    "x-api-version": "1",
    "x-content-type-options": "nosniff",
    "cache-control": "no-store"
  }
  res.writeHead(status, headers === undefined ? base : { ...base, ...headers })
  res.end(text)
}

/** An error answer straight from node:http: the body every error has (src/Domain/Errors.ts). */
const sendError = (res: http.ServerResponse, reply: ErrorReply, headers?: Record<string, string>) =>
  sendJson(res, reply.status, reply.body, headers)

/**
 * Headers of every API answer (docs/security.md): nothing an answer carries is cached (tokens,
 * secrets and session data among them), nothing is sniffed or framed. The API reference is an HTML
 * page with inline scripts and styles; everything else is data and runs nothing.
 */
const apiHeaders = {
  "x-api-version": "1",
  "x-content-type-options": "nosniff",
  "cache-control": "no-store",
  "referrer-policy": "no-referrer",
  "content-security-policy": "default-src 'none'; frame-ancestors 'none'"
}
const docsHeaders = {
  ...apiHeaders,
  "content-security-policy":
    "default-src 'self'; script-src 'self' 'unsafe-inline'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; font-src 'self' data: https:; connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'"
}

/** Response headers every answer carries, the rate limit's, and the Bearer challenge on a 401. */
const finalHeaders = (request: HttpServerRequest.HttpServerRequest, response: HttpServerResponse.HttpServerResponse) => {
  let out = HttpServerResponse.setHeaders(response, request.url.startsWith("/api/docs") ? docsHeaders : apiHeaders)
  const verdict = rateVerdictOf(request)
  if (verdict !== undefined) {
    out = HttpServerResponse.setHeaders(out, verdict.headers)
    if (out.status === 429) out = HttpServerResponse.setHeader(out, "retry-after", String(verdict.retryAfterSeconds))
  }
  if (out.status === 401) out = HttpServerResponse.setHeader(out, "www-authenticate", 'Bearer realm="jobmon"')
  return out
}

/**
 * A defect is a bug (docs/decisions.md#errors): it is logged with its cause, and the client gets a
 * 500 that says so without the internals.
 */
const answerDefects = <R>(app: Effect.Effect<HttpServerResponse.HttpServerResponse, unknown, R>) =>
  app.pipe(
    Effect.catchAllCause((cause) =>
      Effect.gen(function*() {
        const request = yield* HttpServerRequest.HttpServerRequest
        // An interrupted request (the client went away) needs no answer and is no bug.
        if (Cause.isInterruptedOnly(cause)) return yield* Effect.failCause(cause)
        // A statement cancelled by STATEMENT_TIMEOUT_MS, on an endpoint that does not say so itself.
        if ([...Cause.defects(cause), ...Cause.failures(cause)].some(isStatementTimeout)) {
          yield* Effect.logWarning(`request ${request.method} ${request.url.split("?")[0]}: a SQL statement ran past STATEMENT_TIMEOUT_MS; answered 503`)
          return HttpServerResponse.unsafeJson(errorBody("ServiceUnavailable", statementTimeoutMessage), {
            status: ERROR_STATUS.ServiceUnavailable,
            headers: { "retry-after": String(RETRY_AFTER_SECONDS) }
          })
        }
        yield* Effect.logError(`request ${request.method} ${request.url.split("?")[0]} failed`, cause)
        return HttpServerResponse.unsafeJson(
          errorBody("InternalError", "The service failed to answer this request; the failure is logged. Please report it."),
          { status: ERROR_STATUS.InternalError }
        )
      })
    )
  )

const ApiLive = HttpApiBuilder.api(Api).pipe(
  Layer.provide([HealthHttpLive, AuthHttpLive, UsersHttpLive, TokensHttpLive, MonitorsHttpLive, PingsHttpLive, RunsHttpLive, StatsHttpLive, IncidentsHttpLive, EventsHttpLive, MaintenanceHttpLive, WebhooksHttpLive, ChatHttpLive, AlertChannelsHttpLive, StorageHttpLive, ClusterHttpLive, MetricsHttpLive, KeysHttpLive]),
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
    const publicRoutes = yield* PublicRoutes
    const web = webRoutes()
    const app = (yield* HttpApiBuilder.httpApp).pipe(
      // Bodies are counted as they arrive, chunked or not: reading stops at the limit (413).
      HttpIncomingMessage.withMaxBodySize(Option.some(MAX_BODY_BYTES)),
      answerDefects,
      Effect.flatMap((response) => Effect.map(HttpServerRequest.HttpServerRequest, (request) => finalHeaders(request, response)))
    )
    // The tracer is off for requests: spans per request cost more than they tell here.
    const handler = yield* NodeHttpServer.makeHandler(app).pipe(
      HttpMiddleware.withTracerDisabledWhenEffect(() => true)
    )
    const server = http.createServer({
      // Slow clients (docs/security.md): headers within headersTimeoutMs, the whole request within
      // requestTimeoutMs; Node checks both every second.
      headersTimeout: Math.min(config.headersTimeoutMs, config.requestTimeoutMs),
      requestTimeout: config.requestTimeoutMs,
      connectionsCheckingInterval: 1_000
    }, (req, res) => {
      const target = canonicalTarget(req.url ?? "/")
      if (target._tag === "Rejected") {
        req.resume()
        const reply = target.status === 414
          ? errorReply("UriTooLong", target.message)
          : errorReply("ValidationError", target.message, { path: "" })
        return sendError(res, reply, { connection: "close" })
      }
      // Everything after this line reads the one canonical spelling (src/Http/Canonical.ts).
      req.url = target.url
      const length = Number(req.headers["content-length"] ?? 0)
      if (length > MAX_BODY_BYTES) {
        refuseRestOfBody(req)
        return sendError(res, PAYLOAD_TOO_LARGE_REPLY)
      }
      if (fast.handle(req, res)) return
      if (publicRoutes.handle(req, res)) return
      if (web(req, res)) return
      if (req.method !== "GET" && req.method !== "HEAD") keepConnectionForAnswer(req)
      handler(req, res)
    })
    server.keepAliveTimeout = 65_000
    server.maxConnections = config.maxConnections
    server.on("clientError", answerClientError)
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
