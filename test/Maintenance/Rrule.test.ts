import { describe, expect, it } from "@effect/vitest"
import { Either, FastCheck } from "effect"
import { RRuleTemporal } from "rrule-temporal"
import {
  activePeriod,
  MAX_COUNT,
  nextPeriods,
  type Period,
  parseRecurrence,
  periodsBetween,
  type Recurrence,
  type RecurrenceError,
  type RecurrenceInput
} from "../../src/Maintenance/Rrule.js"

// Expected instants below are computed by hand from the zones' published rules
// (offsets and transition instants are listed here), never with the module
// under test. The reference expansion used by the properties (at the end)
// enumerates local dates itself and resolves them with Temporal's own
// `compatible` disambiguation.
//
//   America/New_York  EST -05:00, EDT -04:00
//                     2026-03-08T07:00Z 02:00 EST -> 03:00 EDT | 2026-11-01T06:00Z 02:00 EDT -> 01:00 EST
//                     2027-03-14T07:00Z                        | 2027-11-07T06:00Z
//   Europe/London     GMT +00:00, BST +01:00
//                     2026-03-29T01:00Z 01:00 GMT -> 02:00 BST | 2026-10-25T01:00Z 02:00 BST -> 01:00 GMT
//                     2027-03-28T01:00Z, 2028-03-26T01:00Z
//   Australia/Sydney  AEST +10:00, AEDT +11:00
//                     2026-04-04T16:00Z 03:00 AEDT -> 02:00 AEST (Sunday 5 April, local)
//                     2026-10-03T16:00Z 02:00 AEST -> 03:00 AEDT (Sunday 4 October, local)
//   Asia/Kolkata      IST +05:30 all year
//
// Calendar: 2026-01-01 is a Thursday; 1 February and 1 March 2026 are Sundays.

const MINUTE = 60_000
const HOUR = 60 * MINUTE
const DAY = 24 * HOUR

/** "2026-03-08T07:00:00Z" style, without milliseconds. */
const iso = (t: number): string => new Date(t).toISOString().replace(".000Z", "Z")
const at = (s: string): number => {
  const t = Date.parse(s)
  if (Number.isNaN(t)) throw new Error(`bad ISO string in test: ${s}`)
  return t
}

const input = (rrule: string, timezone: string, start: string, durationSeconds = 3600): RecurrenceInput => ({
  rrule,
  timezone,
  start: at(start),
  durationSeconds
})

const rec = (rrule: string, timezone: string, start: string, durationSeconds = 3600): Recurrence => {
  const r = parseRecurrence(input(rrule, timezone, start, durationSeconds))
  if (Either.isLeft(r)) throw new Error(`expected a valid recurrence, got ${JSON.stringify(r.left)}`)
  return r.right
}

const invalid = (i: RecurrenceInput): RecurrenceError => {
  const r = parseRecurrence(i)
  if (Either.isRight(r)) throw new Error(`expected an error, got ${JSON.stringify(r.right)}`)
  return r.left
}

const starts = (r: Recurrence, from: string, count: number): Array<string> =>
  nextPeriods(r, at(from), count).map((p) => iso(p.start))

const span = (p: Period | undefined): string | undefined => (p === undefined ? undefined : `${iso(p.start)}/${iso(p.end)}`)

// ---------------------------------------------------------------------------
// Every component of the spec's table
// ---------------------------------------------------------------------------

describe("Rrule: the components of the spec's table", () => {
  const cases: ReadonlyArray<{ name: string; rrule: string; start: string; from?: string; expected: Array<string> }> = [
    {
      name: "FREQ=HOURLY",
      rrule: "FREQ=HOURLY;BYMINUTE=15",
      start: "2026-01-01T10:00:00Z",
      expected: ["2026-01-01T10:15:00Z", "2026-01-01T11:15:00Z", "2026-01-01T12:15:00Z"]
    },
    {
      name: "FREQ=DAILY (09:00 on the first day is before the start)",
      rrule: "FREQ=DAILY;BYHOUR=9;BYMINUTE=0",
      start: "2026-01-01T10:00:00Z",
      expected: ["2026-01-02T09:00:00Z", "2026-01-03T09:00:00Z", "2026-01-04T09:00:00Z"]
    },
    {
      name: "FREQ=WEEKLY (Saturdays)",
      rrule: "FREQ=WEEKLY;BYDAY=SA;BYHOUR=22;BYMINUTE=0",
      start: "2026-01-01T00:00:00Z",
      expected: ["2026-01-03T22:00:00Z", "2026-01-10T22:00:00Z", "2026-01-17T22:00:00Z"]
    },
    {
      name: "FREQ=MONTHLY",
      rrule: "FREQ=MONTHLY;BYMONTHDAY=15;BYHOUR=3;BYMINUTE=0",
      start: "2026-01-01T00:00:00Z",
      expected: ["2026-01-15T03:00:00Z", "2026-02-15T03:00:00Z", "2026-03-15T03:00:00Z"]
    },
    {
      name: "FREQ=YEARLY",
      rrule: "FREQ=YEARLY;BYMONTH=1;BYMONTHDAY=1;BYHOUR=0;BYMINUTE=0",
      start: "2026-01-01T10:00:00Z",
      expected: ["2027-01-01T00:00:00Z", "2028-01-01T00:00:00Z", "2029-01-01T00:00:00Z"]
    },
    {
      name: "INTERVAL (every 3 days)",
      rrule: "FREQ=DAILY;INTERVAL=3;BYHOUR=6;BYMINUTE=0",
      start: "2026-01-01T00:00:00Z",
      expected: ["2026-01-01T06:00:00Z", "2026-01-04T06:00:00Z", "2026-01-07T06:00:00Z"]
    },
    {
      name: "BYDAY weekdays (Monday and Friday, daily rule)",
      rrule: "FREQ=DAILY;BYDAY=MO,FR;BYHOUR=8;BYMINUTE=0",
      start: "2026-01-01T00:00:00Z",
      expected: ["2026-01-02T08:00:00Z", "2026-01-05T08:00:00Z", "2026-01-09T08:00:00Z"]
    },
    {
      name: "BYDAY with an ordinal (first Sunday)",
      rrule: "FREQ=MONTHLY;BYDAY=1SU;BYHOUR=4;BYMINUTE=0",
      start: "2026-01-01T00:00:00Z",
      expected: ["2026-01-04T04:00:00Z", "2026-02-01T04:00:00Z", "2026-03-01T04:00:00Z", "2026-04-05T04:00:00Z"]
    },
    {
      name: "BYDAY with a negative ordinal (last Friday)",
      rrule: "FREQ=MONTHLY;BYDAY=-1FR;BYHOUR=18;BYMINUTE=0",
      start: "2026-01-01T00:00:00Z",
      expected: ["2026-01-30T18:00:00Z", "2026-02-27T18:00:00Z", "2026-03-27T18:00:00Z"]
    },
    {
      name: "BYHOUR (two hours a day)",
      rrule: "FREQ=DAILY;BYHOUR=1,13;BYMINUTE=0",
      start: "2026-01-01T00:00:00Z",
      expected: ["2026-01-01T01:00:00Z", "2026-01-01T13:00:00Z", "2026-01-02T01:00:00Z"]
    },
    {
      name: "BYMINUTE (twice an hour)",
      rrule: "FREQ=HOURLY;BYMINUTE=0,30",
      start: "2026-01-01T00:10:00Z",
      expected: ["2026-01-01T00:30:00Z", "2026-01-01T01:00:00Z", "2026-01-01T01:30:00Z"]
    },
    {
      name: "BYMONTHDAY=-1 (last day of the month)",
      rrule: "FREQ=MONTHLY;BYMONTHDAY=-1;BYHOUR=23;BYMINUTE=0",
      start: "2026-01-01T00:00:00Z",
      expected: ["2026-01-31T23:00:00Z", "2026-02-28T23:00:00Z", "2026-03-31T23:00:00Z", "2026-04-30T23:00:00Z"]
    },
    {
      name: "BYMONTH (December only, daily rule)",
      rrule: "FREQ=DAILY;BYMONTH=12;BYHOUR=0;BYMINUTE=0",
      start: "2026-11-30T12:00:00Z",
      from: "2026-12-30T00:00:00Z",
      expected: ["2026-12-30T00:00:00Z", "2026-12-31T00:00:00Z", "2027-12-01T00:00:00Z"]
    },
    {
      name: "COUNT (exactly three)",
      rrule: "FREQ=DAILY;COUNT=3;BYHOUR=12;BYMINUTE=0",
      start: "2026-01-01T00:00:00Z",
      expected: ["2026-01-01T12:00:00Z", "2026-01-02T12:00:00Z", "2026-01-03T12:00:00Z"]
    },
    {
      name: "UNTIL (inclusive)",
      rrule: "FREQ=DAILY;UNTIL=20260103T120000Z;BYHOUR=12;BYMINUTE=0",
      start: "2026-01-01T00:00:00Z",
      expected: ["2026-01-01T12:00:00Z", "2026-01-02T12:00:00Z", "2026-01-03T12:00:00Z"]
    },
    {
      name: "UNTIL one second before the last start",
      rrule: "FREQ=DAILY;UNTIL=20260103T115959Z;BYHOUR=12;BYMINUTE=0",
      start: "2026-01-01T00:00:00Z",
      expected: ["2026-01-01T12:00:00Z", "2026-01-02T12:00:00Z"]
    }
  ]
  for (const c of cases) {
    it(c.name, () => {
      const r = rec(c.rrule, "UTC", c.start)
      // ask for more than expected: COUNT/UNTIL rules must stop by themselves
      const got = starts(r, c.from ?? c.start, c.expected.length)
      expect(got).toEqual(c.expected)
    })
  }

  it("COUNT and UNTIL end the recurrence", () => {
    expect(starts(rec("FREQ=DAILY;COUNT=3;BYHOUR=12;BYMINUTE=0", "UTC", "2026-01-01T00:00:00Z"), "2025-01-01T00:00:00Z", 10))
      .toHaveLength(3)
    expect(
      starts(rec("FREQ=DAILY;UNTIL=20260103T120000Z;BYHOUR=12;BYMINUTE=0", "UTC", "2026-01-01T00:00:00Z"), "2025-01-01T00:00:00Z", 10)
    ).toHaveLength(3)
    const r = rec("FREQ=DAILY;COUNT=3;BYHOUR=12;BYMINUTE=0", "UTC", "2026-01-01T00:00:00Z")
    expect(span(activePeriod(r, at("2026-01-03T12:30:00Z")))).toBe("2026-01-03T12:00:00Z/2026-01-03T13:00:00Z")
    expect(activePeriod(r, at("2026-01-04T12:30:00Z"))).toBeUndefined()
  })
})

