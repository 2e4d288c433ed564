import { Either } from "effect"
import type { MonitorRow } from "./MonitorsRepo.js"
import { type Schedule, validateSchedule } from "./Schedule.js"

/** The schedule of a stored monitor (validated when it was stored, so a failure here is a bug). */
export const scheduleOf = (row: Pick<MonitorRow, "schedule_type" | "schedule_expression" | "timezone">): Schedule => {
  const parsed = validateSchedule({ type: row.schedule_type, expression: row.schedule_expression, timezone: row.timezone })
  if (Either.isLeft(parsed)) throw new Error(`stored schedule is invalid: ${parsed.left.message}`)
  return parsed.right
}
