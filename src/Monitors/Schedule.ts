/**
 * Job schedules: validation, next/previous expected times, descriptions.
 *
 * This module is pure: no Effect services, no I/O, and it never reads the
 * clock. Every instant is passed in as epoch milliseconds.
 *
 * How cron occurrences are computed (see docs/schedules.md):
 *
 * 1. croner enumerates the *naive* local wall-clock times that match the
 *    pattern. It runs with `utcOffset: 0`, so it works on a plain calendar
 *    with no zone and no DST (its own DST handling is not used, see below).
 * 2. This module maps each naive local time to real instants in the
 *    schedule's IANA zone (the zone arithmetic is src/Domain/TimeZone.ts,
 *    shared with maintenance windows) the way Vixie cron / cronie runs jobs:
 *    - a local time that exists once: that instant;
 *    - a local time skipped by a spring-forward gap: a *fixed-time* job runs at
 *      the first instant after the gap (02:30 -> 03:00 on a one-hour jump);
 *      a *wildcard* job (minute or hour field starting with `*`, or @hourly)
 *      does not run for it;
 *    - a local time repeated by a fall-back overlap: a fixed-time job runs once,
 *      at the first pass; a wildcard job runs in both passes;
 *    - a jump of 3 hours or more is a clock change to cronie, not DST: skipped
 *      times are not caught up and repeated times run again (see
 *      expectedInstants for cronie's exact thresholds).
 *    Occurrences that coincide (several skipped fixed times all moved to the
 *    end of the gap) count once.
 *
 * What croner does on its own, measured with croner 10.0.1 (and why it is not
 * used for the zone arithmetic):
 *    - a local time inside a gap is shifted forward by the gap length
 *      (NY 2026-03-08 02:30 -> 03:30 EDT, not 03:00);
 *    - an hourly job reports the instant after a gap twice (NY 2026-03-08:
 *      07:00Z, 07:00Z);
 *    - wildcard jobs are dropped from the second pass of a repeated hour
 *      (NY 2026-11-01 "0 * * * *": 05:00Z, 07:00Z, no 06:00Z);
 *    - day-of-month/day-of-week are OR-ed unless a field is exactly `*`, whereas
 *      cron AND-s them when either field *starts with* `*` (e.g. `*\/2`);
 *      corrected by passing `domAndDow` accordingly;
 *    - `previousRuns` throws on February-only patterns ("0 0 29 2 *"), so the
 *      previous occurrence is found with forward searches only;
 *    - `?` is silently turned into `*` after the OR/AND decision, so it is
 *      rejected here.
 */
import { Cron } from "croner"
import { Either } from "effect"
import { excerpt } from "../Domain/Text.js"
import { chooseInstant, isValidTimeZone, TimeZone } from "../Domain/TimeZone.js"

// Callers that validate a zone along with a schedule import it from here.
export { isValidTimeZone }

// ---------------------------------------------------------------------------
// Public types
// ---------------------------------------------------------------------------

export type ScheduleInput = {
  readonly type: "cron" | "interval"
  readonly expression: string
  readonly timezone?: string | undefined
}

export type Schedule =
  | { readonly type: "cron"; readonly expression: string; readonly timezone: string }
  | {
    readonly type: "interval"
    readonly expression: string
    readonly timezone: string
    readonly intervalMs: number
  }

/** A validation failure; `field` is relative to the schedule object. */
export type ScheduleError = {
  readonly field: "type" | "expression" | "timezone"
  readonly message: string
}

// ---------------------------------------------------------------------------
// Limits and constants
// ---------------------------------------------------------------------------

export const DEFAULT_TIMEZONE = "UTC"
/** Shortest accepted interval: 10 seconds. */
export const MIN_INTERVAL_MS = 10_000
/** Longest accepted interval: 365 days. */
export const MAX_INTERVAL_MS = 365 * 86_400_000
/** Longest accepted expression (cron or interval), in characters. */
export const MAX_EXPRESSION_LENGTH = 200