// ---------------------------------------------------------------------------
// Daylight saving time
// ---------------------------------------------------------------------------

describe("Rrule: DST, RFC 5545 §3.3.5 (a start in a gap moves forward by the gap, a repeated time takes its first pass)", () => {
  const cases: ReadonlyArray<{ name: string; zone: string; rrule: string; from: string; expected: Array<string> }> = [
    {
      name: "New York spring forward: 02:30 on 2026-03-08 starts at 03:30 EDT",
      zone: "America/New_York",
      rrule: "FREQ=DAILY;BYHOUR=2;BYMINUTE=30",
      from: "2026-03-07T00:00:00Z",
      // 02:30 EST = 07:30Z; 03:30 EDT = 07:30Z; 02:30 EDT = 06:30Z
      expected: ["2026-03-07T07:30:00Z", "2026-03-08T07:30:00Z", "2026-03-09T06:30:00Z"]
    },
    {
      name: "New York fall back: 01:30 on 2026-11-01 starts once, at the first pass (EDT)",
      zone: "America/New_York",
      rrule: "FREQ=DAILY;BYHOUR=1;BYMINUTE=30",
      from: "2026-10-31T00:00:00Z",
      // 01:30 EDT = 05:30Z (first pass; the second pass would be 06:30Z); 01:30 EST = 06:30Z
      expected: ["2026-10-31T05:30:00Z", "2026-11-01T05:30:00Z", "2026-11-02T06:30:00Z"]
    },
    {
      name: "London spring forward: 01:30 on 2026-03-29 starts at 02:30 BST",
      zone: "Europe/London",
      rrule: "FREQ=DAILY;BYHOUR=1;BYMINUTE=30",
      from: "2026-03-28T00:00:00Z",
      // 01:30 GMT = 01:30Z; 02:30 BST = 01:30Z; 01:30 BST = 00:30Z
      expected: ["2026-03-28T01:30:00Z", "2026-03-29T01:30:00Z", "2026-03-30T00:30:00Z"]
    },
    {
      name: "London fall back: 01:30 on 2026-10-25 starts once, at the first pass (BST)",
      zone: "Europe/London",
      rrule: "FREQ=DAILY;BYHOUR=1;BYMINUTE=30",
      from: "2026-10-24T00:00:00Z",
      expected: ["2026-10-24T00:30:00Z", "2026-10-25T00:30:00Z", "2026-10-26T01:30:00Z"]
    },
    {
      name: "Sydney fall back: 02:30 on 2026-04-05 starts once, at the first pass (AEDT)",
      zone: "Australia/Sydney",
      rrule: "FREQ=DAILY;BYHOUR=2;BYMINUTE=30",
      from: "2026-04-03T00:00:00Z",
      // 04-04 02:30 AEDT = 04-03T15:30Z; 04-05 02:30 AEDT (first pass) = 04-04T15:30Z; 04-06 02:30 AEST = 04-05T16:30Z
      expected: ["2026-04-03T15:30:00Z", "2026-04-04T15:30:00Z", "2026-04-05T16:30:00Z"]
    },
    {
      name: "Sydney spring forward: 02:30 on 2026-10-04 starts at 03:30 AEDT",
      zone: "Australia/Sydney",
      rrule: "FREQ=DAILY;BYHOUR=2;BYMINUTE=30",
      from: "2026-10-02T00:00:00Z",
      // 10-03 02:30 AEST = 10-02T16:30Z; 10-04 03:30 AEDT = 10-03T16:30Z; 10-05 02:30 AEDT = 10-04T15:30Z
      expected: ["2026-10-02T16:30:00Z", "2026-10-03T16:30:00Z", "2026-10-04T15:30:00Z"]
    },
    {
      name: "Kolkata has no DST: 02:30 IST is 21:00Z the day before, in March",
      zone: "Asia/Kolkata",
      rrule: "FREQ=DAILY;BYHOUR=2;BYMINUTE=30",
      from: "2026-03-07T00:00:00Z",
      expected: ["2026-03-07T21:00:00Z", "2026-03-08T21:00:00Z", "2026-03-09T21:00:00Z"]
    },
    {
      name: "Kolkata has no DST: and in November",
      zone: "Asia/Kolkata",
      rrule: "FREQ=DAILY;BYHOUR=2;BYMINUTE=30",
      from: "2026-10-31T00:00:00Z",
      expected: ["2026-10-31T21:00:00Z", "2026-11-01T21:00:00Z", "2026-11-02T21:00:00Z"]
    }
  ]
  for (const c of cases) {
    it(c.name, () => {
      const r = rec(c.rrule, c.zone, "2026-01-01T00:00:00Z")
      expect(starts(r, c.from, c.expected.length)).toEqual(c.expected)
    })
  }

  it("the 02:30 window on New York's spring-forward day lasts exactly its duration", () => {
    const r = rec("FREQ=DAILY;BYHOUR=2;BYMINUTE=30", "America/New_York", "2026-03-01T00:00:00Z", 3600)
    expect(nextPeriods(r, at("2026-03-08T00:00:00Z"), 1).map(span)).toEqual(["2026-03-08T07:30:00Z/2026-03-08T08:30:00Z"])
    expect(span(activePeriod(r, at("2026-03-08T07:30:00Z")))).toBe("2026-03-08T07:30:00Z/2026-03-08T08:30:00Z")
    expect(activePeriod(r, at("2026-03-08T07:29:59.999Z"))).toBeUndefined()
    expect(activePeriod(r, at("2026-03-08T08:30:00Z"))).toBeUndefined()
  })

  it("the 01:30 window on New York's fall-back day exists once", () => {
    const r = rec("FREQ=DAILY;BYHOUR=1;BYMINUTE=30", "America/New_York", "2026-03-01T00:00:00Z", 1800)
    expect(periodsBetween(r, at("2026-11-01T04:00:00Z"), at("2026-11-01T09:00:00Z")).map(span)).toEqual([
      "2026-11-01T05:30:00Z/2026-11-01T06:00:00Z"
    ])
    // the second pass of 01:30 (06:30Z) is not a window
    expect(activePeriod(r, at("2026-11-01T06:40:00Z"))).toBeUndefined()
  })

  it("a window spanning a change lasts elapsed time: 2 hours from 01:00 EST end at 04:00 EDT", () => {
    const r = rec("FREQ=DAILY;BYHOUR=1;BYMINUTE=0", "America/New_York", "2026-03-01T00:00:00Z", 7200)
    // 01:00 EST = 06:00Z; +2h = 08:00Z = 04:00 EDT on the wall clock
    expect(span(activePeriod(r, at("2026-03-08T07:59:59.999Z")))).toBe("2026-03-08T06:00:00Z/2026-03-08T08:00:00Z")
    expect(activePeriod(r, at("2026-03-08T08:00:00Z"))).toBeUndefined()
    // fall back: 01:00 EDT (first pass) = 05:00Z; +2h = 07:00Z = 02:00 EST
    expect(span(activePeriod(r, at("2026-11-01T06:30:00Z")))).toBe("2026-11-01T05:00:00Z/2026-11-01T07:00:00Z")
    expect(activePeriod(r, at("2026-11-01T07:00:00Z"))).toBeUndefined()
  })

  it("COUNT counts the gap-shifted start", () => {
    // DTSTART is 2026-03-06 19:00 EST; the three 02:30 starts are 7, 8 (shifted) and 9 March
    const r = rec("FREQ=DAILY;COUNT=3;BYHOUR=2;BYMINUTE=30", "America/New_York", "2026-03-07T00:00:00Z")
    expect(starts(r, "2026-01-01T00:00:00Z", 10)).toEqual([
      "2026-03-07T07:30:00Z",
      "2026-03-08T07:30:00Z",
      "2026-03-09T06:30:00Z"
    ])
    expect(activePeriod(r, at("2026-03-10T06:45:00Z"))).toBeUndefined()
  })

  it("UNTIL is compared with the shifted instant, not with the local time", () => {
    // 2026-03-08 02:30 shifts to 07:30Z, after UNTIL 07:00Z (although 02:30 reads before 03:00 EDT)
    const before = rec("FREQ=DAILY;UNTIL=20260308T070000Z;BYHOUR=2;BYMINUTE=30", "America/New_York", "2026-03-06T00:00:00Z")
    expect(starts(before, "2026-03-01T00:00:00Z", 10)).toEqual(["2026-03-06T07:30:00Z", "2026-03-07T07:30:00Z"])
    const on = rec("FREQ=DAILY;UNTIL=20260308T073000Z;BYHOUR=2;BYMINUTE=30", "America/New_York", "2026-03-06T00:00:00Z")
    expect(starts(on, "2026-03-01T00:00:00Z", 10)).toEqual([
      "2026-03-06T07:30:00Z",
      "2026-03-07T07:30:00Z",
      "2026-03-08T07:30:00Z"
    ])
  })

  it("HOURLY with BYMINUTE across New York's spring forward: 02:00 and 02:30 land on 03:00 and 03:30 EDT", () => {
    const r = rec("FREQ=HOURLY;BYMINUTE=0,30", "America/New_York", "2026-01-01T00:00:00Z", 600)
    expect(starts(r, "2026-03-08T06:00:00Z", 5)).toEqual([
      "2026-03-08T06:00:00Z", // 01:00 EST
      "2026-03-08T06:30:00Z", // 01:30 EST
      "2026-03-08T07:00:00Z", // 02:00 -> 03:00 EDT, the same instant as 03:00 EDT: one period
      "2026-03-08T07:30:00Z", // 02:30 -> 03:30 EDT = 03:30 EDT
      "2026-03-08T08:00:00Z" // 04:00 EDT
    ])
  })

  it("HOURLY with BYMINUTE across New York's fall back: the repeated hour is taken at its first pass only", () => {
    const r = rec("FREQ=HOURLY;BYMINUTE=0,30", "America/New_York", "2026-01-01T00:00:00Z", 600)
    expect(starts(r, "2026-11-01T04:30:00Z", 6)).toEqual([
      "2026-11-01T04:30:00Z", // 00:30 EDT
      "2026-11-01T05:00:00Z", // 01:00 EDT
      "2026-11-01T05:30:00Z", // 01:30 EDT
      "2026-11-01T07:00:00Z", // 02:00 EST
      "2026-11-01T07:30:00Z",
      "2026-11-01T08:00:00Z"
    ])
  })

  it("a two-hour gap (Antarctica/Troll, +00 -> +02 at 2026-03-29T01:00Z): 02:00 moves past 03:00, and both are kept in instant order", () => {
    // 02:00 is in the gap [01:00, 03:00): shifted by two hours to 04:00 +02 = 02:00Z; 03:00 +02 = 01:00Z
    const r = rec("FREQ=DAILY;BYHOUR=2,3;BYMINUTE=0", "Antarctica/Troll", "2026-03-01T00:00:00Z", 1800)
    expect(starts(r, "2026-03-28T00:00:00Z", 6)).toEqual([
      "2026-03-28T02:00:00Z",
      "2026-03-28T03:00:00Z",
      "2026-03-29T01:00:00Z", // 03:00 +02
      "2026-03-29T02:00:00Z", // 02:00 -> 04:00 +02
      "2026-03-30T00:00:00Z",
      "2026-03-30T01:00:00Z"
    ])
    expect(span(activePeriod(r, at("2026-03-29T01:10:00Z")))).toBe("2026-03-29T01:00:00Z/2026-03-29T01:30:00Z")
    expect(span(activePeriod(r, at("2026-03-29T02:10:00Z")))).toBe("2026-03-29T02:00:00Z/2026-03-29T02:30:00Z")
  })

  it("a gap at the end of a day (Asia/Pyongyang 2018-05-04 23:30 +08:30 -> 00:00 +09:00): 23:40 shifts past the start", () => {
    // start 15:00Z = 00:00 +09 on 5 May; 23:40 on 4 May is in the gap and becomes 00:10 +09 = 15:10Z
    const r = rec("FREQ=HOURLY;BYMINUTE=0,20,40", "Asia/Pyongyang", "2018-05-04T15:00:00Z", 300)
    expect(starts(r, "2018-05-04T00:00:00Z", 5)).toEqual([
      "2018-05-04T15:00:00Z",
      "2018-05-04T15:10:00Z",
      "2018-05-04T15:20:00Z",
      "2018-05-04T15:40:00Z",
      "2018-05-04T16:00:00Z"
    ])
  })

  it("HOURLY with INTERVAL steps through wall-clock hours (RFC 5545 evaluates the rule on local time)", () => {
    // DTSTART 2026-03-08 00:00 EST; local hours 00, 03, 06 -> 05:00Z, 07:00Z (03:00 EDT), 10:00Z
    const r = rec("FREQ=HOURLY;INTERVAL=3;BYMINUTE=0", "America/New_York", "2026-03-08T05:00:00Z", 600)
    expect(starts(r, "2026-03-08T00:00:00Z", 3)).toEqual([
      "2026-03-08T05:00:00Z",
      "2026-03-08T07:00:00Z",
      "2026-03-08T10:00:00Z"
    ])
  })
})

