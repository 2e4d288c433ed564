import { randomUUID } from "node:crypto"

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i

/** Ids are UUIDs; anything else names nothing (404, never a database error). */
export const isUuid = (value: string): boolean => UUID.test(value)

/**
 * A new UUID of version 7 (RFC 9562): 48 bits of Unix time in milliseconds, then random bits (those
 * of a version 4 UUID from `randomUUID`). Ids made one after the other sort by time, so rows keyed
 * by them are added at the end of their index instead of at a random place: runs are written
 * thousands of times a second, and a random key touched a random index page each time.
 */
export const newTimeOrderedId = (now: number): string => {
  const random = randomUUID()
  const time = Math.max(0, Math.floor(now)).toString(16).padStart(12, "0").slice(-12)
  return `${time.slice(0, 8)}-${time.slice(8)}-7${random.slice(15)}`
}
