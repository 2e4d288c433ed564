import { randomBytes, scrypt, timingSafeEqual } from "node:crypto"

/**
 * Password hashing with scrypt (memory-hard, from node:crypto). A stored hash carries its own
 * parameters and salt, `scrypt$N$r$p$<salt b64url>$<hash b64url>`, so the cost can be raised
 * without invalidating existing passwords: they keep verifying with their own parameters and are
 * hashed again with the current ones at their next successful sign-in (docs/dashboard-auth.md).
 */

export interface ScryptParams {
  readonly N: number
  readonly r: number
  readonly p: number
}

/**
 * N = 2^17, r = 8, p = 1 (OWASP's scrypt recommendation): 128 MiB per hash, and a few hundred
 * milliseconds of one core (measured: docs/performance.md#figures-behind-code-comments). Hashes run on libuv's thread
 * pool; Accounts bounds how many run at once (src/Auth/Limits.ts).
 */
export const SCRYPT_PARAMS: ScryptParams = { N: 1 << 17, r: 8, p: 1 }
const KEY_LENGTH = 32
const SALT_BYTES = 16

export const MIN_PASSWORD_LENGTH = 8
export const MAX_PASSWORD_LENGTH = 1024

/** scrypt needs 128·N·r bytes; twice that leaves room, and refuses absurd stored parameters. */
const maxmemFor = (N: number, r: number) => 256 * N * r + 1024 * 1024

const derive = (password: string, salt: Buffer, params: ScryptParams, length: number) =>
  new Promise<Buffer>((resolve, reject) =>
    scrypt(password.normalize("NFKC"), salt, length, { ...params, maxmem: maxmemFor(params.N, params.r) }, (error, key) =>
      error ? reject(error) : resolve(key))
  )

/** A new hash with the current parameters (another set only for the tests of old hashes). */
export const hashPassword = async (password: string, params: ScryptParams = SCRYPT_PARAMS): Promise<string> => {
  const salt = randomBytes(SALT_BYTES)
  const key = await derive(password, salt, params, KEY_LENGTH)
  return `scrypt$${params.N}$${params.r}$${params.p}$${salt.toString("base64url")}$${key.toString("base64url")}`
}

/**
 * What an unknown user's password is compared with, so that both answers cost one hash at the
 * current parameters. Its key is random: no password matches it (and a match would be ignored).
 */
const dummy = { ...SCRYPT_PARAMS, salt: randomBytes(SALT_BYTES), hash: randomBytes(KEY_LENGTH) }

/** True when `password` matches `stored`; a missing or unreadable hash never matches (but costs the same). */
export const verifyPassword = async (password: string, stored: string | null): Promise<boolean> => {
  const parsed = stored === null ? undefined : parseHash(stored)
  const target = parsed ?? dummy
  const key = await derive(password, target.salt, target, target.hash.length)
  return parsed !== undefined && key.length === target.hash.length && timingSafeEqual(key, target.hash)
}

/** A stored hash made with other parameters than the current ones: hash the password again. */
export const needsRehash = (stored: string): boolean => {
  const parsed = parseHash(stored)
  return parsed === undefined || parsed.N !== SCRYPT_PARAMS.N || parsed.r !== SCRYPT_PARAMS.r || parsed.p !== SCRYPT_PARAMS.p ||
    parsed.hash.length !== KEY_LENGTH
}

const parseHash = (stored: string) => {
  const [scheme, n, r, p, salt, hash] = stored.split("$")
  if (scheme !== "scrypt" || salt === undefined || hash === undefined) return undefined
  const N = Number(n), R = Number(r), P = Number(p)
  if (![N, R, P].every((v) => Number.isInteger(v) && v > 0) || N > 1 << 20 || R > 32 || P > 16) return undefined
  const hashBytes = Buffer.from(hash, "base64url")
  if (hashBytes.length < 16) return undefined
  return { N, r: R, p: P, salt: Buffer.from(salt, "base64url"), hash: hashBytes }
}

/** Why a new password is refused, or undefined when it is acceptable. */
export const passwordProblem = (password: string): string | undefined => {
  if (password.length < MIN_PASSWORD_LENGTH) return `The password must be at least ${MIN_PASSWORD_LENGTH} characters long.`
  if (password.length > MAX_PASSWORD_LENGTH) return `The password must be at most ${MAX_PASSWORD_LENGTH} characters long.`
  return undefined
}

/** NUL (which PostgreSQL refuses in text) and the other control characters. */
export const CONTROL_CHARACTERS = /[\u0000-\u001f\u007f]/

/**
 * How an email is taken from a request: trimmed and in NFC (the form jobmon_email_key folds;
 * sql/0016_sign_in_limits.sql). Keys and comparisons are the database's, through that function.
 */
export const cleanEmail = (email: string): string => email.trim().normalize("NFC")

/** A pragmatic address check: one @, something before it, a dotted domain after it, no spaces or control characters. */
export const emailProblem = (email: string): string | undefined => {
  if (CONTROL_CHARACTERS.test(email)) return "email must not contain control characters (such as NUL)."
  return email.length <= 254 && /^[^\s@]+@[^\s@]+\.[^\s@]+$/.test(email)
    ? undefined
    : `'${email.slice(0, 100)}' is not a valid email address (expected name@example.com).`
}