describe("Rrule: DST periods shorter than two months are followed too", () => {
  // Africa/Casablanca is +01 except in Ramadan: 2029-01-14T02:00Z 03:00 +01 -> 02:00 +00,
  // 2029-02-18T02:00Z 02:00 +00 -> 03:00 +01. Pacific/Fiji kept DST from 2020-12-20
  // (2020-12-19T14:00Z, +12 -> +13) to 2021-01-17 (2021-01-16T14:00Z). rrule-temporal's
  // bundled Temporal does not see either period.
  it("a daily 12:00 window in Casablanca moves to 12:00Z for Ramadan and back to 11:00Z after it", () => {
    const r = rec("FREQ=DAILY;BYHOUR=12;BYMINUTE=0", "Africa/Casablanca", "2029-01-01T00:00:00Z")
    expect(starts(r, "2029-01-12T00:00:00Z", 4)).toEqual([
      "2029-01-12T11:00:00Z",
      "2029-01-13T11:00:00Z",
      "2029-01-14T12:00:00Z",
      "2029-01-15T12:00:00Z"
    ])
    expect(starts(r, "2029-02-16T00:00:00Z", 3)).toEqual(["2029-02-16T12:00:00Z", "2029-02-17T12:00:00Z", "2029-02-18T11:00:00Z"])
  })

  it("a daily 12:00 window in Fiji is at 23:00Z the day before during the 2020-21 summer time", () => {
    const r = rec("FREQ=DAILY;BYHOUR=12;BYMINUTE=0", "Pacific/Fiji", "2020-12-01T00:00:00Z")
    expect(starts(r, "2020-12-18T00:00:00Z", 3)).toEqual(["2020-12-18T00:00:00Z", "2020-12-19T00:00:00Z", "2020-12-19T23:00:00Z"])
  })
})

describe("Rrule: monthly, weekly, hourly and yearly rules", () => {
  it("every start in a gap, or just after one, still costs little (searching both ways)", () => {
    // New York: second Sunday of March at 02:30 (always in the gap) and at 03:15 (always in the hour after it)
    const inGap = rec("FREQ=YEARLY;BYMONTH=3;BYDAY=2SU;BYHOUR=2;BYMINUTE=30", "America/New_York", "2000-01-01T00:00:00Z")
    const afterGap = rec("FREQ=YEARLY;BYMONTH=3;BYDAY=2SU;BYHOUR=3;BYMINUTE=15", "America/New_York", "2000-01-01T00:00:00Z")
    const t0 = performance.now()
    // 2026-03-08 02:30 -> 03:30 EDT = 07:30Z; 2027-03-14 likewise; 03:15 EDT = 07:15Z
    expect(starts(inGap, "2026-01-01T00:00:00Z", 2)).toEqual(["2026-03-08T07:30:00Z", "2027-03-14T07:30:00Z"])
    expect(starts(afterGap, "2026-01-01T00:00:00Z", 2)).toEqual(["2026-03-08T07:15:00Z", "2027-03-14T07:15:00Z"])
    expect(span(activePeriod(inGap, at("2026-03-08T08:00:00Z")))).toBe("2026-03-08T07:30:00Z/2026-03-08T08:30:00Z")
    expect(span(activePeriod(afterGap, at("2026-03-08T08:00:00Z")))).toBe("2026-03-08T07:15:00Z/2026-03-08T08:15:00Z")
    expect(activePeriod(inGap, at("2026-06-01T00:00:00Z"))).toBeUndefined()
    expect(periodsBetween(inGap, at("2020-01-01T00:00:00Z"), at("2030-01-01T00:00:00Z"))).toHaveLength(10)
    expect(performance.now() - t0).toBeLessThan(1000)
  })

  it("MONTHLY BYDAY=1SU in London follows BST", () => {
    const r = rec("FREQ=MONTHLY;BYDAY=1SU;BYHOUR=1;BYMINUTE=30", "Europe/London", "2026-01-01T00:00:00Z")
    expect(starts(r, "2026-01-01T00:00:00Z", 4)).toEqual([
      "2026-01-04T01:30:00Z",
      "2026-02-01T01:30:00Z",
      "2026-03-01T01:30:00Z",
      "2026-04-05T00:30:00Z" // BST
    ])
    // 4 October (BST) and 1 November (GMT)
    expect(starts(r, "2026-10-01T00:00:00Z", 2)).toEqual(["2026-10-04T00:30:00Z", "2026-11-01T01:30:00Z"])
  })

  it("MONTHLY BYMONTHDAY=-1 in New York: last day at 23:00 local", () => {
    const r = rec("FREQ=MONTHLY;BYMONTHDAY=-1;BYHOUR=23;BYMINUTE=0", "America/New_York", "2026-01-01T12:00:00Z")
    expect(starts(r, "2026-01-01T00:00:00Z", 4)).toEqual([
      "2026-02-01T04:00:00Z", // 31 Jan 23:00 EST
      "2026-03-01T04:00:00Z", // 28 Feb 23:00 EST
      "2026-04-01T03:00:00Z", // 31 Mar 23:00 EDT
      "2026-05-01T03:00:00Z" // 30 Apr 23:00 EDT
    ])
  })

  it("WEEKLY INTERVAL=2 BYDAY=MO,WE: every other week, counted from the week of DTSTART", () => {
    // DTSTART Wednesday 2026-03-04 09:00 GMT; weeks of 2, 16 and 30 March and 13 April; BST from 29 March
    const r = rec("FREQ=WEEKLY;INTERVAL=2;BYDAY=MO,WE;BYHOUR=9;BYMINUTE=0", "Europe/London", "2026-03-04T09:00:00Z")
    expect(starts(r, "2026-03-01T00:00:00Z", 6)).toEqual([
      "2026-03-04T09:00:00Z",
      "2026-03-16T09:00:00Z",
      "2026-03-18T09:00:00Z",
      "2026-03-30T08:00:00Z",
      "2026-04-01T08:00:00Z",
      "2026-04-13T08:00:00Z"
    ])
  })

  it("HOURLY with BYMINUTE in Kolkata", () => {
    // DTSTART 05:30 IST; 05:45 IST = 00:15Z
    const r = rec("FREQ=HOURLY;BYMINUTE=15,45", "Asia/Kolkata", "2026-01-01T00:00:00Z", 600)
    expect(starts(r, "2026-01-01T00:00:00Z", 4)).toEqual([
      "2026-01-01T00:15:00Z",
      "2026-01-01T00:45:00Z",
      "2026-01-01T01:15:00Z",
      "2026-01-01T01:45:00Z"
    ])
  })

  it("YEARLY BYMONTH=3 BYDAY=-1SU at 01:00 London: in the gap every year, so 02:00 BST = 01:00Z", () => {
    const r = rec("FREQ=YEARLY;BYMONTH=3;BYDAY=-1SU;BYHOUR=1;BYMINUTE=0", "Europe/London", "2026-01-01T00:00:00Z")
    expect(starts(r, "2026-01-01T00:00:00Z", 3)).toEqual([
      "2026-03-29T01:00:00Z",
      "2027-03-28T01:00:00Z",
      "2028-03-26T01:00:00Z"
    ])
  })

  it("YEARLY BYMONTH=7 BYMONTHDAY=4 at noon New York", () => {
    const r = rec("FREQ=YEARLY;BYMONTH=7;BYMONTHDAY=4;BYHOUR=12;BYMINUTE=0", "America/New_York", "2026-01-01T00:00:00Z")
    expect(starts(r, "2026-01-01T00:00:00Z", 2)).toEqual(["2026-07-04T16:00:00Z", "2027-07-04T16:00:00Z"])
  })
})

// ---------------------------------------------------------------------------
// DTSTART and normalisation
// ---------------------------------------------------------------------------

