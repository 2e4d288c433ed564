import { Either } from "effect"
import { excerpt } from "../Domain/Text.js"

/** A statistics window: `<n>h`, `<n>d` or `<n>w`, from 1 hour to 400 days (docs/decisions.md#statistics). */
export interface StatsWindow {
  /** The window exactly as the caller wrote it; echoed as `period`. */
  readonly text: string
  readonly millis: number
}

export const DEFAULT_WINDOW = "30d"

const HOUR = 3_600_000
const UNIT_HOURS = { h: 1, d: 24, w: 24 * 7 } as const
const MIN_HOURS = 1
const MAX_HOURS = 400 * 24

export const parseWindow = (text: string): Either.Either<StatsWindow, string> => {
  const match = /^(\d{1,7})([hdw])$/.exec(text)
  const hours = match === null ? Number.NaN : Number(match[1]) * UNIT_HOURS[match[2] as keyof typeof UNIT_HOURS]
  if (!(hours >= MIN_HOURS && hours <= MAX_HOURS)) {
    return Either.left(
      `window must be a whole number of hours, days or weeks such as 24h, 30d or 2w, from 1h to 400d; got '${excerpt(text)}'.`
    )
  }
  return Either.right({ text, millis: hours * HOUR })
}
