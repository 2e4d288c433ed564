import { Schema } from "effect"

/**
 * Text that the service stores, and text that it quotes back (docs/decisions.md#errors: no input may produce
 * a 500; a message says what was wrong without echoing a mebibyte).
 */

/** PostgreSQL `text` and `jsonb` cannot hold U+0000: a NUL reaching a query is a database error. */
export const hasNul = (value: string): boolean => value.includes("\u0000")

export const NUL_MESSAGE = "must not contain the NUL character (\\u0000)"

/**
 * A refinement for every request string that is stored (names, tags, notes, reasons, zones…).
 * Put it first in a field's pipe, so that the 400 names the field and says why, whatever the other
 * checks would say: `tags.0: must not contain the NUL character (\u0000)`.
 */
export const noNul = <A extends string, I, R>(self: Schema.Schema<A, I, R>) =>
  self.pipe(Schema.filter((value) => !hasNul(value) || NUL_MESSAGE, { jsonSchema: {} }))

/** A string that can be stored: Schema.String without NUL characters. */
export const StoredString = noNul(Schema.String)

/** How much of a bad value an error message quotes. */
export const MAX_QUOTED_CHARS = 100

/**
 * At most the first {@link MAX_QUOTED_CHARS} characters of `value`, for an error message; a longer
 * value is cut (never inside a surrogate pair) and says how long it was.
 */
export const excerpt = (value: string, max: number = MAX_QUOTED_CHARS): string => {
  if (value.length <= max) return value
  let end = max
  const last = value.charCodeAt(end - 1)
  if (last >= 0xd800 && last <= 0xdbff) end--
  return `${value.slice(0, end)}… (${value.length} characters)`
}