const nyTime = new Intl.DateTimeFormat("en-GB", {
  timeZone: "America/New_York",
  hourCycle: "h23",
  hour: "2-digit",
  minute: "2-digit"
})

describe("Rrule: DTSTART on the spring-forward day, at the instant of the gap time", () => {
  // 2026-03-08T07:30Z is what Temporal gives for 2026-03-08T02:30[America/New_York]
  // with "compatible": a DTSTART "in the gap". rrule-temporal on its own then
  // runs at 03:30 every day (see the last block); here the stored rule keeps
  // 02:30 and DTSTART is a real instant.
  it("keeps the gap day's window and 02:30 local on every other day for more than a year", () => {
    const r = rec("FREQ=DAILY;BYHOUR=2;BYMINUTE=30", "America/New_York", "2026-03-08T07:30:00Z")
    expect(r.rrule).toBe("FREQ=DAILY;BYHOUR=2;BYMINUTE=30")
    expect(iso(r.dtstart)).toBe("2026-03-08T07:30:00Z")
    const periods = nextPeriods(r, r.dtstart, 372)
    expect(periods).toHaveLength(372)
    expect(periods.slice(0, 3).map((p) => iso(p.start))).toEqual([
      "2026-03-08T07:30:00Z", // 02:30 -> 03:30 EDT
      "2026-03-09T06:30:00Z",
      "2026-03-10T06:30:00Z"
    ])
    expect(starts(r, "2026-11-01T00:00:00Z", 2)).toEqual(["2026-11-01T07:30:00Z", "2026-11-02T07:30:00Z"])
    // 2026-03-08 + 371 days = 2027-03-14, the next spring-forward day
    expect(periods.slice(-3).map((p) => iso(p.start))).toEqual([
      "2027-03-12T07:30:00Z", // 02:30 EST
      "2027-03-13T07:30:00Z",
      "2027-03-14T07:30:00Z" // gap again: 03:30 EDT
    ])
    expect(starts(r, "2027-03-14T12:00:00Z", 1)).toEqual(["2027-03-15T06:30:00Z"])
    const gapDays = new Set(["2026-03-08", "2027-03-14"])
    for (const p of periods) {
      const local = nyTime.format(p.start)
      const day = iso(p.start).slice(0, 10)
      expect(`${day} ${local}`).toBe(`${day} ${gapDays.has(day) ? "03:30" : "02:30"}`)
      expect(p.end - p.start).toBe(HOUR)
    }
  })

  it("without BYHOUR the time of day is the start's own local time (03:30 EDT), made explicit", () => {
    const r = rec("FREQ=DAILY", "America/New_York", "2026-03-08T07:30:00Z")
    expect(r.rrule).toBe("FREQ=DAILY;BYHOUR=3;BYMINUTE=30")
    expect(starts(r, "2026-03-08T00:00:00Z", 2)).toEqual(["2026-03-08T07:30:00Z", "2026-03-09T07:30:00Z"])
  })

  it("with INTERVAL, a gap-shifted start before DTSTART's local time is kept only on the rule's phase", () => {
    // Lord Howe, 2026-10-03T15:30Z: 02:00 +10:30 -> 02:30 +11 (a 30-minute gap). DTSTART 02:30 +11;
    // 02:20 is in DTSTART's own hour (phase 0) and shifts to 02:50 +11 = 15:50Z; then 05:20, 08:20 +11
    const lordHowe = rec("FREQ=HOURLY;INTERVAL=3;BYMINUTE=20", "Australia/Lord_Howe", "2026-10-03T15:30:00Z", 600)
    expect(starts(lordHowe, "2026-10-03T00:00:00Z", 3)).toEqual([
      "2026-10-03T15:50:00Z",
      "2026-10-03T18:20:00Z",
      "2026-10-03T21:20:00Z"
    ])
    // New York, DTSTART 03:30 EDT: hours 03, 05, 07 ...; 02:30 (hour 02) is off the phase
    const newYork = rec("FREQ=HOURLY;INTERVAL=2;BYMINUTE=0,30", "America/New_York", "2026-03-08T07:30:00Z", 600)
    expect(starts(newYork, "2026-03-08T00:00:00Z", 3)).toEqual([
      "2026-03-08T07:30:00Z", // 03:30 EDT itself
      "2026-03-08T09:00:00Z", // 05:00 EDT
      "2026-03-08T09:30:00Z"
    ])
  })

  it("a gap-shifted start is kept only when it is at or after the start", () => {
    // start 03:10 EDT: 02:30 -> 03:30 EDT is after it, 02:00 -> 03:00 EDT before it
    const r = rec("FREQ=DAILY;BYHOUR=2;BYMINUTE=0,30", "America/New_York", "2026-03-08T07:10:00Z")
    expect(starts(r, "2026-03-01T00:00:00Z", 3)).toEqual([
      "2026-03-08T07:30:00Z",
      "2026-03-09T06:00:00Z",
      "2026-03-09T06:30:00Z"
    ])
  })
})

describe("Rrule: normalisation", () => {
  it("upper-cases, sorts, drops duplicates, INTERVAL=1 and WKST=MO, and makes DTSTART's values explicit", () => {
    const r = rec("rrule:freq=weekly;byday=fr,mo,mo;interval=1;wkst=mo;", "america/new_york", "2026-01-01T17:34:56.789Z")
    expect(r).toEqual({
      rrule: "FREQ=WEEKLY;BYDAY=MO,FR;BYHOUR=12;BYMINUTE=34",
      timezone: "America/New_York",
      dtstart: at("2026-01-01T17:34:56Z"), // the milliseconds dropped (12:34:56 EST): never later than asked
      durationMs: 3_600_000
    })
  })

  it.each([
    ["FREQ=HOURLY", "2026-01-01T00:20:00Z", "FREQ=HOURLY;BYMINUTE=20"],
    ["FREQ=DAILY;INTERVAL=2", "2026-01-01T06:00:00Z", "FREQ=DAILY;INTERVAL=2;BYHOUR=6;BYMINUTE=0"],
    ["FREQ=WEEKLY", "2026-01-01T06:00:00Z", "FREQ=WEEKLY;BYDAY=TH;BYHOUR=6;BYMINUTE=0"],
    ["FREQ=MONTHLY", "2026-01-31T10:00:00Z", "FREQ=MONTHLY;BYMONTHDAY=31;BYHOUR=10;BYMINUTE=0"],
    ["FREQ=MONTHLY;BYDAY=-1FR,1MO,+2TU", "2026-01-31T10:00:00Z", "FREQ=MONTHLY;BYDAY=1MO,2TU,-1FR;BYHOUR=10;BYMINUTE=0"],
    ["FREQ=MONTHLY;BYMONTHDAY=15,-1,1,15", "2026-01-01T10:00:00Z", "FREQ=MONTHLY;BYMONTHDAY=-1,1,15;BYHOUR=10;BYMINUTE=0"],
    ["FREQ=YEARLY", "2024-02-29T06:00:00Z", "FREQ=YEARLY;BYMONTH=2;BYMONTHDAY=29;BYHOUR=6;BYMINUTE=0"],
    ["FREQ=YEARLY;BYMONTH=3", "2026-01-15T06:00:00Z", "FREQ=YEARLY;BYMONTH=3;BYMONTHDAY=15;BYHOUR=6;BYMINUTE=0"],
    ["FREQ=YEARLY;BYDAY=1MO", "2026-01-15T06:00:00Z", "FREQ=YEARLY;BYDAY=1MO;BYHOUR=6;BYMINUTE=0"],
    ["FREQ=DAILY;until=20261231t235959z", "2026-01-01T06:00:00Z", "FREQ=DAILY;UNTIL=20261231T235959Z;BYHOUR=6;BYMINUTE=0"],
    ["BYMINUTE=5;COUNT=4;FREQ=HOURLY", "2026-01-01T06:00:00Z", "FREQ=HOURLY;COUNT=4;BYMINUTE=5"]
  ])("%s from %s -> %s", (rrule, start, expected) => {
    const r = rec(rrule, "UTC", start)
    expect(r.rrule).toBe(expected)
    // the normalised rule, parsed again with the same start, is unchanged and gives the same periods
    const again = rec(r.rrule, r.timezone, iso(r.dtstart))
    expect(again.rrule).toBe(r.rrule)
    expect(nextPeriods(again, r.dtstart, 5)).toEqual(nextPeriods(r, r.dtstart, 5))
  })

  it("a monthly rule from the 31st skips shorter months; a yearly rule from 29 February skips common years", () => {
    expect(starts(rec("FREQ=MONTHLY", "UTC", "2026-01-31T10:00:00Z"), "2026-01-01T00:00:00Z", 3)).toEqual([
      "2026-01-31T10:00:00Z",
      "2026-03-31T10:00:00Z",
      "2026-05-31T10:00:00Z"
    ])
    expect(starts(rec("FREQ=YEARLY", "UTC", "2024-02-29T06:00:00Z"), "2024-01-01T00:00:00Z", 2)).toEqual([
      "2024-02-29T06:00:00Z",
      "2028-02-29T06:00:00Z"
    ])
  })

  it("zone names: letter case fixed, aliases kept, surrounding spaces dropped", () => {
    expect(rec("FREQ=DAILY", "utc", "2026-01-01T00:00:00Z").timezone).toBe("UTC")
    expect(rec("FREQ=DAILY", "Asia/Calcutta", "2026-01-01T00:00:00Z").timezone).toBe("Asia/Calcutta")
    expect(rec("FREQ=DAILY", " Europe/London ", "2026-01-01T00:00:00Z").timezone).toBe("Europe/London")
  })

  it("a Recurrence rebuilt from its stored fields behaves the same", () => {
    const r = rec("FREQ=DAILY;BYHOUR=2;BYMINUTE=30", "America/New_York", "2026-03-01T00:00:00Z")
    const copy: Recurrence = JSON.parse(JSON.stringify(r))
    expect(nextPeriods(copy, at("2026-03-07T00:00:00Z"), 3)).toEqual(nextPeriods(r, at("2026-03-07T00:00:00Z"), 3))
    expect(activePeriod(copy, at("2026-03-08T07:45:00Z"))).toEqual(activePeriod(r, at("2026-03-08T07:45:00Z")))
  })
})

// ---------------------------------------------------------------------------
// DTSTART's second: never later than asked
// ---------------------------------------------------------------------------

