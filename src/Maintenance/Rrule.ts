/**
 * Recurring maintenance windows: RRULE validation and normalisation, and the
 * periods (start, end) a recurrence produces.
 *
 * This module is pure: no Effect services, no I/O, and it never reads the
 * clock. Every instant is passed in as epoch milliseconds. See
 * docs/maintenance-recurrence.md for the rules users see.
 *
 * How periods are computed (docs/decisions.md#time, RFC 5545 §3.3.5):
 *
 * 1. rrule-temporal expands the rule on a *floating* wall clock: DTSTART is
 *    the local wall time of `dtstart` written as if it were UTC (TZID=UTC), so
 *    the library never sees a time zone and never meets a DST gap or overlap.
 *    Each occurrence it yields is a naive local time ("naive ms": the wall
 *    clock encoded as epoch ms of UTC).
 * 2. This module maps each naive time to an instant in the window's IANA zone
 *    (with src/Domain/TimeZone.ts, its "shift" rule for skipped times) exactly
 *    as Temporal's `disambiguation: "compatible"` does:
 *    - a local time that exists once: that instant;
 *    - a local time inside a spring-forward gap: shifted forward by the length
 *      of the gap (NY 2026-03-08 02:30 -> 03:30 EDT = 07:30Z); it still counts
 *      toward COUNT;
 *    - a local time repeated by a fall-back overlap: its first (earlier) pass.
 *    The zone's transitions are cached by TimeZone, so a mapping is a few
 *    array reads.
 * 3. UNTIL (always UTC) is compared with the mapped instant; starts before
 *    `dtstart` are dropped (they do not count toward COUNT); equal starts (a
 *    gap-shifted time landing on a real one) are one period.
 * 4. A period is [start, start + durationMs): elapsed time, so a period that
 *    spans a DST change lasts exactly `duration`.
 *
 * What rrule-temporal 2.2.7 does on its own with TZID set to a real zone, and
 * why it is only used on the floating clock (pinned by tests):
 *    - generated local times inside a DST gap are *omitted* (NY, daily 02:30:
 *      no period on 2026-03-08) instead of shifted forward;
 *    - a DTSTART inside a gap *drifts*: DTSTART 2026-03-08T02:30 in NY yields
 *      03:30 on every following day;
 *    - BYMONTHDAY=32 (and 0) is accepted even with `strict: true`, so every
 *      range is validated here;
 *    - COUNT-bound queries past the last occurrence are very slow
 *      (docs/performance.md#figures-behind-code-comments), so COUNT rules are
 *      expanded once and then searched here;
 *    - impossible rules (BYMONTH=2;BYMONTHDAY=30) throw "Maximum iterations"
 *      only after a long search, so the obvious ones are rejected before it is asked.
 *
 * Normalisation (the stored `rrule`): keys upper-case in a fixed order, lists
 * sorted without duplicates, INTERVAL=1 and WKST=MO dropped, and every value
 * RFC 5545 would take from DTSTART made explicit (BYMINUTE; BYHOUR unless
 * HOURLY; BYDAY for WEEKLY; BYMONTHDAY for MONTHLY/YEARLY without BYDAY;
 * BYMONTH for YEARLY without BYDAY/BYMONTHDAY). The stored rule then keeps its
 * time of day whatever happens to DTSTART, and `dtstart` is a real instant, so
 * DTSTART is never inside a gap (the drift above cannot happen). `dtstart` is
 * `start` without its milliseconds (rounded down to the second, never later
 * than asked), and DTSTART keeps its seconds: BYSECOND is refused, so RFC 5545
 * takes the second from DTSTART and every period starts at the same second
 * past the minute as `dtstart` (rrule-temporal 2.2.7 does this, also with
 * BYMINUTE/BYHOUR; pinned by tests). The seconds are not written into the
 * stored rule (BYSECOND would be refused when the rule comes back in a PATCH);
 * they live in `dtstart`. The floating rule's DTSTART always carries them, also
 * when it is anchored earlier than `dtstart` (see build).
 *
 * Cost: parsing is O(length of the rule) plus one search for the first period.
 * Zone data is computed once per zone and span of time (TimeZone). A
 * compiled recurrence is cached (WeakMap per object, plus a 500-entry LRU keyed
 * by rrule, zone and dtstart, so a Recurrence rebuilt from a database row hits
 * too). Rules without COUNT are never replayed from DTSTART: rrule-temporal is
 * asked for fixed naive-time chunks (about 64 occurrences each, cached, 64 per
 * rule) around the instant in question, and jumps over empty stretches with
 * next()/previous(). activePeriod costs, cold, one or two chunks, and warm
 * O(1): the answer is memoised together with the interval [latest start,
 * next start) on which it stays the same. COUNT rules (COUNT <= 10,000) are
 * expanded once per process into a sorted array and then every query is a
 * binary search (costs: docs/performance.md#figures-behind-code-comments).
 */
import { Either } from "effect"
import { RRuleTemporal, type TemporalZonedDateTime } from "rrule-temporal"
import { excerpt } from "../Domain/Text.js"
import { chooseInstant, TimeZone, type WallFields, wallFields } from "../Domain/TimeZone.js"

// ---------------------------------------------------------------------------
// Public types
// ---------------------------------------------------------------------------

/** A validation failure, naming the input field to fix. */
export type RecurrenceError = {
  readonly field: "rrule" | "timezone" | "start" | "duration"
  readonly message: string
}

export interface Recurrence {
  /** The normalised rule, without "RRULE:" and without DTSTART. */
  readonly rrule: string
  /** IANA zone name in which the rule's local times are read. */
  readonly timezone: string
  /** Epoch ms anchor (DTSTART): the requested start rounded down to a whole second. Periods start at its second. */
  readonly dtstart: number
  /** Elapsed length of every period, in ms. */
  readonly durationMs: number
}

export type RecurrenceInput = {
  readonly rrule: string
  readonly timezone: string
  /** Epoch ms; its local wall time in `timezone` is DTSTART. */
  readonly start: number
  /** Length of each period in seconds (elapsed time). */
  readonly durationSeconds: number
}