const SECOND = 1_000
const MINUTE = 60_000
const HOUR = 3_600_000
const DAY = 86_400_000

const CRON_EXAMPLE = `e.g. "*/5 * * * *" (every 5 minutes) or "30 2 * * *" (02:30 every day)`
const INTERVAL_EXAMPLE = `e.g. "30s", "5m", "1h", "1d", "2w" or "1h30m"`

// ---------------------------------------------------------------------------
// Intervals
// ---------------------------------------------------------------------------

const UNIT_MS: ReadonlyArray<readonly [RegExp, number, number]> = [
  // [unit pattern, ms, rank] — units must appear from largest to smallest
  [/^(?:w|wk|wks|week|weeks)$/, 7 * DAY, 5],
  [/^(?:d|day|days)$/, DAY, 4],
  [/^(?:h|hr|hrs|hour|hours)$/, HOUR, 3],
  [/^(?:m|min|mins|minute|minutes)$/, MINUTE, 2],
  [/^(?:s|sec|secs|second|seconds)$/, SECOND, 1]
]

/**
 * Parses a duration such as "30s", "5m", "1h", "1d", "2w", "1h30m" or
 * "1 hour 30 minutes" into milliseconds. Units: w, d, h, m (minutes), s; each
 * at most once, largest first. Returns undefined when the text is not a
 * duration. Limits (10 s .. 365 d) are enforced by validateSchedule.
 */
export const parseIntervalMs = (expr: string): number | undefined => {
  if (typeof expr !== "string") return undefined
  const text = expr.trim().toLowerCase()
  if (text.length === 0 || text.length > MAX_EXPRESSION_LENGTH) return undefined
  const token = /\s*(\d+)\s*([a-z]+)\s*/y
  let total = 0
  let lastRank = Number.POSITIVE_INFINITY
  let pos = 0
  while (pos < text.length) {
    token.lastIndex = pos
    const m = token.exec(text)
    if (m === null) return undefined
    pos = token.lastIndex
    const digits = m[1]!
    const unit = m[2]!
    if (digits.length > 12) return undefined
    const entry = UNIT_MS.find(([re]) => re.test(unit))
    if (entry === undefined) return undefined
    const [, ms, rank] = entry
    if (rank >= lastRank) return undefined
    lastRank = rank
    total += Number(digits) * ms
  }
  return Number.isSafeInteger(total) ? total : undefined
}

// ---------------------------------------------------------------------------
// Cron expressions
// ---------------------------------------------------------------------------

const MACROS: Readonly<Record<string, string>> = {
  "@yearly": "0 0 1 1 *",
  "@annually": "0 0 1 1 *",
  "@monthly": "0 0 1 * *",
  "@weekly": "0 0 * * 0",
  "@daily": "0 0 * * *",
  "@midnight": "0 0 * * *",
  "@hourly": "0 * * * *"
}