describe("Rrule: DTSTART keeps its second, and every period starts at that second past the minute", () => {
  it("FREQ=HOURLY from 12:34:30.750: dtstart 12:34:30 (milliseconds dropped), periods at hh:34:30", () => {
    const r = rec("FREQ=HOURLY", "UTC", "2026-03-01T12:34:30.750Z", 600)
    expect(r).toEqual({ rrule: "FREQ=HOURLY;BYMINUTE=34", timezone: "UTC", dtstart: at("2026-03-01T12:34:30Z"), durationMs: 600_000 })
    expect(starts(r, "2026-03-01T00:00:00Z", 3)).toEqual(["2026-03-01T12:34:30Z", "2026-03-01T13:34:30Z", "2026-03-01T14:34:30Z"])
    expect(span(activePeriod(r, at("2026-03-01T12:34:30Z")))).toBe("2026-03-01T12:34:30Z/2026-03-01T12:44:30Z")
    expect(span(activePeriod(r, at("2026-03-01T12:34:31Z")))).toBe("2026-03-01T12:34:30Z/2026-03-01T12:44:30Z")
    expect(activePeriod(r, at("2026-03-01T12:34:29.999Z"))).toBeUndefined()
    expect(span(activePeriod(r, at("2026-03-01T13:44:29.999Z")))).toBe("2026-03-01T13:34:30Z/2026-03-01T13:44:30Z")
    expect(activePeriod(r, at("2026-03-01T13:44:30Z"))).toBeUndefined()
    expect(periodsBetween(r, at("2026-03-01T12:00:00Z"), at("2026-03-01T13:34:30Z")).map(span)).toEqual([
      "2026-03-01T12:34:30Z/2026-03-01T12:44:30Z"
    ])
  })

  it("with BYMINUTE and BYHOUR the second still comes from DTSTART (no BYSECOND, RFC 5545)", () => {
    const start = "2026-03-01T12:34:30Z" // a Sunday
    expect(starts(rec("FREQ=HOURLY;BYMINUTE=0,30", "UTC", start), start, 3)).toEqual([
      "2026-03-01T13:00:30Z",
      "2026-03-01T13:30:30Z",
      "2026-03-01T14:00:30Z"
    ])
    const daily = rec("FREQ=DAILY;BYHOUR=2,14;BYMINUTE=15", "UTC", start)
    expect(daily.rrule).toBe("FREQ=DAILY;BYHOUR=2,14;BYMINUTE=15")
    expect(starts(daily, start, 3)).toEqual(["2026-03-01T14:15:30Z", "2026-03-02T02:15:30Z", "2026-03-02T14:15:30Z"])
    expect(starts(rec("FREQ=WEEKLY;BYDAY=MO,FR;BYHOUR=2;BYMINUTE=15", "UTC", start), start, 2)).toEqual([
      "2026-03-02T02:15:30Z",
      "2026-03-06T02:15:30Z"
    ])
    expect(starts(rec("FREQ=MONTHLY;BYDAY=-1FR;BYHOUR=2;BYMINUTE=15", "UTC", start), start, 2)).toEqual([
      "2026-03-27T02:15:30Z",
      "2026-04-24T02:15:30Z"
    ])
    expect(starts(rec("FREQ=YEARLY", "UTC", start), start, 2)).toEqual(["2026-03-01T12:34:30Z", "2027-03-01T12:34:30Z"])
    // a match on DTSTART itself is the first period, at its second
    expect(starts(rec("FREQ=DAILY;BYHOUR=12;BYMINUTE=34", "UTC", start), start, 2)).toEqual([
      "2026-03-01T12:34:30Z",
      "2026-03-02T12:34:30Z"
    ])
  })

  it("the stored rule carries no BYSECOND: parsed again with its dtstart it gives the same periods", () => {
    const r = rec("FREQ=DAILY;BYHOUR=2;BYMINUTE=30", "America/New_York", "2026-03-01T00:00:07.900Z")
    expect(r.rrule).not.toMatch(/BYSECOND/)
    const again = rec(r.rrule, r.timezone, iso(r.dtstart))
    expect(again).toEqual(r)
    const copy: Recurrence = JSON.parse(JSON.stringify(r))
    expect(nextPeriods(copy, at("2026-03-07T00:00:00Z"), 3)).toEqual(nextPeriods(r, at("2026-03-07T00:00:00Z"), 3))
    expect(starts(copy, "2026-03-07T00:00:00Z", 1)).toEqual(["2026-03-07T07:30:07Z"])
  })

  it("DST: a gap time shifts forward with its second; a repeated time takes its first pass with its second", () => {
    // New York: 02:30 does not exist on 8 March
    expect(starts(rec("FREQ=DAILY;BYHOUR=2;BYMINUTE=30", "America/New_York", "2026-03-01T00:00:07Z"), "2026-03-07T00:00:00Z", 3))
      .toEqual(["2026-03-07T07:30:07Z", "2026-03-08T07:30:07Z", "2026-03-09T06:30:07Z"])
    // London: 01:30 is skipped on 29 March and repeated on 25 October
    const london = rec("FREQ=DAILY;BYHOUR=1;BYMINUTE=30", "Europe/London", "2026-03-20T10:00:45Z")
    expect(starts(london, "2026-03-28T00:00:00Z", 3)).toEqual(["2026-03-28T01:30:45Z", "2026-03-29T01:30:45Z", "2026-03-30T00:30:45Z"])
    expect(starts(london, "2026-10-24T00:00:00Z", 3)).toEqual(["2026-10-24T00:30:45Z", "2026-10-25T00:30:45Z", "2026-10-26T01:30:45Z"])
    // COUNT counts the shifted start; UNTIL is compared with the start instant, seconds included
    expect(
      starts(rec("FREQ=DAILY;COUNT=3;BYHOUR=2;BYMINUTE=30", "America/New_York", "2026-03-07T00:00:07Z"), "2026-03-01T00:00:00Z", 5)
    ).toEqual(["2026-03-07T07:30:07Z", "2026-03-08T07:30:07Z", "2026-03-09T06:30:07Z"])
    const ny = (until: string) =>
      starts(rec(`FREQ=DAILY;BYHOUR=2;BYMINUTE=30;UNTIL=${until}`, "America/New_York", "2026-03-07T00:00:07Z"), "2026-03-01T00:00:00Z", 5)
    expect(ny("20260308T073000Z")).toEqual(["2026-03-07T07:30:07Z"])
    expect(ny("20260308T073007Z")).toEqual(["2026-03-07T07:30:07Z", "2026-03-08T07:30:07Z"])
  })

  it("a start just after the spring-forward gap (the rule anchored earlier for the library) keeps its second", () => {
    // 07:10:20Z is 03:10:20 EDT on 8 March: 02:30 -> 03:30 EDT is after it and kept
    expect(starts(rec("FREQ=DAILY;BYHOUR=2;BYMINUTE=30", "America/New_York", "2026-03-08T07:10:20Z"), "2026-03-08T00:00:00Z", 2))
      .toEqual(["2026-03-08T07:30:20Z", "2026-03-09T06:30:20Z"])
    // 03:30:20 EDT: 03:30:20, 05:00:20, 05:30:20 EDT (the INTERVAL phase counted from 03:00)
    expect(
      starts(rec("FREQ=HOURLY;INTERVAL=2;BYMINUTE=0,30", "America/New_York", "2026-03-08T07:30:20Z"), "2026-03-08T00:00:00Z", 3)
    ).toEqual(["2026-03-08T07:30:20Z", "2026-03-08T09:00:20Z", "2026-03-08T09:30:20Z"])
  })
})

// ---------------------------------------------------------------------------
// Queries at their boundaries
// ---------------------------------------------------------------------------

describe("Rrule: activePeriod, nextPeriods and periodsBetween at their boundaries", () => {
  const r = rec("FREQ=DAILY;BYHOUR=9;BYMINUTE=0", "UTC", "2026-01-01T00:00:00Z", 3600)
  const day2 = "2026-01-02T09:00:00Z/2026-01-02T10:00:00Z"

  it("activePeriod: start inclusive, end exclusive", () => {
    expect(span(activePeriod(r, at("2026-01-02T09:00:00Z")))).toBe(day2)
    expect(span(activePeriod(r, at("2026-01-02T09:59:59.999Z")))).toBe(day2)
    expect(activePeriod(r, at("2026-01-02T10:00:00Z"))).toBeUndefined()
    expect(activePeriod(r, at("2026-01-02T08:59:59.999Z"))).toBeUndefined()
    // before the start, and far after it
    expect(activePeriod(r, at("2025-12-31T09:30:00Z"))).toBeUndefined()
    expect(span(activePeriod(r, at("2036-01-02T09:30:00Z")))).toBe("2036-01-02T09:00:00Z/2036-01-02T10:00:00Z")
  })

  it("activePeriod answers the same from its memo, in any order", () => {
    const probes = ["2026-01-05T09:10:00Z", "2026-01-03T09:59:00Z", "2026-01-05T08:00:00Z", "2026-01-05T09:10:00Z", "2026-01-04T10:00:00Z"]
    const first = probes.map((p) => span(activePeriod(r, at(p))))
    expect(first).toEqual([
      "2026-01-05T09:00:00Z/2026-01-05T10:00:00Z",
      "2026-01-03T09:00:00Z/2026-01-03T10:00:00Z",
      undefined,
      "2026-01-05T09:00:00Z/2026-01-05T10:00:00Z",
      undefined
    ])
    expect(probes.map((p) => span(activePeriod(r, at(p))))).toEqual(first)
  })

  it("nextPeriods: periods whose start is at or after `from`; the one in progress is not included", () => {
    expect(starts(r, "2026-01-02T09:00:00Z", 2)).toEqual(["2026-01-02T09:00:00Z", "2026-01-03T09:00:00Z"])
    expect(starts(r, "2026-01-02T09:30:00Z", 2)).toEqual(["2026-01-03T09:00:00Z", "2026-01-04T09:00:00Z"])
    expect(nextPeriods(r, at("2026-01-02T09:30:00Z"), 0)).toEqual([])
  })

  it("periodsBetween: periods overlapping [from, to)", () => {
    expect(periodsBetween(r, at("2026-01-02T09:30:00Z"), at("2026-01-02T09:31:00Z")).map(span)).toEqual([day2])
    expect(periodsBetween(r, at("2026-01-02T10:00:00Z"), at("2026-01-03T09:00:00Z"))).toEqual([])
    expect(periodsBetween(r, at("2026-01-02T09:59:59.999Z"), at("2026-01-03T09:00:00.001Z")).map(span)).toEqual([
      day2,
      "2026-01-03T09:00:00Z/2026-01-03T10:00:00Z"
    ])
    expect(periodsBetween(r, at("2026-01-05T00:00:00Z"), at("2026-01-01T00:00:00Z"))).toEqual([])
  })

  it("a duration longer than the spacing: the latest start wins", () => {
    const long = rec("FREQ=DAILY;BYHOUR=9;BYMINUTE=0", "UTC", "2026-01-01T00:00:00Z", 36 * 3600)
    expect(span(activePeriod(long, at("2026-01-03T10:00:00Z")))).toBe("2026-01-03T09:00:00Z/2026-01-04T21:00:00Z")
    expect(periodsBetween(long, at("2026-01-03T10:00:00Z"), at("2026-01-03T10:00:01Z"))).toHaveLength(2)
  })

  it("bad arguments give no periods", () => {
    expect(activePeriod(r, Number.NaN)).toBeUndefined()
    expect(nextPeriods(r, Number.POSITIVE_INFINITY, 3)).toEqual([])
    expect(periodsBetween(r, 0, Number.NaN)).toEqual([])
    expect(activePeriod({ ...r, rrule: "FREQ=SOMETIMES" }, at("2026-01-02T09:30:00Z"))).toBeUndefined()
    expect(nextPeriods({ ...r, timezone: "Mars/Olympus" }, at("2026-01-02T09:30:00Z"), 3)).toEqual([])
  })
})