/** A period [start, end) in epoch ms. */
export type Period = { readonly start: number; readonly end: number }

// ---------------------------------------------------------------------------
// Limits and constants
// ---------------------------------------------------------------------------

export const MAX_RRULE_LENGTH = 1_000
export const MAX_COUNT = 10_000
export const MAX_INTERVAL = 1_000
/** Longest period: 366 days. */
export const MAX_DURATION_SECONDS = 366 * 86_400
/** Earliest and latest accepted start (DTSTART). */
export const MIN_START = Date.UTC(1970, 0, 1)
export const MAX_START = Date.UTC(2200, 0, 1)
/** periodsBetween returns at most this many periods (the earliest ones). */
export const MAX_PERIODS = 10_000
/** nextPeriods returns at most this many periods. */
export const MAX_NEXT_PERIODS = 1_000

const MINUTE = 60_000
const HOUR = 3_600_000
const DAY = 86_400_000
/** Instants further out than this are refused by the queries (Date's range, with room). */
const MAX_ABS_INSTANT = 8.6e15

const EXAMPLE = `e.g. "FREQ=WEEKLY;BYDAY=SU;BYHOUR=2;BYMINUTE=0" (Sundays at 02:00)`
const SUPPORTED = "FREQ, INTERVAL, COUNT, UNTIL, BYMONTH, BYMONTHDAY, BYDAY, BYHOUR, BYMINUTE"

// ---------------------------------------------------------------------------
// The rule
// ---------------------------------------------------------------------------

const FREQS = ["HOURLY", "DAILY", "WEEKLY", "MONTHLY", "YEARLY"] as const
type Freq = (typeof FREQS)[number]

/** RFC 5545 weekday codes, Monday first (index 0 = MO, 6 = SU). */
const WEEKDAYS = ["MO", "TU", "WE", "TH", "FR", "SA", "SU"] as const

type ByDay = { readonly ordinal: number; readonly weekday: number } // ordinal 0 = every such weekday

type Rule = {
  readonly freq: Freq
  readonly interval: number
  readonly count: number | undefined
  readonly until: number | undefined
  readonly byMonth: ReadonlyArray<number> | undefined
  readonly byMonthDay: ReadonlyArray<number> | undefined
  readonly byDay: ReadonlyArray<ByDay> | undefined
  readonly byHour: ReadonlyArray<number> | undefined
  readonly byMinute: ReadonlyArray<number> | undefined
}

const UNSUPPORTED: Readonly<Record<string, string>> = {
  BYSECOND:
    "BYSECOND is not supported: every window starts at the same second past the minute as the window's start. Remove BYSECOND, and give the start with the second you want.",
  BYSETPOS:
    "BYSETPOS is not supported. For the Nth weekday of a month put the number in BYDAY (BYDAY=1SU is the first Sunday, BYDAY=-1FR the last Friday); for the last day use BYMONTHDAY=-1. Remove BYSETPOS.",
  BYWEEKNO:
    "BYWEEKNO is not supported. Use FREQ=WEEKLY with INTERVAL, or BYMONTH with BYMONTHDAY/BYDAY. Remove BYWEEKNO.",
  BYYEARDAY: "BYYEARDAY is not supported. Use BYMONTH with BYMONTHDAY (e.g. BYMONTH=1;BYMONTHDAY=1). Remove BYYEARDAY.",
  RSCALE: "RSCALE is not supported: rules use the Gregorian calendar. Remove RSCALE.",
  SKIP: "SKIP is not supported: dates that do not exist (such as 31 April) are skipped. Remove SKIP.",
  DTSTART: "DTSTART is not part of the rrule: the window's start field anchors the recurrence. Remove DTSTART.",
  TZID: "TZID is not part of the rrule: use the window's timezone field. Remove TZID.",
  EXDATE: "EXDATE is not supported. Remove it.",
  RDATE: "RDATE is not supported; use a one-time window (start and end) for an extra date. Remove it."
}

const fail = (message: string): Either.Either<never, string> => Either.left(message)

const parseIntToken = (token: string, signed: boolean): number | undefined => {
  const re = signed ? /^[+-]?\d{1,6}$/ : /^\d{1,6}$/
  return re.test(token) ? Number(token) : undefined
}

/** A comma-separated list of integers in [min, max] (0 excluded when noZero). Sorted, without duplicates. */
const parseIntList = (
  key: string,
  value: string,
  what: string,
  min: number,
  max: number,
  options: { readonly signed?: boolean; readonly noZero?: boolean; readonly rangeText: string }
): Either.Either<ReadonlyArray<number>, string> => {
  if (value === "") return fail(`${key} is empty. Give ${what} ${options.rangeText}, separated by commas.`)
  const out = new Set<number>()
  for (const raw of value.split(",")) {
    const token = raw.trim()
    const n = parseIntToken(token, options.signed === true)
    if (n === undefined) {
      return fail(`${key}=${excerpt(value)}: "${excerpt(token)}" is not a whole number. Give ${what} ${options.rangeText}, separated by commas.`)
    }
    if (n < min || n > max || (options.noZero === true && n === 0)) {
      return fail(`${key}=${excerpt(token)} is out of range: ${what} are ${options.rangeText}.`)
    }
    out.add(n)
  }
  return Either.right([...out].sort((a, b) => a - b))
}

const parsePositive = (key: string, value: string, max: number, hint: string): Either.Either<number, string> => {
  const n = parseIntToken(value, false)
  if (n === undefined || n < 1) return fail(`${key}=${excerpt(value)} is not valid: give a whole number from 1 to ${max}${hint}.`)
  if (n > max) return fail(`${key}=${excerpt(value)} is too large: the maximum is ${max}${hint}.`)
  return Either.right(n)
}

