import { Either } from "effect"
import { INSTANT_RANGE_TEXT, inInstantRange } from "../Domain/Instant.js"
import { excerpt } from "../Domain/Text.js"
import { isValidTimeZone } from "../Domain/TimeZone.js"
import type { Notifications, NotificationsInput } from "./Api.js"
import { activePeriod, nextPeriods, parseRecurrence, type Recurrence } from "./Rrule.js"

/**
 * The pure part of maintenance windows: validating a window's schedule, and which period (if any)
 * covers an instant. Recurrence rules are src/Maintenance/Rrule.ts (RFC 5545 in a zone, DST per
 * docs/decisions.md#time). All times are epoch milliseconds; periods are half-open [start, end).
 */

export interface Period {
  readonly start: number
  readonly end: number
}

/** When a window suppresses incidents. */
export type WindowSchedule =
  | { readonly kind: "one-time"; readonly start: number; readonly end: number; readonly timezone: string }
  | {
    readonly kind: "recurring"
    /** DTSTART */
    readonly start: number
    readonly rrule: string
    readonly durationSeconds: number
    readonly timezone: string
    readonly recurrence: Recurrence
  }

export interface FieldError {
  readonly path: string
  readonly message: string
}

export interface ScheduleFields {
  readonly start?: string | null | undefined
  readonly end?: string | null | undefined
  readonly rrule?: string | null | undefined
  readonly duration?: number | null | undefined
  readonly timezone?: string | null | undefined
}

export const DEFAULT_TIMEZONE = "UTC"
const MINUTE_MS = 60_000

/** ISO 8601 with a date, a time and a zone designator (Z or an offset): never the server's local time. */
const ISO_INSTANT = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d{1,9})?)?(Z|[+-]\d{2}(:?\d{2})?)$/i

export const parseInstant = (value: string, path: string): Either.Either<number, FieldError> => {
  const parsed = ISO_INSTANT.test(value) ? Date.parse(value) : Number.NaN
  if (Number.isNaN(parsed)) {
    return Either.left({
      path,
      message: `${path} must be an ISO 8601 timestamp with a zone, such as 2026-03-01T02:00:00Z (got '${excerpt(value)}').`
    })
  }
  return inInstantRange(parsed)
    ? Either.right(parsed)
    : Either.left({ path, message: `${path} must be a date ${INSTANT_RANGE_TEXT} (got '${excerpt(value)}').` })
}

const present = <A>(value: A | null | undefined): value is A => value !== undefined && value !== null

/**
 * A window's schedule from its fields (docs/decisions.md#maintenance-windows): either start + end
 * (end after start) or rrule + duration (> 0, with an optional start as DTSTART, else `now` rounded
 * down to its minute), never both.
 */
export const validateWindowSchedule = (input: ScheduleFields, now: number): Either.Either<WindowSchedule, FieldError> =>
  Either.gen(function*() {
    const timezone = present(input.timezone) ? input.timezone : DEFAULT_TIMEZONE
    const recurring = present(input.rrule) || present(input.duration)
    if (recurring) {
      if (present(input.end)) {
        return yield* Either.left({
          path: "end",
          message: "A window is either one-time (start and end) or recurring (rrule and duration), not both: drop end or rrule/duration."
        })
      }
      if (!present(input.rrule)) {
        return yield* Either.left({ path: "rrule", message: "rrule is required with duration (a recurring window), e.g. FREQ=WEEKLY;BYDAY=SU;BYHOUR=2;BYMINUTE=0." })
      }
      if (!present(input.duration)) {
        return yield* Either.left({ path: "duration", message: "duration (seconds, > 0) is required with rrule." })
      }
      if (!Number.isInteger(input.duration) || input.duration <= 0) {
        return yield* Either.left({ path: "duration", message: `duration must be a whole number of seconds greater than 0 (got ${input.duration}).` })
      }
      // A given start is DTSTART to the second (Rrule.ts drops its milliseconds): periods start at its
      // second past the minute. Without one, the creation instant rounded down to its minute: periods on
      // whole minutes (BYHOUR=2;BYMINUTE=0 means 02:00:00, not the creation time's second; a preview and
      // the create that follows it agree), and never later than asked (docs/maintenance.md).
      const dtstart = present(input.start) ? yield* parseInstant(input.start, "start") : Math.floor(now / MINUTE_MS) * MINUTE_MS
      const recurrence = yield* Either.mapLeft(
        parseRecurrence({ rrule: input.rrule, timezone, start: dtstart, durationSeconds: input.duration }),
        (error): FieldError => ({ path: error.field, message: error.message })
      )
      return {
        kind: "recurring" as const,
        start: recurrence.dtstart,
        rrule: recurrence.rrule,
        durationSeconds: input.duration,
        timezone: recurrence.timezone,
        recurrence
      }
    }
    if (!present(input.start) && !present(input.end)) {
      return yield* Either.left({
        path: "start",
        message: "A window needs either start and end (one-time) or rrule and duration (recurring)."
      })
    }
    if (!present(input.start)) return yield* Either.left({ path: "start", message: "start is required with end (a one-time window)." })
    if (!present(input.end)) return yield* Either.left({ path: "end", message: "end is required with start (a one-time window)." })
    const start = yield* parseInstant(input.start, "start")
    const end = yield* parseInstant(input.end, "end")
    if (end <= start) return yield* Either.left({ path: "end", message: `end (${input.end}) must be after start (${input.start}).` })
    if (!isValidTimeZone(timezone)) {
      return yield* Either.left({
        path: "timezone",
        message: `timezone '${excerpt(timezone)}' is not an IANA time zone name (e.g. Europe/London, UTC).`
      })
    }
    return { kind: "one-time" as const, start, end, timezone }
  })