// ---------------------------------------------------------------------------
// Validation
// ---------------------------------------------------------------------------

describe("Rrule: validation", () => {
  const base = { timezone: "UTC", start: at("2026-01-06T10:00:00Z"), durationSeconds: 3600 } // a Tuesday
  const rruleCases: ReadonlyArray<readonly [string, RegExp]> = [
    ["", /empty/],
    ["   ", /empty/],
    ["FREQ=SECONDLY", /FREQ=SECONDLY is not supported.*FREQ=HOURLY with BYMINUTE/],
    ["FREQ=MINUTELY;INTERVAL=15", /FREQ=MINUTELY is not supported/],
    ["FREQ=FORTNIGHTLY", /FREQ=FORTNIGHTLY is not valid: use one of HOURLY, DAILY, WEEKLY, MONTHLY, YEARLY/],
    ["BYHOUR=2;BYMINUTE=0", /FREQ is required/],
    ["FREQ=MONTHLY;BYDAY=MO;BYSETPOS=1", /BYSETPOS is not supported.*BYDAY=1SU/],
    ["FREQ=DAILY;BYSECOND=0", /BYSECOND is not supported/],
    ["FREQ=YEARLY;BYWEEKNO=20", /BYWEEKNO is not supported/],
    ["FREQ=YEARLY;BYYEARDAY=100", /BYYEARDAY is not supported/],
    ["FREQ=WEEKLY;WKST=SU;BYDAY=MO", /WKST=SU is not supported: weeks start on Monday/],
    ["FREQ=DAILY;X-NAME=1", /Unknown rrule component "X-NAME". Supported components: FREQ, INTERVAL/],
    ["FREQ=DAILY;RSCALE=HEBREW", /RSCALE is not supported/],
    ["FREQ=MONTHLY;BYMONTHDAY=32", /BYMONTHDAY=32 is out of range: days of the month are 1 to 31, or -1 to -31/],
    ["FREQ=MONTHLY;BYMONTHDAY=0", /BYMONTHDAY=0 is out of range/],
    ["FREQ=MONTHLY;BYMONTHDAY=-32", /BYMONTHDAY=-32 is out of range/],
    ["FREQ=DAILY;BYHOUR=24", /BYHOUR=24 is out of range: hours are 0 to 23/],
    ["FREQ=DAILY;BYHOUR=-1", /BYHOUR=.*not a whole number/],
    ["FREQ=DAILY;BYMINUTE=60", /BYMINUTE=60 is out of range: minutes are 0 to 59/],
    ["FREQ=DAILY;BYMONTH=13", /BYMONTH=13 is out of range: months are 1 to 12/],
    ["FREQ=DAILY;BYMONTH=0", /BYMONTH=0 is out of range/],
    ["FREQ=DAILY;BYHOUR=1,,2", /"" is not a whole number/],
    ["FREQ=DAILY;BYDAY=", /BYDAY is empty/],
    ["FREQ=DAILY;BYDAY=XX", /"XX" is not a weekday/],
    ["FREQ=DAILY;COUNT=3;UNTIL=20270101T000000Z", /COUNT and UNTIL cannot both be given/],
    ["FREQ=DAILY;COUNT=0", /COUNT=0 is not valid/],
    [`FREQ=DAILY;COUNT=${MAX_COUNT + 1}`, /COUNT=10001 is too large: the maximum is 10000/],
    ["FREQ=DAILY;INTERVAL=0", /INTERVAL=0 is not valid/],
    ["FREQ=DAILY;INTERVAL=two", /INTERVAL=two is not valid/],
    ["FREQ=DAILY;UNTIL=20261231", /date without a time.*YYYYMMDDTHHMMSSZ/],
    ["FREQ=DAILY;UNTIL=20261231T235959", /has no "Z"/],
    ["FREQ=DAILY;UNTIL=20260230T000000Z", /not a real date and time/],
    ["FREQ=DAILY;UNTIL=2026-12-31T23:59:59Z", /UNTIL=.* is not valid/],
    ["FREQ=WEEKLY;BYDAY=1MO", /BYDAY=1MO \(a weekday with a number\) needs FREQ=MONTHLY or FREQ=YEARLY/],
    ["FREQ=MONTHLY;BYDAY=6MO", /BYDAY=6MO never matches: a month has at most 5/],
    ["FREQ=YEARLY;BYMONTH=3;BYDAY=-6SU", /at most 5/],
    ["FREQ=MONTHLY;BYDAY=0MO", /not 0/],
    ["FREQ=WEEKLY;BYMONTHDAY=1", /BYMONTHDAY cannot be used with FREQ=WEEKLY/],
    ["FREQ=YEARLY;BYMONTH=2;BYMONTHDAY=30,31", /never falls in BYMONTH=2/],
    ["FREQ=MONTHLY;BYMONTH=4,6,9,11;BYMONTHDAY=31", /never falls in BYMONTH=4,6,9,11/],
    ["FREQ=DAILY;FREQ=WEEKLY", /FREQ appears more than once/],
    ["FREQ=DAILY;;BYHOUR=1", /empty component/],
    ["FREQ", /"FREQ" is not a NAME=VALUE component/],
    ["DTSTART:20260101T000000Z\nRRULE:FREQ=DAILY", /no DTSTART line/],
    ["FREQ=DAILY;DTSTART=20260101T000000Z", /DTSTART is not part of the rrule/],
    ["FREQ=DAILY;UNTIL=20250101T000000Z", /UNTIL=20250101T000000Z is before the start/],
    // DTSTART is a Tuesday: every 7 days from it never lands on a Monday
    ["FREQ=DAILY;INTERVAL=7;BYDAY=MO", /produces no window at or after the start/],
    ["FREQ=DAILY;UNTIL=20260106T120000Z;BYHOUR=9", /produces no window at or after the start.*UNTIL=20260106T120000Z/],
    ["x".repeat(1001), /longer than 1000 characters/]
  ]
  it.each(rruleCases)("rrule %j is refused: %s", (rrule, message) => {
    const e = invalid({ ...base, rrule })
    expect(e.field).toBe("rrule")
    expect(e.message).toMatch(message)
  })

  it.each([
    ["RRULE:FREQ=DAILY"],
    ["rrule:freq=daily;byhour=2"],
    ["FREQ=DAILY;"],
    [" FREQ = DAILY ; BYHOUR = 2 "],
    ["FREQ=WEEKLY;WKST=MO"],
    ["FREQ=MONTHLY;BYDAY=+1SU"],
    ["FREQ=YEARLY;BYDAY=20MO"],
    ["FREQ=YEARLY;BYMONTH=2;BYMONTHDAY=29"],
    [`FREQ=DAILY;COUNT=${MAX_COUNT}`]
  ])("rrule %j is accepted", (rrule) => {
    expect(Either.isRight(parseRecurrence({ ...base, rrule }))).toBe(true)
  })

  it.each([
    ["Mars/Olympus", /Unknown time zone "Mars\/Olympus"/],
    ["", /time zone is empty/],
    ["+05:30", /Unknown time zone/],
    ["EST5EDT6", /Unknown time zone/]
  ])("timezone %j is refused", (timezone, message) => {
    const e = invalid({ ...base, rrule: "FREQ=DAILY", timezone })
    expect(e.field).toBe("timezone")
    expect(e.message).toMatch(message)
  })

  it.each([[Number.NaN], [1e20], [-1], [Date.UTC(2200, 0, 1)]])("start %s is refused", (start) => {
    expect(invalid({ ...base, rrule: "FREQ=DAILY", start }).field).toBe("start")
  })

  it.each([[0], [-5], [1.5], [366 * 86_400 + 1]])("duration %s is refused", (durationSeconds) => {
    const e = invalid({ ...base, rrule: "FREQ=DAILY", durationSeconds })
    expect(e.field).toBe("duration")
    expect(e.message).toMatch(/whole number of seconds|longer than 366 days/)
  })

  it("the rrule is checked before the zone, the zone before the start, the start before the duration", () => {
    expect(invalid({ rrule: "FREQ=NEVER", timezone: "Nowhere", start: Number.NaN, durationSeconds: 0 }).field).toBe("rrule")
    expect(invalid({ rrule: "FREQ=DAILY", timezone: "Nowhere", start: Number.NaN, durationSeconds: 0 }).field).toBe("timezone")
    expect(invalid({ rrule: "FREQ=DAILY", timezone: "UTC", start: Number.NaN, durationSeconds: 0 }).field).toBe("start")
  })

  it("never throws on values of the wrong type", () => {
    const weird = [null, undefined, 42, {}, []] as ReadonlyArray<unknown>
    for (const v of weird) {
      const r = parseRecurrence({ rrule: v, timezone: v, start: v, durationSeconds: v } as unknown as RecurrenceInput)
      expect(Either.isLeft(r)).toBe(true)
    }
    expect(Either.isLeft(parseRecurrence(null as unknown as RecurrenceInput))).toBe(true)
  })
})

// ---------------------------------------------------------------------------
// Long-running rules
// ---------------------------------------------------------------------------

