import { NodeRuntime } from "@effect/platform-node"
import { Effect, Layer, Logger } from "effect"
import { AppLive } from "./App.js"
import { appConfig } from "./Config.js"

/** `jobmon serve`: run until SIGINT/SIGTERM, then close the server and the database cleanly. */
export const serve = Effect.gen(function*() {
  const config = yield* appConfig
  return yield* Layer.launch(AppLive).pipe(Logger.withMinimumLogLevel(config.logLevel))
})

if (import.meta.url === `file://${process.argv[1]}`) {
  NodeRuntime.runMain(serve as Effect.Effect<never, unknown>)
}