const parseUntil = (value: string): Either.Either<number, string> => {
  const example = `give a UTC date-time in the form YYYYMMDDTHHMMSSZ, e.g. UNTIL=20261231T235959Z`
  if (/^\d{8}$/.test(value)) return fail(`UNTIL=${excerpt(value)} is a date without a time: ${example}.`)
  if (/^\d{8}T\d{6}$/i.test(value)) {
    return fail(`UNTIL=${excerpt(value)} has no "Z": UNTIL is always in UTC; ${example}.`)
  }
  const m = /^(\d{4})(\d{2})(\d{2})T(\d{2})(\d{2})(\d{2})Z$/i.exec(value)
  if (m === null) return fail(`UNTIL=${excerpt(value)} is not valid: ${example}.`)
  const [y, mo, d, h, mi, s] = m.slice(1).map(Number) as [number, number, number, number, number, number]
  const t = new Date(0)
  t.setUTCFullYear(y, mo - 1, d)
  t.setUTCHours(h, mi, s, 0)
  if (
    mo < 1 || mo > 12 || d < 1 || h > 23 || mi > 59 || s > 59 ||
    t.getUTCFullYear() !== y || t.getUTCMonth() !== mo - 1 || t.getUTCDate() !== d
  ) {
    return fail(`UNTIL=${excerpt(value)} is not a real date and time: ${example}.`)
  }
  return Either.right(t.getTime())
}

const parseByDay = (value: string): Either.Either<ReadonlyArray<ByDay>, string> => {
  const rangeText = `weekday codes MO, TU, WE, TH, FR, SA, SU, optionally with a number in front (1SU is the first Sunday, -1FR the last Friday)`
  if (value === "") return fail(`BYDAY is empty. Give ${rangeText}, separated by commas.`)
  const seen = new Map<string, ByDay>()
  for (const raw of value.split(",")) {
    const token = raw.trim().toUpperCase()
    const m = /^([+-]?\d{1,2})?(MO|TU|WE|TH|FR|SA|SU)$/.exec(token)
    if (m === null) return fail(`BYDAY=${excerpt(value)}: "${excerpt(raw.trim())}" is not a weekday. Give ${rangeText}.`)
    const ordinal = m[1] === undefined ? 0 : Number(m[1])
    if (m[1] !== undefined && (ordinal === 0 || Math.abs(ordinal) > 53)) {
      return fail(`BYDAY=${excerpt(raw.trim())}: the number in front of a weekday must be 1 to 53 or -1 to -53 (not 0).`)
    }
    const weekday = WEEKDAYS.indexOf(m[2] as (typeof WEEKDAYS)[number])
    seen.set(`${ordinal}${m[2]}`, { ordinal, weekday })
  }
  return Either.right(
    [...seen.values()].sort((a, b) => a.weekday - b.weekday || a.ordinal - b.ordinal)
  )
}

const DAYS_IN_MONTH_MAX = [31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31]