describe("Rrule: long-running rules stay cheap", () => {
  it("FREQ=HOURLY from 2000: activePeriod in 2026 without replaying 26 years", () => {
    const r = rec("FREQ=HOURLY;BYMINUTE=0,30", "America/New_York", "2000-01-01T00:00:00Z", 600)
    let t0 = performance.now()
    expect(span(activePeriod(r, at("2026-03-08T07:05:00Z")))).toBe("2026-03-08T07:00:00Z/2026-03-08T07:10:00Z")
    expect(performance.now() - t0).toBeLessThan(500)
    t0 = performance.now()
    for (let i = 0; i < 2000; i++) activePeriod(r, at("2026-03-08T07:05:00Z") + i * 100)
    expect(performance.now() - t0).toBeLessThan(200)
    t0 = performance.now()
    expect(starts(r, "2031-06-01T12:10:00Z", 2)).toEqual(["2031-06-01T12:30:00Z", "2031-06-01T13:00:00Z"])
    expect(performance.now() - t0).toBeLessThan(500)
  })

  it("COUNT=10000 hourly: counted once from DTSTART, then searched", () => {
    // the 10,000th start is DTSTART + 9,999 h = 2026-01-01 + 416 d 15 h = 2027-02-21T15:00Z
    const r = rec(`FREQ=HOURLY;COUNT=${MAX_COUNT};BYMINUTE=0`, "UTC", "2026-01-01T00:00:00Z")
    const t0 = performance.now()
    expect(span(activePeriod(r, at("2027-02-21T15:30:00Z")))).toBe("2027-02-21T15:00:00Z/2027-02-21T16:00:00Z")
    expect(performance.now() - t0).toBeLessThan(3000)
    expect(activePeriod(r, at("2027-02-21T16:30:00Z"))).toBeUndefined()
    expect(starts(r, "2027-02-21T14:00:00Z", 5)).toEqual(["2027-02-21T14:00:00Z", "2027-02-21T15:00:00Z"])
    expect(periodsBetween(r, at("2020-01-01T00:00:00Z"), at("2030-01-01T00:00:00Z"))).toHaveLength(MAX_COUNT)
  })
})

// ---------------------------------------------------------------------------
// rrule-temporal 2.2.7 on its own: why this module does the zone arithmetic
// ---------------------------------------------------------------------------

describe("rrule-temporal 2.2.7 with a real TZID (pinned; revisit when upgrading)", () => {
  const instants = (rule: string, n: number): Array<string> =>
    new RRuleTemporal({ rruleString: rule }).all((_, i) => i < n).map((z) => iso(z.epochMilliseconds))

  it("omits a local time inside the gap instead of shifting it", () => {
    expect(instants("DTSTART;TZID=America/New_York:20260306T023000\nRRULE:FREQ=DAILY;COUNT=4", 4)).toEqual([
      "2026-03-06T07:30:00Z",
      "2026-03-07T07:30:00Z",
      "2026-03-09T06:30:00Z", // 2026-03-08 is missing
      "2026-03-10T06:30:00Z"
    ])
  })

  it("drifts to 03:30 when DTSTART itself is in the gap", () => {
    expect(instants("DTSTART;TZID=America/New_York:20260308T023000\nRRULE:FREQ=DAILY;COUNT=3", 3)).toEqual([
      "2026-03-08T07:30:00Z",
      "2026-03-09T07:30:00Z", // 03:30 EDT, not 02:30
      "2026-03-10T07:30:00Z"
    ])
  })

  it("keeps DTSTART's second on every occurrence, also with BYHOUR/BYMINUTE (RFC 5545; the module relies on it)", () => {
    expect(instants("DTSTART;TZID=UTC:20260301T123430\nRRULE:FREQ=HOURLY;BYMINUTE=0,30;COUNT=3", 3)).toEqual([
      "2026-03-01T13:00:30Z",
      "2026-03-01T13:30:30Z",
      "2026-03-01T14:00:30Z"
    ])
    expect(instants("DTSTART;TZID=UTC:20260301T123430\nRRULE:FREQ=DAILY;BYHOUR=2,14;BYMINUTE=15;COUNT=2", 2)).toEqual([
      "2026-03-01T14:15:30Z",
      "2026-03-02T02:15:30Z"
    ])
  })

  it("accepts BYMONTHDAY=32 even when strict", () => {
    expect(() =>
      new RRuleTemporal({
        strict: true,
        rruleString: "DTSTART;TZID=UTC:20260101T000000\nRRULE:FREQ=MONTHLY;BYMONTHDAY=32;COUNT=2"
      }).all()
    ).not.toThrow()
  })
})

// ---------------------------------------------------------------------------
// Properties
// ---------------------------------------------------------------------------

// Temporal as rrule-temporal uses it (its bundled polyfill on Node 20), for the reference below.
type ZonedDateTime = NonNullable<ReturnType<RRuleTemporal["next"]>>
const ZDT = new RRuleTemporal({ rruleString: "DTSTART;TZID=UTC:20000101T000000\nRRULE:FREQ=DAILY;COUNT=1" }).all()[0]!
  .constructor as unknown as new (epochNanoseconds: bigint, timeZone: string) => ZonedDateTime

/** Local wall time of instant t in zone, as naive ms. */
const localNaive = (zone: string, t: number): number =>
  new ZDT(BigInt(t) * 1_000_000n, zone).toPlainDateTime().toZonedDateTime("UTC").epochMilliseconds
/** Temporal's own "compatible" resolution of a naive local time. */
const compatible = (zone: string, naive: number): number =>
  new ZDT(BigInt(naive) * 1_000_000n, "UTC").toPlainDateTime().toZonedDateTime(zone, { disambiguation: "compatible" })
    .epochMilliseconds

const ZONES = ["UTC", "America/New_York", "Europe/London", "Australia/Sydney", "Asia/Kolkata"] as const
const TRANSITIONS_1H: ReadonlyArray<readonly [string, string]> = [
  ["America/New_York", "2026-03-08T07:00:00Z"],
  ["America/New_York", "2026-11-01T06:00:00Z"],
  ["Europe/London", "2026-03-29T01:00:00Z"],
  ["Europe/London", "2026-10-25T01:00:00Z"],
  ["Australia/Sydney", "2026-04-04T16:00:00Z"],
  ["Australia/Sydney", "2026-10-03T16:00:00Z"],
  ["Asia/Kolkata", "2026-03-08T00:00:00Z"],
  ["UTC", "2026-03-08T00:00:00Z"]
]
// Plus a two-hour change and a 30-minute one (for the properties that do not assume one-hour changes).
const TRANSITIONS: ReadonlyArray<readonly [string, string]> = [
  ...TRANSITIONS_1H,
  ["Antarctica/Troll", "2026-03-29T01:00:00Z"], // +00 -> +02
  ["Antarctica/Troll", "2026-10-25T01:00:00Z"], // +02 -> +00
  ["Australia/Lord_Howe", "2026-04-04T15:00:00Z"], // +11 -> +10:30
  ["Australia/Lord_Howe", "2026-10-03T15:30:00Z"] // +10:30 -> +11
]

/** A rule whose local times are simple enough for the reference expansion. */
type Simple = {
  readonly freq: "HOURLY" | "DAILY" | "WEEKLY" | "YEARLY"
  readonly interval: number
  readonly hours: ReadonlyArray<number> // empty: every hour (HOURLY only)
  readonly minutes: ReadonlyArray<number>
  readonly days: ReadonlyArray<number> // Monday = 0; empty: every day
  readonly months: ReadonlyArray<number> // YEARLY only
  readonly ordinal: number // YEARLY only: the Nth of `days` in the month (1, 2 or -1)
}

const subset = <A>(values: ReadonlyArray<A>, min = 1) =>
  FastCheck.subarray([...values], { minLength: min }).map((xs) => [...new Set(xs)])

const none = FastCheck.constant([] as ReadonlyArray<number>)
const simpleRule: FastCheck.Arbitrary<Simple> = FastCheck.oneof(
  FastCheck.record({
    freq: FastCheck.constant("HOURLY" as const),
    interval: FastCheck.constantFrom(1, 1, 2, 3),
    hours: none,
    minutes: subset([0, 15, 20, 30, 45, 59]),
    days: none,
    months: none,
    ordinal: FastCheck.constant(0)
  }),
  FastCheck.record({
    freq: FastCheck.constant("DAILY" as const),
    interval: FastCheck.constantFrom(1, 1, 2, 3),
    hours: subset([0, 1, 2, 3, 12, 23]),
    minutes: subset([0, 30, 45]),
    days: FastCheck.oneof(none, subset([0, 2, 4, 6])),
    months: none,
    ordinal: FastCheck.constant(0)
  }),
  FastCheck.record({
    freq: FastCheck.constant("WEEKLY" as const),
    interval: FastCheck.constantFrom(1, 2),
    hours: subset([1, 2, 3, 9]),
    minutes: subset([0, 30]),
    days: subset([0, 1, 2, 3, 4, 5, 6]),
    months: none,
    ordinal: FastCheck.constant(0)
  }),
  // Sundays on which clocks change (2SU/1SU in March, April, October, November;
  // -1SU in March and October), at the hours they change: often every start
  // is in a gap or just after one.
  FastCheck.record({
    freq: FastCheck.constant("YEARLY" as const),
    interval: FastCheck.constant(1),
    hours: subset([0, 1, 2, 3]),
    minutes: subset([0, 30]),
    days: FastCheck.constant([6] as ReadonlyArray<number>),
    months: subset([3, 4, 10, 11]),
    ordinal: FastCheck.constantFrom(1, 2, -1)
  })
)

const simpleText = (s: Simple): string =>
  [
    `FREQ=${s.freq}`,
    s.interval === 1 ? undefined : `INTERVAL=${s.interval}`,
    s.months.length === 0 ? undefined : `BYMONTH=${s.months.join(",")}`,
    s.days.length === 0 ? undefined : `BYDAY=${
      s.days.map((d) => `${s.ordinal === 0 ? "" : s.ordinal}${["MO", "TU", "WE", "TH", "FR", "SA", "SU"][d]}`).join(",")
    }`,
    s.hours.length === 0 ? undefined : `BYHOUR=${s.hours.join(",")}`,
    `BYMINUTE=${s.minutes.join(",")}`
  ].filter((x) => x !== undefined).join(";")

/**
 * Reference expansion: walks local dates around DTSTART's date, applies the
 * rule's fields and INTERVAL phase (counted from DTSTART's hour, day, week or
 * year) on the wall clock, with DTSTART's second (RFC 5545: no BYSECOND, so
 * the second comes from DTSTART), resolves each local time with Temporal
 * ("compatible") and keeps the instants in [max(from, dtstart), to).
 */
