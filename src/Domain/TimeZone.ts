/**
 * Time zones: IANA zone names, and the mapping between instants and local
 * wall-clock times through every DST change (docs/decisions.md#time). The one time-zone
 * engine of the service: cron schedules (src/Monitors/Schedule.ts) and RRULE
 * windows (src/Maintenance/Rrule.ts) map local times to instants only here.
 *
 * This module is pure: no Effect services, no I/O, and it never reads the
 * clock.
 *
 * Terms:
 * - an *instant* is epoch milliseconds;
 * - a *wall time* is a reading of a zone's wall clock, encoded as the epoch
 *   milliseconds of the same reading in UTC: 02:30 on 8 March 2026 is
 *   Date.UTC(2026, 2, 8, 2, 30) in every zone. Arithmetic on wall times is
 *   calendar arithmetic on a clock without DST (croner and rrule-temporal
 *   enumerate wall times that way, with no zone);
 * - the *offset* at an instant: wall time = instant + offset.
 *
 * A wall time exists once, is skipped by a forward jump of the clock (a gap),
 * or repeats after a backward jump (an overlap). `resolve` reports every
 * instant of a wall time and the gap that skipped it; `toInstant` picks one
 * instant, with an explicit rule for a skipped time, because the two products
 * differ on purpose (docs/decisions.md#time):
 * - "shift": forward by the length of the gap (RFC 5545 §3.3.5, Temporal's
 *   "compatible"): 02:30 -> 03:30 on a one-hour jump. RRULE windows.
 * - "gapEnd": the first instant after the gap: 02:30 -> 03:00 on a one-hour
 *   jump. Cron, whose daemon runs a skipped job as soon as the clock jumps.
 * A repeated wall time takes its first pass under both rules.
 *
 * Zone data comes from the runtime's time-zone database through Intl (ICU),
 * which is exact at every instant but slow per call. Each zone's transitions
 * are therefore found once per span of 256 days (the offset sampled daily, each
 * change narrowed down to its second) and cached; after that every function
 * here is a few array reads: the incident engine computes the next expected
 * time of every cron monitor at start-up (figures in docs/performance.md).
 * Temporal's own transitions are not used: the temporal-polyfill copy inside
 * rrule-temporal 2.2.7 samples offsets 60 days apart and misses shorter DST
 * periods (Africa/Casablanca's Ramadan hour in 2018-2021, 2029-2032 and
 * 2039-2041, Pacific/Fiji 2020-12-20 to 2021-01-17). Temporal is used for the
 * zone's name, which it gives with the database's letter case and without
 * swapping an alias for its canonical name (see `normaliseName`).
 */
import { RRuleTemporal, type TemporalZonedDateTime } from "rrule-temporal"

const SECOND = 1_000
const DAY = 86_400_000
/** Zone data is cached per span of this length (any length works; a span holds a few transitions at most). */
const SPAN_MS = 256 * DAY
/**
 * Offsets are sampled this far apart: a change back and forth within less would
 * not be seen (compared with Intl every 3 hours in every zone, 1970-2045: none).
 */
const SAMPLE_MS = DAY
const MAX_CACHED_SPANS = 1_000
const MAX_CACHED_ZONES = 1_000

// ---------------------------------------------------------------------------
// Temporal (the implementation rrule-temporal uses)
// ---------------------------------------------------------------------------

// rrule-temporal uses the runtime's Temporal when there is one and otherwise a
// bundled copy of temporal-polyfill that it does not export (Node 20 has no
// Temporal, so the bundled copy is used). Its occurrences are ZonedDateTime
// objects of that implementation, so the constructor is taken from one of
// them: the same Temporal as the recurrences', without a second polyfill.
type ZonedDateTimeConstructor = new (epochNanoseconds: bigint, timeZone: string) => TemporalZonedDateTime

let zonedDateTimeConstructor: ZonedDateTimeConstructor | undefined