/** Parses RRULE text into a Rule, or explains what to fix. Range and combination checks included. */
const parseRuleText = (input: unknown): Either.Either<Rule, string> => {
  if (typeof input !== "string") return fail(`The rrule must be a string, ${EXAMPLE}.`)
  let text = input.trim()
  if (text.length === 0) return fail(`The rrule is empty. Give a recurrence rule, ${EXAMPLE}.`)
  if (text.length > MAX_RRULE_LENGTH) return fail(`The rrule is longer than ${MAX_RRULE_LENGTH} characters.`)
  if (/[\r\n]/.test(text) || /^DTSTART/i.test(text)) {
    return fail(
      `Give only the rule itself on one line, ${EXAMPLE}: no DTSTART line (the window's start field anchors the recurrence) and no other iCalendar lines.`
    )
  }
  if (/^RRULE:/i.test(text)) text = text.slice("RRULE:".length).trim()
  const parts = text.split(";")
  if (parts.length > 0 && parts[parts.length - 1]!.trim() === "") parts.pop()
  if (parts.length === 0) return fail(`The rrule is empty. Give a recurrence rule, ${EXAMPLE}.`)

  const values = new Map<string, string>()
  for (const rawPart of parts) {
    const part = rawPart.trim()
    const eq = part.indexOf("=")
    if (part === "") return fail(`The rrule has an empty component (";;"). Separate NAME=VALUE components with single semicolons, ${EXAMPLE}.`)
    if (eq <= 0) return fail(`"${excerpt(part)}" is not a NAME=VALUE component. Write components such as FREQ=DAILY separated by ";", ${EXAMPLE}.`)
    const key = part.slice(0, eq).trim().toUpperCase()
    const value = part.slice(eq + 1).trim()
    if (values.has(key)) return fail(`${excerpt(key)} appears more than once. Give each component once.`)
    const unsupported = UNSUPPORTED[key]
    if (unsupported !== undefined) return fail(unsupported)
    if (key === "WKST") {
      if (value.toUpperCase() !== "MO") {
        return fail(`WKST=${excerpt(value)} is not supported: weeks start on Monday. Remove WKST (WKST=MO is accepted and ignored).`)
      }
      continue
    }
    if (!/^(FREQ|INTERVAL|COUNT|UNTIL|BYMONTH|BYMONTHDAY|BYDAY|BYHOUR|BYMINUTE)$/.test(key)) {
      return fail(`Unknown rrule component "${excerpt(part.slice(0, eq).trim())}". Supported components: ${SUPPORTED}.`)
    }
    values.set(key, value)
  }

  const freqText = values.get("FREQ")
  if (freqText === undefined) return fail(`FREQ is required, ${EXAMPLE}. FREQ is one of ${FREQS.join(", ")}.`)
  const freqUpper = freqText.toUpperCase()
  if (freqUpper === "MINUTELY" || freqUpper === "SECONDLY") {
    return fail(
      `FREQ=${freqUpper} is not supported: the most frequent is HOURLY. For several windows an hour use FREQ=HOURLY with BYMINUTE, e.g. FREQ=HOURLY;BYMINUTE=0,30.`
    )
  }
  if (!(FREQS as ReadonlyArray<string>).includes(freqUpper)) {
    return fail(`FREQ=${excerpt(freqText)} is not valid: use one of ${FREQS.join(", ")}.`)
  }
  const freq = freqUpper as Freq

  const get = <A>(key: string, parse: (v: string) => Either.Either<A, string>): Either.Either<A | undefined, string> => {
    const v = values.get(key)
    return v === undefined ? Either.right(undefined) : parse(v)
  }
  const interval = get("INTERVAL", (v) => parsePositive("INTERVAL", v, MAX_INTERVAL, ""))
  if (Either.isLeft(interval)) return Either.left(interval.left)
  const count = get("COUNT", (v) => parsePositive("COUNT", v, MAX_COUNT, " windows; for more, leave COUNT out or use UNTIL"))
  if (Either.isLeft(count)) return Either.left(count.left)
  const until = get("UNTIL", parseUntil)
  if (Either.isLeft(until)) return Either.left(until.left)
  if (count.right !== undefined && until.right !== undefined) {
    return fail(`COUNT and UNTIL cannot both be given (RFC 5545). Keep one of them.`)
  }
  const byMonth = get("BYMONTH", (v) => parseIntList("BYMONTH", v, "months", 1, 12, { rangeText: "1 to 12" }))
  if (Either.isLeft(byMonth)) return Either.left(byMonth.left)
  const byMonthDay = get("BYMONTHDAY", (v) =>
    parseIntList("BYMONTHDAY", v, "days of the month", -31, 31, {
      signed: true,
      noZero: true,
      rangeText: "1 to 31, or -1 to -31 counting from the end of the month (-1 is the last day)"
    }))
  if (Either.isLeft(byMonthDay)) return Either.left(byMonthDay.left)
  const byDay = get("BYDAY", parseByDay)
  if (Either.isLeft(byDay)) return Either.left(byDay.left)
  const byHour = get("BYHOUR", (v) => parseIntList("BYHOUR", v, "hours", 0, 23, { rangeText: "0 to 23" }))
  if (Either.isLeft(byHour)) return Either.left(byHour.left)
  const byMinute = get("BYMINUTE", (v) => parseIntList("BYMINUTE", v, "minutes", 0, 59, { rangeText: "0 to 59" }))
  if (Either.isLeft(byMinute)) return Either.left(byMinute.left)

  // Combinations (RFC 5545 §3.3.10 and what can ever match).
  const withOrdinal = byDay.right?.find((d) => d.ordinal !== 0)
  if (withOrdinal !== undefined) {
    const token = `${withOrdinal.ordinal}${WEEKDAYS[withOrdinal.weekday]}`
    if (freq !== "MONTHLY" && freq !== "YEARLY") {
      return fail(
        `BYDAY=${excerpt(token)} (a weekday with a number) needs FREQ=MONTHLY or FREQ=YEARLY. With FREQ=${freq} use plain weekdays such as BYDAY=${
          WEEKDAYS[withOrdinal.weekday]
        }.`
      )
    }
    const inMonth = freq === "MONTHLY" || byMonth.right !== undefined
    if (inMonth && Math.abs(withOrdinal.ordinal) > 5) {
      return fail(
        `BYDAY=${excerpt(token)} never matches: a month has at most 5 of each weekday. Use 1 to 5 or -1 to -5 (-1 is the last one).`
      )
    }
  }
  if (freq === "WEEKLY" && byMonthDay.right !== undefined) {
    return fail(`BYMONTHDAY cannot be used with FREQ=WEEKLY (RFC 5545). Use FREQ=MONTHLY or FREQ=DAILY with BYMONTHDAY.`)
  }
  if (byMonthDay.right !== undefined) {
    const months = byMonth.right ?? [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12]
    const possible = months.some((m) => byMonthDay.right!.some((d) => Math.abs(d) <= DAYS_IN_MONTH_MAX[m - 1]!))
    if (!possible) {
      return fail(
        `BYMONTHDAY=${byMonthDay.right.join(",")} never falls in BYMONTH=${months.join(",")}: those months are shorter. Change BYMONTHDAY or BYMONTH.`
      )
    }
  }

  return Either.right({
    freq,
    interval: interval.right ?? 1,
    count: count.right,
    until: until.right,
    byMonth: byMonth.right,
    byMonthDay: byMonthDay.right,
    byDay: byDay.right,
    byHour: byHour.right,
    byMinute: byMinute.right
  })
}

/** Makes explicit every value RFC 5545 takes from DTSTART (python-dateutil's rules). Idempotent. */
const normaliseRule = (rule: Rule, dt: WallFields): Rule => {
  const noDays = rule.byDay === undefined && rule.byMonthDay === undefined
  return {
    ...rule,
    byMinute: rule.byMinute ?? [dt.minute],
    byHour: rule.byHour ?? (rule.freq === "HOURLY" ? undefined : [dt.hour]),
    byDay: rule.byDay ?? (rule.freq === "WEEKLY" ? [{ ordinal: 0, weekday: dt.weekday - 1 }] : undefined),
    byMonthDay: rule.byMonthDay ?? ((rule.freq === "MONTHLY" || rule.freq === "YEARLY") && noDays ? [dt.day] : undefined),
    byMonth: rule.byMonth ?? (rule.freq === "YEARLY" && noDays ? [dt.month] : undefined)
  }
}

const pad = (n: number, width = 2): string => String(n).padStart(width, "0")

const formatUntil = (t: number): string => {
  const d = new Date(t)
  return `${pad(d.getUTCFullYear(), 4)}${pad(d.getUTCMonth() + 1)}${pad(d.getUTCDate())}T${pad(d.getUTCHours())}${
    pad(d.getUTCMinutes())
  }${pad(d.getUTCSeconds())}Z`
}

const byDayText = (days: ReadonlyArray<ByDay>): string =>
  days.map((d) => `${d.ordinal === 0 ? "" : d.ordinal}${WEEKDAYS[d.weekday]}`).join(",")

/** The stored form. `withBounds: false` leaves out COUNT and UNTIL (the floating rule given to rrule-temporal). */
const formatRule = (rule: Rule, withBounds: boolean): string => {
  const parts = [`FREQ=${rule.freq}`]
  if (rule.interval !== 1) parts.push(`INTERVAL=${rule.interval}`)
  if (withBounds && rule.count !== undefined) parts.push(`COUNT=${rule.count}`)
  if (withBounds && rule.until !== undefined) parts.push(`UNTIL=${formatUntil(rule.until)}`)
  if (rule.byMonth !== undefined) parts.push(`BYMONTH=${rule.byMonth.join(",")}`)
  if (rule.byMonthDay !== undefined) parts.push(`BYMONTHDAY=${rule.byMonthDay.join(",")}`)
  if (rule.byDay !== undefined) parts.push(`BYDAY=${byDayText(rule.byDay)}`)
  if (rule.byHour !== undefined) parts.push(`BYHOUR=${rule.byHour.join(",")}`)
  if (rule.byMinute !== undefined) parts.push(`BYMINUTE=${rule.byMinute.join(",")}`)
  return parts.join(";")
}

