import { HttpApiBuilder } from "@effect/platform"
import { Clock, Duration, Effect, Option } from "effect"
import { iso } from "../Domain/Instant.js"
import { Api } from "../Http/Api.js"
import { Rollup, ROLLUP_REFRESH_INTERVAL } from "../Stats/Rollup.js"
import { JobWatch } from "./Jobs.js"
import { unavailableOnStatementTimeout as bounded } from "./StatementTimeout.js"

export const StorageHttpLive = HttpApiBuilder.group(Api, "storage", (handlers) =>
  Effect.gen(function*() {
    const watch = yield* JobWatch
    const rollup = yield* Rollup
    return handlers.handle("status", () =>
      bounded(Effect.gen(function*() {
        const [jobs, status, now] = yield* Effect.all([watch.jobs, rollup.status, Clock.currentTimeMillis])
        return {
          mode: watch.mode,
          timescaleVersion: Option.getOrNull(watch.timescaleVersion),
          rollup: {
            backing: status.backing,
            refreshedBy: "service" as const,
            refreshIntervalSeconds: Duration.toSeconds(ROLLUP_REFRESH_INTERVAL),
            lastRefreshAt: iso(status.lastRefreshAt),
            lastFailureAt: iso(status.lastFailureAt),
            lastError: status.lastError
          },
          jobs: jobs.map((job) => ({
            ...job,
            lastRunStartedAt: iso(job.lastRunStartedAt),
            lastSuccessAt: iso(job.lastSuccessAt),
            nextStartAt: iso(job.nextStartAt),
            lastError: job.lastError === null ? null : { ...job.lastError, at: iso(job.lastError.at) }
          })),
          checkedAt: new Date(now).toISOString()
        }
      })))
  })
)
