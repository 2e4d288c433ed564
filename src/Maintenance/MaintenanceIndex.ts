import { Effect, Either } from "effect"
import { MaintenanceRepo } from "./MaintenanceRepo.js"
import { makeWindowIndex, scheduleOfRow } from "./WindowIndex.js"

/**
 * The one WindowIndex of this instance, loaded with every live window at start-up. The engine's
 * MaintenanceCheck and the monitors API read it; the Maintenance service (the API's create, PATCH,
 * DELETE and override on this instance) keeps it current, under the scheduler's lock. With several
 * instances the scheduler also reloads into it the windows changed on the others (their news).
 */
export class MaintenanceIndex extends Effect.Service<MaintenanceIndex>()("jobmon/MaintenanceIndex", {
  dependencies: [MaintenanceRepo.Default],
  effect: Effect.gen(function*() {
    const repo = yield* MaintenanceRepo
    const index = makeWindowIndex()
    for (const row of yield* repo.loadWindows) {
      const schedule = scheduleOfRow(row)
      if (Either.isLeft(schedule)) {
        yield* Effect.logError(`maintenance window ${row.id} has a schedule that no longer parses; it is ignored`)
        continue
      }
      index.add(row, schedule.right)
    }
    return index
  })
}) {}