// ---------------------------------------------------------------------------
// Naive local times to instants
// ---------------------------------------------------------------------------

/**
 * A naive local time mapped to an instant with Temporal's "compatible"
 * disambiguation, with what is needed to order the instants of neighbouring
 * naive times (the mapping is increasing except around gaps):
 * - `gapAt`: the local time does not exist; it was shifted forward by the gap
 *   length, and this is the instant of the transition. Every later naive time
 *   maps at or after it, every earlier one before the shifted instant.
 * - `shadowOf`: the local time lies within one gap length after a gap; this is
 *   the naive start of that gap. An earlier time inside the gap may map later
 *   than this one (NY: 02:30 -> 07:30Z, but 03:00 EDT = 07:00Z).
 * Otherwise every later naive time maps at or after `instant`, and every
 * earlier one at or before it.
 */
type Mapped = { readonly instant: number; readonly gapAt: number | undefined; readonly shadowOf: number | undefined }

const mapLocal = (zone: TimeZone, naive: number): Mapped => {
  const r = zone.resolve(naive)
  return { instant: chooseInstant(r, "shift"), gapAt: r.gap?.at, shadowOf: r.followsGap?.start }
}

// ---------------------------------------------------------------------------
// The floating rule: naive occurrences from rrule-temporal, in cached chunks
// ---------------------------------------------------------------------------

type Chunk = { readonly naive: ReadonlyArray<number>; nextAfter?: number | null; prevBefore?: number | null }

const MAX_CHUNKS = 64

class FloatingRule {
  private readonly chunks = new Map<number, Chunk>()
  constructor(private readonly lib: RRuleTemporal, readonly chunkMs: number, readonly firstNaive: number) {}

  static make(rule: Rule, dtstartNaive: number): FloatingRule | undefined {
    const d = wallFields(dtstartNaive)
    // The seconds are DTSTART's: with BYSECOND absent, every occurrence keeps them (RFC 5545).
    const dtstart = `${pad(d.year, 4)}${pad(d.month)}${pad(d.day)}T${pad(d.hour)}${pad(d.minute)}${pad(d.second)}`
    try {
      const lib = new RRuleTemporal({
        rruleString: `DTSTART;TZID=UTC:${dtstart}\nRRULE:${formatRule(rule, false)}`,
        cache: false
      })
      return new FloatingRule(lib, chunkSize(rule), dtstartNaive)
    } catch {
      return undefined
    }
  }

  private chunk(k: number): Chunk {
    const cached = this.chunks.get(k)
    if (cached !== undefined) {
      this.chunks.delete(k)
      this.chunks.set(k, cached)
      return cached
    }
    let naive: Array<number> = []
    if ((k + 1) * this.chunkMs > this.firstNaive) {
      try {
        naive = this.lib.between(new Date(k * this.chunkMs), new Date((k + 1) * this.chunkMs - 1), true).map((z) =>
          z.epochMilliseconds
        )
        naive.sort((a, b) => a - b)
      } catch {
        naive = []
      }
    }
    const chunk: Chunk = { naive }
    this.chunks.set(k, chunk)
    if (this.chunks.size > MAX_CHUNKS) this.chunks.delete(this.chunks.keys().next().value!)
    return chunk
  }

  private query(f: () => TemporalZonedDateTime | null): number | null {
    try {
      return f()?.epochMilliseconds ?? null
    } catch {
      return null
    }
  }

  /** Naive occurrences >= from, ascending (endless for a rule without end). */
  *ascending(from: number): Generator<number> {
    const C = this.chunkMs
    let k = Math.floor(from / C)
    for (;;) {
      const chunk = this.chunk(k)
      if (chunk.naive.length === 0) {
        if (chunk.nextAfter === undefined) chunk.nextAfter = this.query(() => this.lib.next(new Date((k + 1) * C - 1), false))
        if (chunk.nextAfter === null) return
        k = Math.max(k + 1, Math.floor(chunk.nextAfter / C))
        continue
      }
      for (const n of chunk.naive) if (n >= from) yield n
      k++
    }
  }

  /** Naive occurrences <= from, descending. */
  *descending(from: number): Generator<number> {
    const C = this.chunkMs
    let k = Math.floor(from / C)
    for (;;) {
      if ((k + 1) * C <= this.firstNaive) return
      const chunk = this.chunk(k)
      if (chunk.naive.length === 0) {
        if (chunk.prevBefore === undefined) chunk.prevBefore = this.query(() => this.lib.previous(new Date(k * C), false))
        if (chunk.prevBefore === null) return
        k = Math.min(k - 1, Math.floor(chunk.prevBefore / C))
        continue
      }
      for (let i = chunk.naive.length - 1; i >= 0; i--) if (chunk.naive[i]! <= from) yield chunk.naive[i]!
      k--
    }
  }
}

/** Naive-time chunk length holding about 64 occurrences: 1 hour to 512 days, whole hours. */
const chunkSize = (rule: Rule): number => {
  const times = (rule.byHour?.length ?? 24) * (rule.byMinute?.length ?? 1)
  const days = rule.byDay === undefined ? undefined : rule.byDay.length
  let perDay: number
  switch (rule.freq) {
    case "HOURLY":
      perDay = (rule.byHour === undefined ? 24 / rule.interval : rule.byHour.length / rule.interval) * (rule.byMinute?.length ?? 1)
      if (days !== undefined) perDay *= days / 7
      break
    case "DAILY":
      perDay = (times / rule.interval) * (days === undefined ? 1 : days / 7)
      break
    case "WEEKLY":
      perDay = (times * (days ?? 1)) / 7 / rule.interval
      break
    case "MONTHLY":
      perDay = (times * ((rule.byMonthDay?.length ?? 0) + (days ?? 0) * 2 || 1)) / 30 / rule.interval
      break
    case "YEARLY":
      perDay = (times * ((rule.byMonthDay?.length ?? 0) + (days ?? 0) * 2 || 1) * (rule.byMonth?.length ?? 1)) / 365 /
        rule.interval
      break
  }
  const ms = (64 / Math.max(perDay, 1e-6)) * DAY
  return Math.max(HOUR, Math.min(512 * DAY, Math.round(ms / HOUR) * HOUR))
}