const FIELD_NAMES = ["minute", "hour", "day-of-month", "month", "day-of-week"] as const
const FIELD_CHARS = /^[0-9A-Za-z*,\-/#]+$/

type CompiledCron = {
  readonly cron: NaiveCron
  /** Vixie cron "wildcard" job: minute or hour field starts with `*` (or @hourly). */
  readonly wildcard: boolean
}

type ParsedCron = {
  /** The expression to store: whitespace collapsed, macros lower-cased. */
  readonly expression: string
  /** Five fields after macro expansion. */
  readonly fields: ReadonlyArray<string>
  readonly wildcard: boolean
}

const parseCronText = (input: string): Either.Either<ParsedCron, string> => {
  const expression = input.trim().replace(/\s+/g, " ")
  if (expression.length === 0) {
    return Either.left(`The cron expression is empty. Give 5 fields (minute hour day-of-month month day-of-week), ${CRON_EXAMPLE}.`)
  }
  if (expression.length > MAX_EXPRESSION_LENGTH) {
    return Either.left(`The cron expression is longer than ${MAX_EXPRESSION_LENGTH} characters, ${CRON_EXAMPLE}.`)
  }
  if (expression.startsWith("@")) {
    const macro = expression.toLowerCase()
    const expanded = MACROS[macro]
    if (expanded === undefined) {
      return Either.left(
        `Unknown cron macro "${excerpt(expression)}". Use one of @yearly, @annually, @monthly, @weekly, @daily, @midnight, @hourly, or 5 fields, ${CRON_EXAMPLE}.`
      )
    }
    return Either.right({ expression: macro, fields: expanded.split(" "), wildcard: macro === "@hourly" })
  }
  const fields = expression.split(" ")
  if (fields.length === 6 || fields.length === 7) {
    return Either.left(
      `The cron expression has ${fields.length} fields, but exactly 5 fields are expected (minute hour day-of-month month day-of-week); seconds${
        fields.length === 7 ? " and years" : ""
      } are not supported. Drop the ${fields.length === 7 ? "first and last fields" : "first (seconds) field"}, ${CRON_EXAMPLE}.`
    )
  }
  if (fields.length !== 5) {
    return Either.left(
      `The cron expression has ${fields.length} field${
        fields.length === 1 ? "" : "s"
      }, but exactly 5 fields are expected (minute hour day-of-month month day-of-week), ${CRON_EXAMPLE}.`
    )
  }
  for (let i = 0; i < 5; i++) {
    const f = fields[i]!
    if (f.includes("?")) {
      return Either.left(`The ${FIELD_NAMES[i]} field "${excerpt(f)}" uses "?", which is not supported; use "*" instead, ${CRON_EXAMPLE}.`)
    }
    if (!FIELD_CHARS.test(f)) {
      return Either.left(
        `The ${FIELD_NAMES[i]} field "${excerpt(f)}" contains characters that are not allowed; use numbers, names (JAN, MON), "*", ",", "-" and "/", ${CRON_EXAMPLE}.`
      )
    }
  }
  return Either.right({ expression, fields, wildcard: fields[0]!.startsWith("*") || fields[1]!.startsWith("*") })
}

/** What this module needs of croner: the next naive wall-clock time strictly after a date. */
interface NaiveCron {
  readonly nextRun: (from: Date) => Date | null
}

const plainCron = (fields: ReadonlyArray<string>, domAndDow: boolean): Cron =>
  new Cron(fields.join(" "), {
    // A plain calendar without zone or DST: croner yields naive wall-clock
    // times; this module maps them to instants in the schedule's zone.
    utcOffset: 0,
    paused: true,
    mode: "5-part",
    domAndDow
  })

/**
 * Vixie cron: day-of-month and day-of-week are AND-ed when either field starts with "*", OR-ed
 * otherwise. croner 10's own OR mode skips matching days when it crosses from a short month
 * ("* * 1-7 * 7" from 2002-02-28 jumps to Sunday 03-03, skipping Friday 03-01), so an OR
 * pattern is evaluated as the union of its day-of-month half and its day-of-week half.
 */
const newCron = (fields: ReadonlyArray<string>): NaiveCron => {
  if (fields[2]!.startsWith("*") || fields[4]!.startsWith("*")) return plainCron(fields, true)
  const byMonthDay = plainCron([fields[0]!, fields[1]!, fields[2]!, fields[3]!, "*"], true)
  const byWeekDay = plainCron([fields[0]!, fields[1]!, "*", fields[3]!, fields[4]!], true)
  return {
    nextRun: (from) => {
      const a = byMonthDay.nextRun(from)
      const b = byWeekDay.nextRun(from)
      return a === null ? b : b === null ? a : a.getTime() <= b.getTime() ? a : b
    }
  }
}

// A fixed reference for the "does it ever fire" check (validation reads no clock).
const NEVER_FIRES_REFERENCE = Date.UTC(2000, 0, 1)

type Compiled = Either.Either<CompiledCron & { readonly expression: string }, string>
const compiledCache = new Map<string, Compiled>()

/**
 * Parses and compiles a cron expression, or explains why it is unusable.
 * Cached by the raw text (building a croner pattern costs ~0.3 ms).
 */
const compileCron = (text: string): Compiled => {
  const cached = compiledCache.get(text)
  if (cached !== undefined) return cached
  const result = compileUncached(text)
  if (compiledCache.size > 2000) compiledCache.clear()
  compiledCache.set(text, result)
  return result
}

const compileUncached = (text: string): Compiled => {
  const parsed = parseCronText(text)
  if (Either.isLeft(parsed)) return Either.left(parsed.left)
  const { expression, fields, wildcard } = parsed.right
  let cron: NaiveCron
  try {
    cron = newCron(fields)
  } catch (e) {
    const reason = (e instanceof Error ? e.message : String(e)).replace(/^CronPattern:\s*/, "").replace(/\.$/, "")
    return Either.left(
      `Invalid cron expression "${excerpt(expression)}": ${excerpt(reason)}. Use 5 fields (minute hour day-of-month month day-of-week), ${CRON_EXAMPLE}.`
    )
  }
  if (naiveNext(cron, NEVER_FIRES_REFERENCE) === undefined) {
    return Either.left(
      `The cron expression "${excerpt(expression)}" never matches a real date (for example 30 February); check the day-of-month and month fields, ${CRON_EXAMPLE}.`
    )
  }
  return Either.right({ cron, wildcard, expression })
}

/** Compiles a cron expression (cached); undefined when it is invalid. */
const compile = (text: string): CompiledCron | undefined => Either.getOrUndefined(compileCron(text))

/** Smallest naive wall-clock time matching the pattern strictly after `naive`. */
const naiveNext = (cron: NaiveCron, naive: number): number | undefined => {
  try {
    const d = cron.nextRun(new Date(naive))
    return d === null ? undefined : d.getTime()
  } catch {
    return undefined
  }
}

// A 5-field pattern repeats within 400 years (the Gregorian cycle).
const BACKWARD_WINDOWS = [HOUR, DAY, 32 * DAY, 367 * DAY, 8 * 366 * DAY, 401 * 366 * DAY]

/**
 * Largest naive wall-clock time matching the pattern that is <= `naive`.
 * Uses forward searches only (croner's previousRuns throws on some patterns).
 */
const naiveLatestAtOrBefore = (cron: NaiveCron, naive: number): number | undefined => {
  const end = Math.floor(naive / MINUTE) * MINUTE
  const hasMatchIn = (from: number) => {
    const n = naiveNext(cron, from)
    return n !== undefined && n <= end
  }
  let hi = end // invariant: no match in (hi, end]
  let found: number | undefined
  for (const w of BACKWARD_WINDOWS) {
    const candidate = end - w
    if (hasMatchIn(candidate)) {
      found = candidate
      break
    }
    hi = candidate
  }
  if (found === undefined) return undefined
  let lo: number = found // invariant: a match in (lo, end]
  while (hi - lo > MINUTE) {
    const mid = lo + Math.floor((hi - lo) / 2 / MINUTE) * MINUTE
    if (hasMatchIn(mid)) lo = mid
    else hi = mid
  }
  return naiveNext(cron, lo)
}

/**
 * cronie (src/cron.c) compares the wall clock with its "virtual time" each
 * minute. A forward jump of 5 minutes to 3 hours is DST beginning: wildcard
 * jobs run for the current minute only, fixed-time jobs run for every skipped
 * minute. A forward jump of at most 4 minutes is a late wake-up: every job
 * runs for every skipped minute. A jump of 3 hours or more either way is "the
 * clock was set": skipped times are not caught up and repeated times run
 * again (Samoa skipped 2011-12-30 entirely). A smaller backward jump is DST
 * ending: only wildcard jobs run until the wall clock catches up.
 */
const LATE_WAKEUP_MAX_GAP_MS = 4 * MINUTE
const CLOCK_SET_MIN_GAP_MS = 3 * HOUR
const CLOCK_SET_MIN_OVERLAP_MS = 3 * HOUR + 2 * MINUTE

/** The instants at which a job matching naive local time `naive` is expected. */
const expectedInstants = (zone: TimeZone, compiled: CompiledCron, naive: number): ReadonlyArray<number> => {
  const r = zone.resolve(naive)
  if (r.gap !== undefined) {
    const length = r.gap.end - r.gap.start
    if (length >= CLOCK_SET_MIN_GAP_MS) return []
    // A fixed-time job skipped by the gap runs as soon as the clock has jumped.
    const atGapEnd = chooseInstant(r, "gapEnd")
    if (length <= LATE_WAKEUP_MAX_GAP_MS) return [atGapEnd]
    return compiled.wildcard ? [] : [atGapEnd]
  }
  if (r.instants.length < 2 || compiled.wildcard) return r.instants
  const overlap = r.instants[r.instants.length - 1]! - r.instants[0]!
  return overlap >= CLOCK_SET_MIN_OVERLAP_MS ? r.instants : r.instants.slice(0, 1)
}

/** Largest offset difference within two days of `t`. */
const offsetSpread = (zone: TimeZone, t: number): number => {
  const [lo, hi] = zone.offsetRange(t - 2 * DAY, t + 2 * DAY)
  return hi - lo
}

const MAX_STEPS = 10_000

const cronNext = (zone: TimeZone, compiled: CompiledCron, after: number): number | undefined => {
  // Every naive time <= localOf(after) - spread maps only to instants <= after.
  let cursor = zone.toWallTime(after) - offsetSpread(zone, after)
  let best: number | undefined
  for (let i = 0; i < MAX_STEPS; i++) {
    const naive = naiveNext(compiled.cron, cursor)
    if (naive === undefined) break
    cursor = naive
    const instants = expectedInstants(zone, compiled, naive)
    if (instants.length === 0) continue
    for (const t of instants) {
      if (t > after && (best === undefined || t < best)) best = t
    }
    // The earliest instant of a naive time never decreases as naive time grows.
    if (best !== undefined && instants[0]! >= best) break
  }
  return best
}

const cronPrevious = (zone: TimeZone, compiled: CompiledCron, at: number): number | undefined => {
  // Every naive time > localOf(at) + spread maps only to instants > at.
  let cursor: number | undefined = zone.toWallTime(at) + offsetSpread(zone, at)
  let best: number | undefined
  for (let i = 0; i < MAX_STEPS && cursor !== undefined; i++) {
    const naive = naiveLatestAtOrBefore(compiled.cron, cursor)
    if (naive === undefined) break
    cursor = naive - 1
    const instants = expectedInstants(zone, compiled, naive)
    if (instants.length === 0) continue
    for (const t of instants) {
      if (t <= at && (best === undefined || t > best)) best = t
    }
    // The latest instant of a naive time never increases as naive time shrinks.
    if (best !== undefined && instants[instants.length - 1]! <= best) break
  }
  return best
}

// ---------------------------------------------------------------------------
// Validation
// ---------------------------------------------------------------------------

const fail = (field: ScheduleError["field"], message: string): Either.Either<Schedule, ScheduleError> =>
  Either.left({ field, message })

/**
 * Validates and normalises a schedule: trims and collapses whitespace,
 * lower-cases macros, defaults the zone to "UTC", fixes the zone's letter case.
 * Never throws.
 */
export const validateSchedule = (input: ScheduleInput): Either.Either<Schedule, ScheduleError> => {
  try {
    return validateUnsafe(input)
  } catch (e) {
    return fail("expression", `The schedule could not be read: ${e instanceof Error ? e.message : String(e)}.`)
  }
}

const validateTimeZone = (tzRaw: unknown): Either.Either<string, ScheduleError> => {
  if (tzRaw === undefined || tzRaw === null) return Either.right(DEFAULT_TIMEZONE)
  if (typeof tzRaw !== "string") {
    return Either.left({
      field: "timezone",
      message: `The time zone must be a string holding an IANA name such as "Europe/London" or "UTC".`
    })
  }
  const trimmed = tzRaw.trim()
  const normalised = TimeZone.of(trimmed)?.id
  if (normalised === undefined) {
    return Either.left({
      field: "timezone",
      message: trimmed.length === 0
        ? `The time zone is empty. Give an IANA name such as "America/New_York", or leave it out for "UTC".`
        : `Unknown time zone "${excerpt(trimmed)}". Use an IANA name such as "America/New_York", "Europe/London" or "UTC".`
    })
  }
  return Either.right(normalised)
}

const validateUnsafe = (input: ScheduleInput): Either.Either<Schedule, ScheduleError> => {
  if (typeof input !== "object" || input === null) {
    return fail("type", `The schedule must be an object such as {"type": "cron", "expression": "*/5 * * * *"}.`)
  }
  const type: unknown = input.type
  if (type !== "cron" && type !== "interval") {
    return fail("type", `The schedule type must be "cron" or "interval"${typeof type === "string" ? `, not "${excerpt(type)}"` : ""}.`)
  }
  const expressionRaw: unknown = input.expression
  if (typeof expressionRaw !== "string") {
    return fail(
      "expression",
      type === "cron"
        ? `The cron expression must be a string, ${CRON_EXAMPLE}.`
        : `The interval must be a string, ${INTERVAL_EXAMPLE}.`
    )
  }

  if (type === "interval") {
    const expression = expressionRaw.trim()
    const ms = parseIntervalMs(expression)
    if (ms === undefined) {
      return fail(
        "expression",
        expression.length === 0
          ? `The interval is empty. Give a duration, ${INTERVAL_EXAMPLE}.`
          : /^\d+$/.test(expression)
          ? `The interval "${excerpt(expression)}" has no unit. Add one, ${INTERVAL_EXAMPLE}.`
          : `"${excerpt(expression)}" is not a duration. Use whole numbers with units w, d, h, m, s (largest first), ${INTERVAL_EXAMPLE}.`
      )
    }
    if (ms < MIN_INTERVAL_MS) {
      return fail("expression", `The interval "${excerpt(expression)}" is shorter than the minimum of 10 seconds; use "10s" or more.`)
    }
    if (ms > MAX_INTERVAL_MS) {
      return fail("expression", `The interval "${excerpt(expression)}" is longer than the maximum of 365 days; use "365d" or less.`)
    }
    const timezone = validateTimeZone(input.timezone)
    if (Either.isLeft(timezone)) return Either.left(timezone.left)
    return Either.right({ type: "interval", expression, timezone: timezone.right, intervalMs: ms })
  }

  const compiled = compileCron(expressionRaw)
  if (Either.isLeft(compiled)) return fail("expression", compiled.left)
  const timezone = validateTimeZone(input.timezone)
  if (Either.isLeft(timezone)) return Either.left(timezone.left)
  return Either.right({ type: "cron", expression: compiled.right.expression, timezone: timezone.right })
}

// ---------------------------------------------------------------------------
// Occurrences
// ---------------------------------------------------------------------------

const intervalOf = (schedule: Schedule): number | undefined => {
  if (schedule.type !== "interval") return undefined
  const ms = Number.isFinite(schedule.intervalMs) && schedule.intervalMs > 0
    ? schedule.intervalMs
    : parseIntervalMs(schedule.expression)
  return ms !== undefined && ms > 0 ? ms : undefined
}

/**
 * The next expected time strictly after `after` (epoch ms). For an interval
 * schedule this is simply `after + intervalMs` (the engine passes the last
 * ping). Undefined when the schedule is unusable or never fires again.
 */
export const nextOccurrence = (schedule: Schedule, after: number): number | undefined => {
  if (!Number.isFinite(after)) return undefined
  try {
    if (schedule.type === "interval") {
      const ms = intervalOf(schedule)
      return ms === undefined ? undefined : after + ms
    }
    const compiled = compile(schedule.expression)
    const zone = TimeZone.of(schedule.timezone)
    if (compiled === undefined || zone === undefined) return undefined
    return cronNext(zone, compiled, after)
  } catch {
    return undefined
  }
}

/**
 * The newest occurrence at or before `at` (epoch ms). Cron only: an interval
 * schedule has no fixed grid, so this is undefined for it.
 */
export const previousOccurrence = (schedule: Schedule, at: number): number | undefined => {
  if (!Number.isFinite(at) || schedule.type !== "cron") return undefined
  try {
    const compiled = compile(schedule.expression)
    const zone = TimeZone.of(schedule.timezone)
    if (compiled === undefined || zone === undefined) return undefined
    return cronPrevious(zone, compiled, at)
  } catch {
    return undefined
  }
}

/** The next `count` occurrences strictly after `from`, ascending. */
export const nextOccurrences = (schedule: Schedule, from: number, count: number): ReadonlyArray<number> => {
  const out: Array<number> = []
  if (!Number.isFinite(count)) return out
  const n = Math.floor(count)
  let cursor = from
  for (let i = 0; i < n; i++) {
    const next = nextOccurrence(schedule, cursor)
    if (next === undefined || next <= cursor) break
    out.push(next)
    cursor = next
  }
  return out
}

// ---------------------------------------------------------------------------
// Descriptions
// ---------------------------------------------------------------------------

const DAY_NAMES = ["Sunday", "Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday"]
const MONTH_NAMES = [
  "January",
  "February",
  "March",
  "April",
  "May",
  "June",
  "July",
  "August",
  "September",
  "October",
  "November",
  "December"
]
const DAY_ABBR = ["sun", "mon", "tue", "wed", "thu", "fri", "sat"]
const MONTH_ABBR = ["jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"]

const plural = (n: number, unit: string): string => (n === 1 ? `1 ${unit}` : `${n} ${unit}s`)

const joinWords = (items: ReadonlyArray<string>): string =>
  items.length <= 1 ? (items[0] ?? "") : `${items.slice(0, -1).join(", ")} and ${items[items.length - 1]}`

const describeInterval = (ms: number): string => {
  const units: ReadonlyArray<readonly [string, number]> = [
    ["week", 7 * DAY],
    ["day", DAY],
    ["hour", HOUR],
    ["minute", MINUTE],
    ["second", SECOND]
  ]
  const parts: Array<string> = []
  let rest = ms
  for (const [name, size] of units) {
    const n = Math.floor(rest / size)
    if (n > 0) {
      parts.push(plural(n, name))
      rest -= n * size
    }
  }
  if (parts.length === 0) return `every ${ms} ms`
  if (parts.length === 1 && parts[0]!.startsWith("1 ")) return `every ${parts[0]!.slice(2)}`
  return `every ${parts.join(" ")}`
}

/** Numbers of a simple list field ("1", "1,15", "1-5", names); undefined otherwise. */
const simpleValues = (field: string, names: ReadonlyArray<string>, offset: number): Array<number> | undefined => {
  const out: Array<number> = []
  const value = (s: string): number | undefined => {
    if (/^\d+$/.test(s)) return Number(s)
    const i = names.indexOf(s.toLowerCase())
    return i < 0 ? undefined : i + offset
  }
  for (const part of field.split(",")) {
    const range = part.split("-")
    if (range.length === 1) {
      const v = value(part)
      if (v === undefined) return undefined
      out.push(v)
    } else if (range.length === 2) {
      const a = value(range[0]!), b = value(range[1]!)
      if (a === undefined || b === undefined || b < a || b - a > 60) return undefined
      for (let v = a; v <= b; v++) out.push(v)
    } else {
      return undefined
    }
  }
  return out
}

const pad2 = (n: number): string => String(n).padStart(2, "0")

const describeDays = (dow: ReadonlyArray<number>): string => {
  const days = [...new Set(dow.map((d) => d % 7))].sort((a, b) => a - b)
  if (days.length === 7) return "every day"
  if (days.join(",") === "1,2,3,4,5") return "on Monday to Friday"
  if (days.join(",") === "0,6") return "on Saturday and Sunday"
  if (days.length === 1) return `every ${DAY_NAMES[days[0]!]}`
  return `on ${joinWords(days.map((d) => DAY_NAMES[d]!))}`
}

const describeCronFields = (fields: ReadonlyArray<string>, tz: string): string | undefined => {
  const [mi, h, dom, mon, dow] = fields as [string, string, string, string, string]
  const daysAll = dom === "*" && mon === "*" && dow === "*"
  const zone = ` (${tz})`

  // Sub-daily patterns that do not depend on the date.
  if (daysAll) {
    if (mi === "*" && h === "*") return "every minute"
    const everyMin = /^\*\/(\d+)$/.exec(mi)
    if (everyMin && h === "*") return `every ${plural(Number(everyMin[1]), "minute")}`
    if (/^\d+$/.test(mi) && h === "*") return Number(mi) === 0 ? "every hour" : `every hour at minute ${Number(mi)}`
    const everyHour = /^\*\/(\d+)$/.exec(h)
    if (/^\d+$/.test(mi) && everyHour) {
      return `every ${plural(Number(everyHour[1]), "hour")}${Number(mi) === 0 ? "" : ` at minute ${Number(mi)}`}${zone}`
    }
  }

  // A few fixed times of day.
  const minutes = simpleValues(mi, [], 0)
  const hours = simpleValues(h, [], 0)
  if (minutes === undefined || hours === undefined) return undefined
  if (minutes.length * hours.length > 6 || minutes.some((m) => m > 59) || hours.some((x) => x > 23)) return undefined
  const times: Array<string> = []
  for (const hh of [...hours].sort((a, b) => a - b)) {
    for (const mm of [...minutes].sort((a, b) => a - b)) times.push(`${pad2(hh)}:${pad2(mm)}`)
  }
  const at = `at ${joinWords(times)}`

  if (daysAll) return `${at} every day${zone}`
  if (dom === "*" && mon === "*") {
    const days = simpleValues(dow, DAY_ABBR, 0)
    if (days === undefined || days.some((d) => d > 7)) return undefined
    return `${at} ${describeDays(days)}${zone}`
  }
  if (dow === "*" && mon === "*") {
    if (dom.toUpperCase() === "L") return `${at} on the last day of every month${zone}`
    const days = simpleValues(dom, [], 0)
    if (days === undefined || days.length > 4 || days.some((d) => d < 1 || d > 31)) return undefined
    return `${at} on ${days.length === 1 ? "day" : "days"} ${joinWords(days.map(String))} of every month${zone}`
  }
  if (dow === "*") {
    const days = simpleValues(dom, [], 0)
    const months = simpleValues(mon, MONTH_ABBR, 1)
    if (
      days === undefined || months === undefined || days.length !== 1 || months.length !== 1 ||
      days[0]! < 1 || days[0]! > 31 || months[0]! < 1 || months[0]! > 12
    ) return undefined
    return `${at} on ${days[0]} ${MONTH_NAMES[months[0]! - 1]} every year${zone}`
  }
  return undefined
}

/**
 * A short English description, e.g. "every 5 minutes" or
 * "at 02:30 every day (Europe/London)". Common patterns only; anything else
 * falls back to the expression itself. Never throws.
 */
export const describeSchedule = (schedule: Schedule): string => {
  try {
    if (schedule.type === "interval") {
      const ms = intervalOf(schedule)
      return ms === undefined ? `every ${schedule.expression}` : describeInterval(ms)
    }
    const parsed = parseCronText(schedule.expression)
    if (Either.isRight(parsed)) {
      const d = describeCronFields(parsed.right.fields, schedule.timezone)
      if (d !== undefined) return d
    }
    return `cron "${schedule.expression}" (${schedule.timezone})`
  } catch {
    return String((schedule as { expression?: unknown } | null)?.expression ?? "")
  }
}