const reference = (s: Simple, zone: string, start: number, from: number, to: number): Array<number> => {
  const dtstart = Math.floor(start / 1000) * 1000
  const dtLocal = localNaive(zone, dtstart)
  const second = dtLocal - Math.floor(dtLocal / MINUTE) * MINUTE
  const dtDate = Math.floor(dtLocal / DAY) * DAY
  const dtMonday = dtDate - ((new Date(dtDate).getUTCDay() + 6) % 7) * DAY
  const dtHour = Math.floor(dtLocal / HOUR) * HOUR
  const out = new Set<number>()
  const lastDate = Math.floor((localNaive(zone, to) + 2 * DAY) / DAY) * DAY
  // from the day before DTSTART's: a gap time there may shift past the start (a gap ending at midnight)
  const firstDate = Math.max(dtDate - DAY, Math.floor((localNaive(zone, from) - 2 * DAY) / DAY) * DAY)
  const mod = (a: number, b: number) => ((a % b) + b) % b
  for (let date = firstDate; date <= lastDate; date += DAY) {
    const weekday = (new Date(date).getUTCDay() + 6) % 7
    if (s.days.length > 0 && !s.days.includes(weekday)) continue
    if (s.freq === "YEARLY") {
      const d = new Date(date)
      const dayOfMonth = d.getUTCDate()
      const monthLength = new Date(Date.UTC(d.getUTCFullYear(), d.getUTCMonth() + 1, 0)).getUTCDate()
      if (!s.months.includes(d.getUTCMonth() + 1)) continue
      if (s.ordinal > 0 && Math.ceil(dayOfMonth / 7) !== s.ordinal) continue
      if (s.ordinal < 0 && dayOfMonth + 7 <= monthLength) continue // -1: the last one
    }
    if (s.freq === "DAILY" && mod((date - dtDate) / DAY, s.interval) !== 0) continue
    if (s.freq === "WEEKLY" && mod(Math.floor((date - dtMonday) / (7 * DAY)), s.interval) !== 0) continue
    const hours = s.hours.length > 0 ? s.hours : Array.from({ length: 24 }, (_, h) => h)
    for (const h of hours) {
      if (s.freq === "HOURLY" && mod((date + h * HOUR - dtHour) / HOUR, s.interval) !== 0) continue
      for (const m of s.minutes) {
        const instant = compatible(zone, date + h * HOUR + m * MINUTE + second)
        if (instant >= dtstart && instant >= from && instant < to) out.add(instant)
      }
    }
  }
  return [...out].sort((a, b) => a - b)
}

/**
 * A lower bound of the distance between consecutive starts, in minutes: the
 * rule's local times plus each shifted an hour later (a one-hour gap moves a
 * start forward by an hour), on the rule's cycle.
 */
const minSpacingMinutes = (s: Simple): number => {
  const times: Array<number> = []
  if (s.freq === "HOURLY") {
    const cycle = 60 * s.interval
    for (const m of s.minutes) times.push(m, (m + 60) % cycle)
    return circularMin(times, cycle)
  }
  const dayTimes = s.hours.flatMap((h) => s.minutes.map((m) => h * 60 + m))
  if (s.freq === "DAILY" || s.freq === "YEARLY") return circularMin(dayTimes.flatMap((t) => [t, (t + 60) % 1440]), 1440)
  const weekTimes = s.days.flatMap((d) => dayTimes.map((t) => d * 1440 + t))
  return circularMin(weekTimes.flatMap((t) => [t, (t + 60) % 10080]), 10080)
}
const circularMin = (values: ReadonlyArray<number>, cycle: number): number => {
  const v = [...new Set(values)].sort((a, b) => a - b)
  if (v.length === 1) return cycle
  let min = cycle - v[v.length - 1]! + v[0]!
  for (let i = 1; i < v.length; i++) min = Math.min(min, v[i]! - v[i - 1]!)
  return min
}

// Rules for the self-consistency properties: the simple ones plus monthly,
// yearly, COUNT and UNTIL.
const anyRule: FastCheck.Arbitrary<string> = FastCheck.oneof(
  { weight: 4, arbitrary: simpleRule.map(simpleText) },
  {
    weight: 2,
    arbitrary: FastCheck.tuple(
      FastCheck.constantFrom("BYMONTHDAY=1", "BYMONTHDAY=-1", "BYMONTHDAY=15,31", "BYDAY=1SU", "BYDAY=-1FR,2MO", "BYDAY=MO"),
      FastCheck.constantFrom(1, 2),
      FastCheck.constantFrom("1", "2", "3", "2,14")
    ).map(([days, interval, hours]) => `FREQ=MONTHLY;INTERVAL=${interval};${days};BYHOUR=${hours};BYMINUTE=30`)
  },
  {
    weight: 1,
    arbitrary: FastCheck.constantFrom(
      "FREQ=YEARLY;BYMONTH=3;BYDAY=-1SU;BYHOUR=1;BYMINUTE=0",
      "FREQ=YEARLY;BYMONTH=3;BYDAY=2SU;BYHOUR=2;BYMINUTE=0,30",
      "FREQ=YEARLY;BYMONTH=3;BYDAY=2SU;BYHOUR=3;BYMINUTE=15",
      "FREQ=YEARLY;BYMONTH=3,10;BYDAY=-1SU;BYHOUR=1;BYMINUTE=0",
      "FREQ=YEARLY;BYMONTH=4,10;BYDAY=1SU;BYHOUR=2;BYMINUTE=30",
      "FREQ=YEARLY;BYMONTH=11;BYMONTHDAY=1;BYHOUR=1;BYMINUTE=30"
    )
  },
  {
    weight: 2,
    arbitrary: FastCheck.tuple(simpleRule.map(simpleText), FastCheck.integer({ min: 1, max: 200 })).map(([r, n]) =>
      `${r};COUNT=${n}`
    )
  },
  {
    weight: 1,
    arbitrary: FastCheck.tuple(simpleRule.map(simpleText), FastCheck.constantFrom("20260310T000000Z", "20261101T063000Z", "20270101T000000Z"))
      .map(([r, u]) => `${r};UNTIL=${u}`)
  }
)

const zoneAndInstantFrom = (zones: ReadonlyArray<string>, transitions: ReadonlyArray<readonly [string, string]>) =>
  FastCheck.oneof(
    FastCheck.tuple(FastCheck.constantFrom(...zones), FastCheck.integer({ min: Date.UTC(2024, 0, 1), max: Date.UTC(2030, 0, 1) })),
    FastCheck.tuple(FastCheck.constantFrom(...transitions), FastCheck.integer({ min: -36 * HOUR, max: 36 * HOUR })).map(
      ([[zone, t], delta]) => [zone, at(t) + delta] as const
    )
  )
const zoneAndInstant = zoneAndInstantFrom([...ZONES, "Antarctica/Troll", "Australia/Lord_Howe"], TRANSITIONS)
/** Zones whose changes are one hour, as the spacing bound below assumes. */
const zoneAndInstant1h = zoneAndInstantFrom(ZONES, TRANSITIONS_1H)

const parseOrUndefined = (rrule: string, timezone: string, start: number, durationSeconds: number) => {
  const r = parseRecurrence({ rrule, timezone, start, durationSeconds })
  return Either.isRight(r) ? r.right : undefined
}

describe("Rrule: properties", () => {
  it.prop("activePeriod(t) agrees with a scan of periodsBetween around t", [
    anyRule,
    zoneAndInstant,
    FastCheck.integer({ min: -40 * DAY, max: 2 * DAY }),
    FastCheck.integer({ min: 1, max: 3 * 24 * 60 })
  ], ([rrule, [zone, t], startOffset, durationMinutes]) => {
    const r = parseOrUndefined(rrule, zone, t + startOffset, durationMinutes * 60)
    if (r === undefined) return // e.g. UNTIL before the start, or COUNT spent before t
    const containing = periodsBetween(r, t - 1, t + 1).filter((p) => p.start <= t && t < p.end)
    const expected = containing.length === 0 ? undefined : containing[containing.length - 1]
    expect(activePeriod(r, t)).toEqual(expected)
    // and at the edges of the neighbouring periods
    for (const p of periodsBetween(r, t - 3 * HOUR, t + 3 * HOUR).slice(0, 3)) {
      expect(activePeriod(r, p.start)?.start).toBe(p.start)
      const atEnd = activePeriod(r, p.end)
      expect(atEnd === undefined || atEnd.start > p.start).toBe(true)
    }
  }, { fastCheck: { numRuns: 300 } })

  it.prop("periods are strictly increasing, and do not overlap when the duration is below the rule's spacing", [
    simpleRule,
    zoneAndInstant1h,
    FastCheck.double({ min: 0, max: 1, noNaN: true })
  ], ([s, [zone, t], fraction]) => {
    const spacing = minSpacingMinutes(s)
    const durationMinutes = Math.max(1, Math.floor((spacing - 1) * fraction))
    const r = parseOrUndefined(simpleText(s), zone, t - 3 * DAY, durationMinutes * 60)
    expect(r).toBeDefined()
    const periods = nextPeriods(r!, t - DAY, 40)
    expect(periods.length).toBe(40)
    for (let i = 1; i < periods.length; i++) {
      expect(periods[i]!.start).toBeGreaterThan(periods[i - 1]!.start)
      if (durationMinutes < spacing) expect(periods[i]!.start).toBeGreaterThanOrEqual(periods[i - 1]!.end)
    }
    // nextPeriods and periodsBetween agree
    const last = periods[periods.length - 1]!
    expect(periodsBetween(r!, t - DAY, last.start + 1).filter((p) => p.start >= t - DAY)).toEqual(periods)
  }, { fastCheck: { numRuns: 200 } })

  it.prop("starts agree with a reference expansion on the wall clock resolved by Temporal (compatible)", [
    simpleRule,
    FastCheck.constantFrom(...TRANSITIONS),
    FastCheck.integer({ min: -4 * DAY, max: DAY })
  ], ([s, [zone, transition], startOffset]) => {
    const start = at(transition) + startOffset
    const r = parseOrUndefined(simpleText(s), zone, start, 60)
    expect(r).toBeDefined()
    const from = at(transition) - 2 * DAY
    const to = at(transition) + 2 * DAY
    const expected = reference(s, zone, start, from, to)
    const actual = periodsBetween(r!, from, to).map((p) => p.start).filter((x) => x >= from)
    expect(actual.map(iso)).toEqual(expected.map(iso))
  }, { fastCheck: { numRuns: 150 } })
})