// ---------------------------------------------------------------------------
// Compiled recurrences: the starts, searched both ways
// ---------------------------------------------------------------------------

/** The interval [lo, hi) of instants on which the latest start <= t is `start`. */
type Span = { readonly lo: number; readonly hi: number; readonly start: number | undefined }

interface Starts {
  /** The latest start <= t. */
  latest(t: number): number | undefined
  /** Distinct starts >= t (> t when strict), ascending. */
  ascending(t: number, strict: boolean): Iterable<number>
}

type Compiled = {
  readonly rule: Rule
  readonly zone: TimeZone
  readonly dtstart: number
  readonly starts: Starts
  /** The same starts without COUNT: finds the first one without expanding a COUNT rule. */
  readonly open: Starts
  readonly spans: Array<Span>
}

const MAX_SCAN = 50_000

/** Starts of a rule without COUNT, computed around each query from the floating rule. */
class OpenStarts implements Starts {
  constructor(
    private readonly floating: FloatingRule,
    private readonly zone: TimeZone,
    private readonly dtstart: number,
    private readonly until: number | undefined
  ) {}

  latest(t: number): number | undefined {
    if (t < this.dtstart) return undefined
    const limit = this.until === undefined ? t : Math.min(t, this.until)
    if (limit < this.dtstart) return undefined
    // A naive time above limit + (largest offset near limit) maps after limit.
    const [, maxOffset] = this.zone.offsetRange(limit - 2 * DAY, limit)
    let best: number | undefined
    let scanDownTo = Number.NEGATIVE_INFINITY
    let steps = 0
    for (const naive of this.floating.descending(limit + maxOffset)) {
      if (naive < scanDownTo) break
      const m = mapLocal(this.zone, naive)
      if (m.instant <= limit && m.instant >= this.dtstart && (best === undefined || m.instant > best)) best = m.instant
      if (m.instant <= limit) {
        // Every earlier naive time maps at or before this one's instant...
        if (m.shadowOf === undefined) break
        // ...except the times inside the gap just before it: look at those too.
        scanDownTo = Math.max(scanDownTo, m.shadowOf)
      }
      if (++steps > MAX_SCAN) break
    }
    return best
  }

  *ascending(t: number, strict: boolean): Generator<number> {
    const from = Math.max(t, this.dtstart)
    if (this.until !== undefined && from > this.until) return
    // A naive time below from + (smallest offset near from) maps before from.
    const [minOffset] = this.zone.offsetRange(from - 2 * DAY, from + 2 * DAY)
    const pending: Array<number> = []
    let last = Number.NEGATIVE_INFINITY
    let steps = 0
    for (const naive of this.floating.ascending(from + minOffset)) {
      const m = mapLocal(this.zone, naive)
      const s = m.instant
      if (s >= from && (!strict || s > t) && (this.until === undefined || s <= this.until) && !pending.includes(s)) {
        let i = pending.length
        while (i > 0 && pending[i - 1]! > s) i--
        pending.splice(i, 0, s)
      }
      // Every later naive time maps at or after `frontier`: what is pending up to it is final.
      const frontier = m.gapAt ?? s
      while (pending.length > 0 && pending[0]! <= frontier) {
        const next = pending.shift()!
        if (next > last) {
          last = next
          yield next
        }
      }
      if (this.until !== undefined && frontier > this.until) break
      if (++steps > MAX_SCAN) break
    }
    for (const s of pending) {
      if (s > last) {
        last = s
        yield s
      }
    }
  }
}

/** First index with a[i] > t (strict) or a[i] >= t. */
const searchSorted = (a: Float64Array, t: number, strict: boolean): number => {
  let lo = 0, hi = a.length
  while (lo < hi) {
    const mid = (lo + hi) >>> 1
    if (strict ? a[mid]! <= t : a[mid]! < t) lo = mid + 1
    else hi = mid
  }
  return lo
}

/** Starts of a COUNT rule: expanded once (at most MAX_COUNT), then binary search. */
class CountedStarts implements Starts {
  private all: Float64Array | undefined
  constructor(
    private readonly floating: FloatingRule,
    private readonly zone: TimeZone,
    private readonly dtstart: number,
    private readonly count: number
  ) {}

  private starts(): Float64Array {
    if (this.all === undefined) {
      const out: Array<number> = []
      for (const naive of this.floating.ascending(this.floating.firstNaive)) {
        const s = mapLocal(this.zone, naive).instant
        if (s < this.dtstart) continue // before the anchor: not a window, does not count
        out.push(s) // gap-shifted starts count toward COUNT like any other
        if (out.length >= this.count) break
      }
      out.sort((a, b) => a - b)
      this.all = Float64Array.from(out.filter((s, i) => i === 0 || s !== out[i - 1]))
    }
    return this.all
  }

  latest(t: number): number | undefined {
    const a = this.starts()
    const i = searchSorted(a, t, true)
    return i === 0 ? undefined : a[i - 1]
  }

  *ascending(t: number, strict: boolean): Generator<number> {
    const a = this.starts()
    for (let i = searchSorted(a, t, strict); i < a.length; i++) yield a[i]!
  }
}

const compileCache = new Map<string, Compiled | null>()
const compiledByObject = new WeakMap<Recurrence, Compiled | null>()
const MAX_COMPILED = 500

/** Rounded down to a whole second: a period never starts later than asked. */
const floorSecond = (t: number): number => Math.floor(t / 1000) * 1000
/** Milliseconds past the minute (also for naive times before 1970). */
const msPastMinute = (t: number): number => ((t % MINUTE) + MINUTE) % MINUTE

