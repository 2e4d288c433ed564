import { Either } from "effect"
import * as fs from "node:fs"
import { describe, expect, it } from "vitest"
import { nextPeriods, parseRecurrence } from "../../src/Maintenance/Rrule.js"

/** The DST example tables of docs/maintenance.md against the recurrence the service computes. */

const page = fs.readFileSync(new URL("../../docs/maintenance.md", import.meta.url), "utf8")
const examples = [...page.matchAll(/<!-- dst-example: (\S+) (\d+) (\S+) -->\n((?:\s*\|.*\n)+)/g)].map((m) => ({
  rrule: m[1]!,
  durationSeconds: Number(m[2]),
  timezone: m[3]!,
  rows: [...m[4]!.matchAll(/^\s*\| (\d{4}-\d{2}-\d{2}) \| (\d{2}:\d{2}) \| (\d{2}:\d{2}) \|/gm)].map((r) => ({
    day: r[1]!,
    start: `${r[1]}T${r[2]}:00.000Z`,
    end: `${r[1]}T${r[3]}:00.000Z`
  }))
}))

describe("docs/maintenance.md DST examples", () => {
  it("has at least one example table", () => {
    expect(examples.length).toBeGreaterThanOrEqual(1)
    expect(examples[0]!.rows.length).toBeGreaterThanOrEqual(4)
  })

  for (const example of examples) {
    it(`${example.rrule} in ${example.timezone}: each row is the period the service computes for that day`, () => {
      const recurrence = parseRecurrence({
        rrule: example.rrule,
        timezone: example.timezone,
        durationSeconds: example.durationSeconds,
        start: Date.parse(`${example.rows[0]!.day}T00:00:00Z`) - 30 * 86_400_000
      })
      if (Either.isLeft(recurrence)) throw new Error(`the page's rule does not parse: ${JSON.stringify(recurrence.left)}`)
      for (const row of example.rows) {
        const [period] = nextPeriods(recurrence.right, Date.parse(`${row.day}T00:00:00Z`), 1)
        expect({ day: row.day, start: new Date(period!.start).toISOString(), end: new Date(period!.end).toISOString() }).toEqual(row)
      }
    })
  }
})