const zonedDateTime = (epochMs: number, timeZone: string): TemporalZonedDateTime => {
  if (zonedDateTimeConstructor === undefined) {
    const seed = new RRuleTemporal({ rruleString: "DTSTART;TZID=UTC:20000101T000000\nRRULE:FREQ=DAILY;COUNT=1" }).next(
      new Date(Date.UTC(1999, 11, 31)),
      true
    )
    if (seed === null) throw new Error("rrule-temporal produced no occurrence for a trivial rule")
    zonedDateTimeConstructor = seed.constructor as ZonedDateTimeConstructor
  }
  return new zonedDateTimeConstructor(BigInt(epochMs) * 1_000_000n, timeZone)
}

// ---------------------------------------------------------------------------
// Types
// ---------------------------------------------------------------------------

/** A change of a zone's offset at instant `at`: wall time jumps from `at + before` to `at + after`. */
export type Transition = { readonly at: number; readonly before: number; readonly after: number }

/** Wall times [start, end) that a forward jump at instant `at` skipped. */
export type Gap = { readonly at: number; readonly start: number; readonly end: number }

/** What a zone's wall clock does at one wall time. */
export type WallTimeResolution = {
  readonly wall: number
  /** The instants whose wall clock reads `wall`, ascending: one; two when it repeats; none when it is skipped. */
  readonly instants: ReadonlyArray<number>
  /** The gap that skipped `wall` (when `instants` is empty). */
  readonly gap: Gap | undefined
  /**
   * A gap that ended less than its own length before `wall`. Shifted forward,
   * that gap's wall times land among the instants just before and after
   * `wall`'s own: "shift" is not monotonic there (New York 2026-03-08: 02:30
   * -> 07:30Z, but 03:00 EDT = 07:00Z).
   */
  readonly followsGap: Gap | undefined
}

/** How a skipped wall time becomes an instant (see the module comment). A repeated one takes its first pass. */
export type SkippedTime = "shift" | "gapEnd"

/** Wall-clock fields of a wall time. `weekday` is ISO: 1 = Monday … 7 = Sunday. */
export type WallFields = {
  readonly year: number
  readonly month: number
  readonly day: number
  readonly weekday: number
  readonly hour: number
  readonly minute: number
  readonly second: number
  readonly millisecond: number
}

/** The fields of a wall time (no zone involved: the wall time already is the reading). */
export const wallFields = (wall: number): WallFields => {
  const d = new Date(wall)
  return {
    year: d.getUTCFullYear(),
    month: d.getUTCMonth() + 1,
    day: d.getUTCDate(),
    weekday: d.getUTCDay() === 0 ? 7 : d.getUTCDay(),
    hour: d.getUTCHours(),
    minute: d.getUTCMinutes(),
    second: d.getUTCSeconds(),
    millisecond: d.getUTCMilliseconds()
  }
}

/** Picks one instant of a resolved wall time: its first pass, or per `skipped` when it does not exist. */
export const chooseInstant = (r: WallTimeResolution, skipped: SkippedTime): number => {
  if (r.instants.length > 0) return r.instants[0]!
  const gap = r.gap!
  return skipped === "gapEnd" ? gap.at : gap.at + (r.wall - gap.start)
}

// ---------------------------------------------------------------------------
// Names
// ---------------------------------------------------------------------------

// IANA names: letters first, then letters, digits, "_", "-", "+", "/".
// Rejects offsets such as "+05:30", which Temporal would accept.
const NAME_SHAPE = /^[A-Za-z][A-Za-z0-9_+\-/]*$/

/**
 * The zone's name with the database's letter case ("europe/london" ->
 * "Europe/London"), or undefined when the runtime does not know it. Aliases
 * keep the name given: Temporal answers "Asia/Kolkata" and "Europe/Kyiv" where
 * ICU would answer "Asia/Calcutta" and "Europe/Kiev", which surprises users.
 */