const build = (rruleText: string, timezone: string, start: number): Either.Either<Compiled, RecurrenceError> => {
  const parsed = parseRuleText(rruleText)
  if (Either.isLeft(parsed)) return Either.left({ field: "rrule", message: parsed.left })
  if (typeof timezone !== "string") {
    return Either.left({ field: "timezone", message: `The time zone must be a string holding an IANA name such as "Europe/London" or "UTC".` })
  }
  const zone = TimeZone.of(timezone.trim())
  if (zone === undefined) {
    return Either.left({
      field: "timezone",
      message: timezone.trim() === ""
        ? `The time zone is empty. Give an IANA name such as "Europe/London" or "UTC".`
        : `Unknown time zone "${excerpt(timezone.trim())}". Use an IANA name such as "America/New_York", "Europe/London" or "UTC".`
    })
  }
  if (typeof start !== "number" || !Number.isFinite(start) || start < MIN_START || start >= MAX_START) {
    return Either.left({ field: "start", message: `The start must be a date-time between 1970-01-01 and 2199-12-31 (UTC).` })
  }
  const dtstart = floorSecond(start)
  const dtstartNaive = zone.toWallTime(dtstart)
  const rule = normaliseRule(parsed.right, wallFields(dtstartNaive))
  if (rule.until !== undefined && rule.until < dtstart) {
    return Either.left({
      field: "rrule",
      message: `UNTIL=${formatUntil(rule.until)} is before the start (${new Date(dtstart).toISOString()}): the rule would produce no window. Move UNTIL later or the start earlier.`
    })
  }
  // When dtstart lies within one gap length after a spring-forward gap, a local
  // time inside that gap maps to an instant >= dtstart although it reads
  // earlier than dtstart's own local time. Starting the floating rule earlier
  // keeps such a window (02:30 -> 03:30 on the day of the change when the
  // window was created at 03:30); the anchor stays a whole number of INTERVALs
  // before DTSTART's hour/day/week/month/year so the INTERVAL phase does not
  // move, and what it adds before dtstart is dropped (and not counted).
  let firstNaive = dtstartNaive
  const gap = zone.resolve(dtstartNaive).followsGap
  if (gap !== undefined) {
    // The local time in the gap that is shifted onto dtstart.
    firstNaive = Math.min(firstNaive, phaseAlignedAnchor(rule, dtstartNaive, dtstartNaive - (gap.end - gap.start)))
  }
  // An earlier anchor is the start of an hour/day/…: give it DTSTART's seconds, which every
  // occurrence takes from the library's DTSTART. It stays within the same minute, before any
  // occurrence that minute could hold.
  firstNaive = firstNaive - msPastMinute(firstNaive) + msPastMinute(dtstartNaive)
  const floating = FloatingRule.make(rule, firstNaive)
  if (floating === undefined) {
    return Either.left({ field: "rrule", message: `The rule could not be read, ${EXAMPLE}.` })
  }
  const open = new OpenStarts(floating, zone, dtstart, rule.until)
  const starts: Starts = rule.count !== undefined ? new CountedStarts(floating, zone, dtstart, rule.count) : open
  return Either.right({ rule, zone, dtstart, starts, open, spans: [] })
}

/** Start of the hour/day/week (Monday)/month/year of a naive time, per FREQ. */
const periodStart = (freq: Freq, t: number): number => {
  const d = new Date(t)
  switch (freq) {
    case "HOURLY":
      return Math.floor(t / HOUR) * HOUR
    case "DAILY":
      return Math.floor(t / DAY) * DAY
    case "WEEKLY":
      return Math.floor(t / DAY) * DAY - ((d.getUTCDay() + 6) % 7) * DAY
    case "MONTHLY":
      return Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), 1)
    case "YEARLY":
      return Date.UTC(d.getUTCFullYear(), 0, 1)
  }
}

/**
 * A naive anchor at or before `candidate` for the floating rule: `candidate`
 * itself when it is in DTSTART's own period, else the start of the latest
 * period at or before it that is a whole number of INTERVALs before DTSTART's.
 */
const phaseAlignedAnchor = (rule: Rule, dtstartNaive: number, candidate: number): number => {
  const base = periodStart(rule.freq, dtstartNaive)
  const c = periodStart(rule.freq, candidate)
  if (c >= base) return Math.min(candidate, dtstartNaive)
  const k = rule.interval
  const b = new Date(base)
  switch (rule.freq) {
    case "HOURLY":
    case "DAILY":
    case "WEEKLY": {
      const unit = rule.freq === "HOURLY" ? HOUR : rule.freq === "DAILY" ? DAY : 7 * DAY
      return base - Math.ceil((base - c) / (k * unit)) * k * unit
    }
    case "MONTHLY": {
      const cd = new Date(c)
      const months = (b.getUTCFullYear() - cd.getUTCFullYear()) * 12 + b.getUTCMonth() - cd.getUTCMonth()
      return Date.UTC(b.getUTCFullYear(), b.getUTCMonth() - Math.ceil(months / k) * k, 1)
    }
    case "YEARLY": {
      const years = b.getUTCFullYear() - new Date(c).getUTCFullYear()
      return Date.UTC(b.getUTCFullYear() - Math.ceil(years / k) * k, 0, 1)
    }
  }
}

const cacheKey = (rrule: string, timezone: string, dtstart: number): string => `${timezone}\u0000${dtstart}\u0000${rrule}`

const remember = (key: string, c: Compiled | null): void => {
  compileCache.delete(key)
  compileCache.set(key, c)
  if (compileCache.size > MAX_COMPILED) compileCache.delete(compileCache.keys().next().value!)
}

const compiled = (r: Recurrence): Compiled | undefined => {
  if (typeof r !== "object" || r === null) return undefined
  const byObject = compiledByObject.get(r)
  if (byObject !== undefined) return byObject ?? undefined
  const key = cacheKey(r.rrule, r.timezone, r.dtstart)
  let c = compileCache.get(key)
  if (c === undefined) {
    try {
      const built = build(r.rrule, r.timezone, r.dtstart)
      c = Either.isRight(built) ? built.right : null
    } catch {
      c = null
    }
  } else {
    compileCache.delete(key)
  }
  remember(key, c)
  compiledByObject.set(r, c)
  return c ?? undefined
}

