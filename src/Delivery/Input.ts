import { hasNul } from "../Domain/Text.js"

/**
 * Small rules for what the delivery endpoints take and say back (pure, no Effect services).
 */

/** The most of a user's value that an error message repeats. */
export const ECHO_LIMIT = 100

/**
 * A user's value as an error message may repeat it: at most ECHO_LIMIT characters, then `…`.
 * (A message that echoes a whole value can be made as large as the body, and carries whatever the
 * value carried into logs and screens.)
 */
export const echo = (value: string, limit = ECHO_LIMIT): string =>
  value.length <= limit ? value : `${value.slice(0, limit)}…`

/**
 * The first of the fields (in order) whose text holds a NUL character, or undefined. PostgreSQL
 * text cannot store NUL; such a value is the client's mistake (400), never a database error.
 */
export const fieldWithNul = (fields: ReadonlyArray<readonly [string, string | null | undefined]>): string | undefined =>
  fields.find(([, value]) => typeof value === "string" && hasNul(value))?.[0]
