import { HttpApiBuilder } from "@effect/platform"
import { SqlClient } from "@effect/sql"
import { Effect } from "effect"
import { Database } from "../Db/Database.js"
import { ServiceUnavailable } from "../Domain/Errors.js"
import { Api } from "./Api.js"

export const HealthHttpLive = HttpApiBuilder.group(Api, "health", (handlers) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const database = yield* Database
    return handlers.handle("healthz", () =>
      sql`select 1`.pipe(
        Effect.timeout("2 seconds"),
        Effect.as({ status: "ok" as const, database: database.mode }),
        Effect.catchAll(() => Effect.fail(new ServiceUnavailable({ message: "The database does not answer." })))
      ))
  })
)
