import { Either } from "effect"
import { ValidationError } from "./Errors.js"
import { excerpt } from "./Text.js"

/*
 * No Node-only modules here: the API's contract (src/<Domain>/Api.ts) reaches this module, and the
 * dashboard type-checks against that contract in the browser's types (web/src/types.ts).
 */

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i

/** Ids are UUIDs; anything else names nothing (404, never a database error). */
export const isUuid = (value: string): boolean => UUID.test(value)

/** A list's `monitorId` filter: absent, a UUID, or a 400 naming the parameter. */
export const monitorIdParam = (value: string | undefined): Either.Either<string | undefined, ValidationError> =>
  value === undefined || isUuid(value)
    ? Either.right(value)
    : Either.left(new ValidationError({ path: "monitorId", message: `monitorId must be a monitor id (a UUID), not '${excerpt(value)}'.` }))

const HEX = Array.from({ length: 256 }, (_, i) => i.toString(16).padStart(2, "0"))
/** Random bytes drawn 4 KiB at a time (one system call per ~400 ids instead of one per 128). */
const pool = new Uint8Array(4096)
let poolAt = pool.length

/**
 * A new UUID of version 7 (RFC 9562): 48 bits of Unix time in milliseconds, then 74 random bits
 * (from a pool of random bytes, hex-encoded by table: much cheaper than `randomUUID` and slicing,
 * on the ping path; docs/performance.md#figures-behind-code-comments). Ids made one after the other sort by time, so rows keyed by them are
 * added at the end of their index instead of at a random place: runs are written thousands of
 * times a second, and a random key touched a random index page each time.
 */
export const newTimeOrderedId = (now: number): string => {
  if (poolAt + 10 > pool.length) {
    crypto.getRandomValues(pool)
    poolAt = 0
  }
  const r = pool
  const i = poolAt
  poolAt += 10
  const ms = Math.max(0, Math.floor(now))
  // 48 bits of milliseconds as two 24-bit halves (numbers past 2^32 have no bitwise operators).
  const time = (Math.floor(ms / 0x1000000) % 0x1000000).toString(16).padStart(6, "0") + (ms % 0x1000000).toString(16).padStart(6, "0")
  // version 7 in the high nibble of byte 6; the variant (10xx) in the high bits of byte 8
  return `${time.slice(0, 8)}-${time.slice(8)}-7${HEX[r[i]!]![1]}${HEX[r[i + 1]!]}-${HEX[(r[i + 2]! & 0x3f) | 0x80]}${HEX[r[i + 3]!]}-` +
    `${HEX[r[i + 4]!]}${HEX[r[i + 5]!]}${HEX[r[i + 6]!]}${HEX[r[i + 7]!]}${HEX[r[i + 8]!]}${HEX[r[i + 9]!]}`
}
