import { Either } from "effect"
import { ValidationError } from "./Errors.js"
import { excerpt } from "./Text.js"

/**
 * Instants that requests give (query-string dates, cursors, body timestamps). JavaScript accepts
 * years from −271821 to 275760 and PostgreSQL others again; a year outside ISO 8601's 0001–9999
 * is never what a user meant, so it is a 400 naming the parameter instead of a database error.
 */

/** 0001-01-01T00:00:00.000Z */
export const MIN_INSTANT_MS = -62_135_596_800_000
/** 9999-12-31T23:59:59.999Z */
export const MAX_INSTANT_MS = 253_402_300_799_999

export const INSTANT_RANGE_TEXT = "between 0001-01-01 and 9999-12-31"

/** Whether epoch milliseconds are an instant the service accepts (years 0001–9999). */
export const inInstantRange = (ms: number): boolean => Number.isFinite(ms) && ms >= MIN_INSTANT_MS && ms <= MAX_INSTANT_MS

/**
 * A timestamp parameter (`from`, `to`, …): an ISO 8601 timestamp in years 0001–9999, else a 400
 * that names the parameter and quotes at most the start of what was given.
 */
export const parseInstantParam = (path: string, value: string): Either.Either<number, ValidationError> => {
  const ms = Date.parse(value)
  if (Number.isNaN(ms)) {
    return Either.left(
      new ValidationError({
        path,
        message: `${path} must be an ISO 8601 timestamp such as 2026-01-31T00:00:00Z, not '${excerpt(value)}'.`
      })
    )
  }
  if (!inInstantRange(ms)) {
    return Either.left(
      new ValidationError({ path, message: `${path} must be a date ${INSTANT_RANGE_TEXT}, not '${excerpt(value)}'.` })
    )
  }
  return Either.right(ms)
}

/**
 * An instant as the API writes it (ISO 8601 UTC, milliseconds: `2026-01-31T12:00:00.000Z`), from a
 * Date or epoch milliseconds; null stays null (a column that may be empty).
 */
export function iso(at: Date | number): string
export function iso(at: Date | number | null): string | null
export function iso(at: Date | number | null): string | null {
  if (at === null) return null
  return (typeof at === "number" ? new Date(at) : at).toISOString()
}