const normaliseName = (name: string): string | undefined => {
  if (name.length === 0 || name.length > 64 || !NAME_SHAPE.test(name)) return undefined
  try {
    return zonedDateTime(0, name).timeZoneId
  } catch {
    return undefined
  }
}

// ---------------------------------------------------------------------------
// Zones
// ---------------------------------------------------------------------------

/** A span's data: the offset at its start and the transitions inside it, ascending. */
type Span = { readonly startOffset: number; readonly transitions: ReadonlyArray<Transition> }

const NO_TRANSITIONS: ReadonlyArray<Transition> = []
const NO_OFFSET_RANGE: readonly [number, number] = [0, 0]

export class TimeZone {
  private readonly spans = new Map<number, Span>()
  private intl: Intl.DateTimeFormat | undefined

  private constructor(readonly id: string, private readonly isUtc: boolean) {}

  private static readonly byName = new Map<string, TimeZone>()

  static readonly UTC = new TimeZone("UTC", true)

  /**
   * The zone with this IANA name ("Europe/London", "UTC", "EST5EDT",
   * "Etc/GMT+5"; letter case free), or undefined when the name is unknown or is
   * an offset ("+05:30"). Zones are cached by name.
   */
  static of(name: string): TimeZone | undefined {
    if (name === "UTC") return TimeZone.UTC // most schedules: no lookup
    if (typeof name !== "string") return undefined
    let zone = TimeZone.byName.get(name)
    if (zone === undefined) {
      const id = normaliseName(name)
      if (id === undefined) return undefined
      zone = id === "UTC" ? TimeZone.UTC : new TimeZone(id, false)
      if (TimeZone.byName.size > MAX_CACHED_ZONES) TimeZone.byName.clear()
      TimeZone.byName.set(name, zone)
    }
    return zone
  }

  private span(k: number): Span {
    const cached = this.spans.get(k)
    if (cached !== undefined) return cached
    // Transitions in [k * SPAN_MS, (k + 1) * SPAN_MS): the offset is sampled
    // once a day, and each change is narrowed down to its second.
    const last = (k + 1) * SPAN_MS - SECOND
    let known = k * SPAN_MS - SECOND // the offset is `offset` from the span's start up to `known`
    const startOffset = this.exactOffset(known)
    let offset = startOffset
    const transitions: Array<Transition> = []
    while (known < last) {
      const probe = Math.min(known + SAMPLE_MS, last)
      if (this.exactOffset(probe) === offset) {
        known = probe
        continue
      }
      let lo = known
      let hi = probe
      while (hi - lo > SECOND) {
        const mid = lo + Math.floor((hi - lo) / 2 / SECOND) * SECOND
        if (this.exactOffset(mid) === offset) lo = mid
        else hi = mid
      }
      const after = this.exactOffset(hi)
      transitions.push({ at: hi, before: offset, after })
      offset = after
      known = hi
    }
    const span: Span = { startOffset, transitions }
    if (this.spans.size > MAX_CACHED_SPANS) this.spans.clear()
    this.spans.set(k, span)
    return span
  }

  /** The offset at instant `t` (whole seconds), straight from the runtime's time-zone database. */
  private exactOffset(t: number): number {
    const p: Partial<Record<Intl.DateTimeFormatPartTypes, number>> = {}
    for (const part of this.formatter().formatToParts(t)) p[part.type] = Number(part.value)
    const wall = new Date(0)
    wall.setUTCFullYear(p.year!, p.month! - 1, p.day!)
    wall.setUTCHours(p.hour! % 24, p.minute!, p.second!, 0)
    return wall.getTime() - Math.floor(t / SECOND) * SECOND
  }

  private formatter(): Intl.DateTimeFormat {
    this.intl ??= new Intl.DateTimeFormat("en-US", {
      timeZone: this.id,
      hourCycle: "h23",
      year: "numeric",
      month: "numeric",
      day: "numeric",
      hour: "numeric",
      minute: "numeric",
      second: "numeric"
    })
    return this.intl
  }

