import { HttpApp, HttpServerResponse } from "@effect/platform"
import { SqlClient, type SqlConnection } from "@effect/sql"
import { Effect, Option } from "effect"
import { ServiceUnavailable } from "../Domain/Errors.js"

/**
 * The pool's `statement_timeout` (STATEMENT_TIMEOUT_MS, src/Db/Database.ts) bounds what one request
 * can cost the database: a query that runs past it is cancelled by PostgreSQL. API handlers turn
 * that into a 503 ({@link unavailableOnStatementTimeout}); work that is long by nature (migrations,
 * the rollup refresh, retention, the engine's start-up) runs without the limit
 * ({@link withoutStatementTimeout}). docs/operations.md, "Statement timeout".
 */

/** SQLSTATE query_canceled: statement_timeout (or a cancel request) ended the statement. */
export const QUERY_CANCELED = "57014"

/** Whether an error or defect is, or wraps, PostgreSQL cancelling a statement. */
export const isStatementTimeout = (error: unknown): boolean => {
  let current: unknown = error
  for (let depth = 0; depth < 5 && typeof current === "object" && current !== null; depth++) {
    if ((current as { code?: unknown }).code === QUERY_CANCELED) return true
    current = (current as { cause?: unknown }).cause
  }
  return false
}

/**
 * Runs `effect` in a transaction (or a savepoint of the caller's) whose statements have no time
 * limit: `SET LOCAL` ends with the transaction, so the pooled connection keeps the limit afterwards.
 */
export const withoutStatementTimeout = <A, E, R>(effect: Effect.Effect<A, E, R>) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) => withoutStatementTimeoutOn(sql)(effect))

/** {@link withoutStatementTimeout} with a client already in hand (no SqlClient requirement). */
export const withoutStatementTimeoutOn = (sql: SqlClient.SqlClient) => <A, E, R>(effect: Effect.Effect<A, E, R>) =>
  sql.withTransaction(Effect.zipRight(sql`set local statement_timeout = 0`, effect))

/**
 * For a statement that cannot run in a transaction (`CALL refresh_continuous_aggregate`): a reserved
 * connection without the limit, the limit put back before the connection returns to the pool.
 */
export const onConnectionWithoutStatementTimeout = <A, E, R>(
  sql: SqlClient.SqlClient,
  use: (connection: SqlConnection.Connection) => Effect.Effect<A, E, R>
) =>
  Effect.scoped(
    Effect.gen(function*() {
      const connection = yield* sql.reserve
      yield* Effect.acquireRelease(
        connection.executeRaw("set statement_timeout = 0", []),
        () => Effect.ignore(connection.executeRaw("reset statement_timeout", []))
      )
      return yield* use(connection)
    })
  )

/** Seconds a client is asked to wait before it tries again. */
export const RETRY_AFTER_SECONDS = 5

export const statementTimeoutMessage =
  "The database did not answer in time (the service's statement timeout); try again in a few seconds, " +
  "or ask for less (a smaller limit, a narrower filter or time range)."

/**
 * For API handlers: a statement cancelled by the timeout becomes a 503 `ServiceUnavailable` with
 * `Retry-After`, instead of a 500. Declare ServiceUnavailable on the endpoint's group.
 */
export const unavailableOnStatementTimeout = <A, E, R>(effect: Effect.Effect<A, E, R>): Effect.Effect<A, E | ServiceUnavailable, R> =>
  Effect.catchSomeDefect(effect, (defect) =>
    isStatementTimeout(defect)
      ? Option.some(
        Effect.zipRight(
          Effect.zipRight(
            Effect.logWarning("a request's SQL statement ran past STATEMENT_TIMEOUT_MS and was cancelled; answered 503"),
            HttpApp.appendPreResponseHandler((_request, response) =>
              Effect.succeed(HttpServerResponse.setHeader(response, "retry-after", String(RETRY_AFTER_SECONDS)))
            )
          ),
          Effect.fail(new ServiceUnavailable({ message: statementTimeoutMessage }))
        )
      )
      : Option.none())