/** The period of a window that covers `at`, if any. */
export const periodAt = (schedule: WindowSchedule, at: number): Period | undefined => {
  if (schedule.kind === "one-time") return schedule.start <= at && at < schedule.end ? { start: schedule.start, end: schedule.end } : undefined
  return activePeriod(schedule.recurrence, at)
}

/** The next `count` periods from `from`: a period running at `from` first, then those after it. */
export const periodsFrom = (schedule: WindowSchedule, from: number, count: number): ReadonlyArray<Period> => {
  if (schedule.kind === "one-time") return schedule.end > from && count > 0 ? [{ start: schedule.start, end: schedule.end }] : []
  const running = activePeriod(schedule.recurrence, from)
  const out: Array<Period> = running === undefined ? [] : [running]
  for (const p of nextPeriods(schedule.recurrence, from, count + 1)) {
    if (out.length >= count) break
    if (p.end <= from || out.some((q) => q.start === p.start)) continue
    out.push(p)
  }
  return out
}

/** The first period that starts strictly after `at`. */
export const nextPeriodAfter = (schedule: WindowSchedule, at: number): Period | undefined => {
  if (schedule.kind === "one-time") return schedule.start > at ? { start: schedule.start, end: schedule.end } : undefined
  return nextPeriods(schedule.recurrence, at, 3).find((p) => p.start > at)
}

export const DEFAULT_NOTIFICATIONS: Notifications = { beforeStart: null, onStart: false, onEnd: false, channels: [] }

const CHANNEL = /^(chat|webhook):\S(.*\S)?$/
export const MAX_BEFORE_START_SECONDS = 31_536_000

/** The notifications setting, with defaults filled (a beforeStart of 0 means none). */
export const validateNotifications = (
  input: NotificationsInput | null | undefined
): Either.Either<Notifications, FieldError> => {
  if (input === null || input === undefined) return Either.right(DEFAULT_NOTIFICATIONS)
  const beforeStart = input.beforeStart ?? null
  if (beforeStart !== null && (beforeStart < 0 || beforeStart > MAX_BEFORE_START_SECONDS)) {
    return Either.left({
      path: "notifications.beforeStart",
      message: `notifications.beforeStart must be between 0 and ${MAX_BEFORE_START_SECONDS} seconds (got ${beforeStart}).`
    })
  }
  const channels = input.channels ?? []
  if (channels.length > 50) {
    return Either.left({ path: "notifications.channels", message: "notifications.channels may list at most 50 channels." })
  }
  for (let i = 0; i < channels.length; i++) {
    if (!CHANNEL.test(channels[i]!)) {
      return Either.left({
        path: `notifications.channels.${i}`,
        message: `notifications.channels.${i} must be chat:<chat webhook name> or webhook:<webhook id> (got '${excerpt(channels[i]!)}').`
      })
    }
  }
  return Either.right({
    beforeStart: beforeStart === 0 ? null : beforeStart,
    onStart: input.onStart ?? false,
    onEnd: input.onEnd ?? false,
    channels: [...new Set(channels)]
  })
}

/** Whether an override made at `overrideStart` lets alerts through at `at`, inside `period`. */
export const overrideCovers = (
  override: { readonly startedAt: number; readonly endsAt: number } | null,
  period: Period,
  at: number
): boolean => override !== null && override.startedAt >= period.start && override.startedAt <= at && at < override.endsAt

/** YYYY-MM-DD as the UTC midnight that starts it, or undefined when it is not a real date. */
export const parseDay = (value: string): number | undefined => {
  const m = /^(\d{4})-(\d{2})-(\d{2})$/.exec(value)
  if (m === null) return undefined
  const [y, mo, d] = [Number(m[1]), Number(m[2]), Number(m[3])]
  // setUTCFullYear: Date.UTC reads the years 0–99 as 1900–1999.
  const check = new Date(Date.UTC(2000, mo - 1, d))
  check.setUTCFullYear(y)
  const t = check.getTime()
  return y >= 1 && check.getUTCFullYear() === y && check.getUTCMonth() === mo - 1 && check.getUTCDate() === d ? t : undefined
}

export const DAY_MS = 86_400_000