  /** The offset in effect at instant `t` (wall time = t + offset). */
  offsetAt(t: number): number {
    if (this.isUtc) return 0
    const span = this.span(Math.floor(t / SPAN_MS))
    let offset = span.startOffset
    for (const tr of span.transitions) {
      if (tr.at > t) break
      offset = tr.after
    }
    return offset
  }

  /** Transitions with `a < at <= b`, ascending. */
  transitionsIn(a: number, b: number): ReadonlyArray<Transition> {
    if (this.isUtc || b <= a) return NO_TRANSITIONS
    let out: Array<Transition> | undefined
    for (let k = Math.floor(a / SPAN_MS); k <= Math.floor(b / SPAN_MS); k++) {
      for (const tr of this.span(k).transitions) {
        if (tr.at > a && tr.at <= b) (out ??= []).push(tr)
      }
    }
    return out ?? NO_TRANSITIONS
  }

  /** Smallest and largest offsets in effect at some instant of [a, b]. */
  offsetRange(a: number, b: number): readonly [number, number] {
    if (this.isUtc) return NO_OFFSET_RANGE
    let lo = this.offsetAt(a)
    let hi = lo
    for (const tr of this.transitionsIn(a, b)) {
      lo = Math.min(lo, tr.after)
      hi = Math.max(hi, tr.after)
    }
    return [lo, hi]
  }

  /** The wall time at instant `t`. */
  toWallTime(t: number): number {
    return t + this.offsetAt(t)
  }

  /** Every instant of wall time `wall`, and the gaps around it (see WallTimeResolution). */
  resolve(wall: number): WallTimeResolution {
    if (this.isUtc) return { wall, instants: [wall], gap: undefined, followsGap: undefined }
    // Offsets are within ±1 day, so the transitions 2 days either side decide.
    // Between two transitions the offset is constant: `wall` has an instant in
    // that stretch when wall - offset falls inside it.
    const from = wall - 2 * DAY
    let offset = this.offsetAt(from)
    let stretchStart = from
    const instants: Array<number> = []
    let gap: Gap | undefined
    let followsGap: Gap | undefined
    for (const tr of this.transitionsIn(from, wall + 2 * DAY)) {
      const t = wall - offset
      if (t >= stretchStart && t < tr.at) instants.push(t)
      if (tr.after > tr.before) {
        const start = tr.at + tr.before
        const end = tr.at + tr.after
        if (wall >= start && wall < end) gap = { at: tr.at, start, end }
        else if (wall >= end && wall < end + (end - start)) followsGap = { at: tr.at, start, end }
      }
      stretchStart = tr.at
      offset = tr.after
    }
    const t = wall - offset
    if (t >= stretchStart) instants.push(t)
    return { wall, instants, gap: instants.length === 0 ? gap : undefined, followsGap }
  }

  /** The instant of wall time `wall`: its first pass, or per `skipped` when the clock jumped over it. */
  toInstant(wall: number, skipped: SkippedTime): number {
    return chooseInstant(this.resolve(wall), skipped)
  }

  /** The first instant of the local day of instant `t` (after the gap when midnight is skipped, as Temporal's startOfDay). */
  startOfDay(t: number): number {
    const wall = this.toWallTime(t)
    return this.toInstant(wall - (((wall % DAY) + DAY) % DAY), "gapEnd")
  }

  /** The first instant of the local day after that of instant `t` (a day the zone skipped entirely is passed over). */
  startOfNextDay(t: number): number {
    const wall = this.toWallTime(t)
    return this.toInstant(wall - (((wall % DAY) + DAY) % DAY) + DAY, "gapEnd")
  }
}

/** True when `name` is an IANA time zone name the runtime knows (e.g. "Europe/London", "UTC"). */
export const isValidTimeZone = (name: string): boolean => TimeZone.of(name) !== undefined