// ---------------------------------------------------------------------------
// Public API
// ---------------------------------------------------------------------------

/**
 * Validates and normalises a recurring window. The rule accepts FREQ
 * (HOURLY, DAILY, WEEKLY, MONTHLY, YEARLY), INTERVAL, BYDAY (with ordinals
 * for MONTHLY/YEARLY), BYHOUR, BYMINUTE, BYMONTHDAY, BYMONTH, COUNT (up to
 * 10,000) or UNTIL (YYYYMMDDTHHMMSSZ), with an optional "RRULE:" prefix and
 * keys in any letter case. Rejects everything else, rules that never produce a
 * window at or after `start`, unknown zones, and durations that are not whole
 * seconds in (0, 366 days]. Never throws.
 */
export const parseRecurrence = (input: RecurrenceInput): Either.Either<Recurrence, RecurrenceError> => {
  try {
    return parseUnsafe(input)
  } catch (e) {
    return Either.left({ field: "rrule", message: `The rule could not be read: ${e instanceof Error ? e.message : String(e)}.` })
  }
}

const parseUnsafe = (input: RecurrenceInput): Either.Either<Recurrence, RecurrenceError> => {
  if (typeof input !== "object" || input === null) {
    return Either.left({ field: "rrule", message: `Give rrule, timezone, start and duration, ${EXAMPLE}.` })
  }
  const built = build(input.rrule, input.timezone, input.start)
  if (Either.isLeft(built)) return Either.left(built.left)
  const seconds: unknown = input.durationSeconds
  if (typeof seconds !== "number" || !Number.isInteger(seconds) || seconds <= 0) {
    return Either.left({ field: "duration", message: `The duration must be a whole number of seconds greater than 0, e.g. 3600 for one hour.` })
  }
  if (seconds > MAX_DURATION_SECONDS) {
    return Either.left({ field: "duration", message: `The duration is longer than 366 days (${MAX_DURATION_SECONDS} seconds); give a shorter one.` })
  }
  const c = built.right
  let first: number | undefined
  for (const s of c.open.ascending(c.dtstart, false)) {
    first = s
    break
  }
  if (first === undefined) {
    return Either.left({
      field: "rrule",
      message: `The rule produces no window at or after the start (${new Date(c.dtstart).toISOString()}${
        c.rule.until === undefined ? "" : ` and up to UNTIL=${formatUntil(c.rule.until)}`
      }). Check that BYMONTH, BYMONTHDAY, BYDAY, BYHOUR and INTERVAL can match together.`
    })
  }
  const recurrence: Recurrence = {
    rrule: formatRule(c.rule, true),
    timezone: c.zone.id,
    dtstart: c.dtstart,
    durationMs: seconds * 1000
  }
  remember(cacheKey(recurrence.rrule, recurrence.timezone, recurrence.dtstart), c)
  compiledByObject.set(recurrence, c)
  return Either.right(recurrence)
}

const validInstant = (t: number): boolean => typeof t === "number" && Number.isFinite(t) && Math.abs(t) < MAX_ABS_INSTANT

const durationOf = (r: Recurrence): number | undefined =>
  typeof r.durationMs === "number" && Number.isFinite(r.durationMs) && r.durationMs > 0 ? r.durationMs : undefined

/**
 * The period containing `at`, if any: the latest start s <= at with
 * at - s < durationMs (start inclusive, end exclusive). Cold: one or two
 * chunks of the floating rule; warm: O(1) from the memo.
 */
export const activePeriod = (r: Recurrence, at: number): Period | undefined => {
  const duration = durationOf(r)
  if (duration === undefined || !validInstant(at)) return undefined
  const c = compiled(r)
  if (c === undefined || at < c.dtstart) return undefined
  let span = c.spans.find((x) => at >= x.lo && at < x.hi)
  if (span === undefined) {
    try {
      const start = c.starts.latest(at)
      let next: number | undefined
      for (const s of c.starts.ascending(at, true)) {
        next = s
        break
      }
      span = { lo: start ?? Number.NEGATIVE_INFINITY, hi: next ?? Number.POSITIVE_INFINITY, start }
    } catch {
      return undefined
    }
    c.spans.push(span)
    if (c.spans.length > 8) c.spans.shift()
  }
  const s = span.start
  return s !== undefined && at - s < duration ? { start: s, end: s + duration } : undefined
}

/**
 * The next `count` periods whose start is at or after `from`, ascending. A
 * period already in progress at `from` is not included (ask activePeriod for
 * it). At most MAX_NEXT_PERIODS.
 */
export const nextPeriods = (r: Recurrence, from: number, count: number): ReadonlyArray<Period> => {
  const duration = durationOf(r)
  const out: Array<Period> = []
  if (duration === undefined || !validInstant(from) || typeof count !== "number" || !(count >= 1)) return out
  const n = Math.min(Math.floor(count), MAX_NEXT_PERIODS)
  const c = compiled(r)
  if (c === undefined) return out
  try {
    for (const s of c.starts.ascending(from, false)) {
      out.push({ start: s, end: s + duration })
      if (out.length >= n) break
    }
  } catch {
    // a failure inside rrule-temporal ends the list
  }
  return out
}

/**
 * The periods overlapping [from, to) (start < to and end > from), ascending.
 * At most MAX_PERIODS (the earliest ones).
 */
export const periodsBetween = (r: Recurrence, from: number, to: number): ReadonlyArray<Period> => {
  const duration = durationOf(r)
  const out: Array<Period> = []
  if (duration === undefined || !validInstant(from) || !validInstant(to) || from >= to) return out
  const c = compiled(r)
  if (c === undefined) return out
  try {
    for (const s of c.starts.ascending(from - duration, true)) {
      if (s >= to) break
      out.push({ start: s, end: s + duration })
      if (out.length >= MAX_PERIODS) break
    }
  } catch {
    // a failure inside rrule-temporal ends the list
  }
  return out
}
