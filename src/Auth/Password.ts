import { randomBytes, scrypt, timingSafeEqual } from "node:crypto"

/**
 * Password hashing with scrypt (memory-hard, from node:crypto). A stored hash carries its own
 * parameters and salt, `scrypt$N$r$p$<salt b64url>$<hash b64url>`, so the cost can be raised later
 * without invalidating existing passwords.
 */

/** N = 2^15, r = 8, p = 1: 32 MiB and a few tens of milliseconds per hash on this class of machine. */
export const SCRYPT_PARAMS = { N: 1 << 15, r: 8, p: 1 } as const
const KEY_LENGTH = 32
const SALT_BYTES = 16

export const MIN_PASSWORD_LENGTH = 8
export const MAX_PASSWORD_LENGTH = 1024

const derive = (password: string, salt: Buffer, N: number, r: number, p: number, length: number) =>
  new Promise<Buffer>((resolve, reject) =>
    scrypt(password.normalize("NFKC"), salt, length, { N, r, p, maxmem: 256 * N * r + 1024 * 1024 }, (error, key) =>
      error ? reject(error) : resolve(key))
  )

export const hashPassword = async (password: string): Promise<string> => {
  const salt = randomBytes(SALT_BYTES)
  const { N, r, p } = SCRYPT_PARAMS
  const key = await derive(password, salt, N, r, p, KEY_LENGTH)
  return `scrypt$${N}$${r}$${p}$${salt.toString("base64url")}$${key.toString("base64url")}`
}

/** A hash to compare against when the user is unknown, so both answers take as long. */
let dummy: Promise<string> | undefined
const dummyHash = () => (dummy ??= hashPassword(randomBytes(16).toString("hex")))

/** True when `password` matches `stored`; a missing or unreadable hash never matches (but costs the same). */
export const verifyPassword = async (password: string, stored: string | null): Promise<boolean> => {
  const parsed = stored === null ? undefined : parseHash(stored)
  const target = parsed ?? parseHash(await dummyHash())!
  const key = await derive(password, target.salt, target.N, target.r, target.p, target.hash.length)
  return parsed !== undefined && key.length === target.hash.length && timingSafeEqual(key, target.hash)
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

/** A pragmatic address check: one @, something before it, a dotted domain after it, no spaces. */
export const emailProblem = (email: string): string | undefined =>
  email.length <= 254 && /^[^\s@]+@[^\s@]+\.[^\s@]+$/.test(email)
    ? undefined
    : `'${email.slice(0, 100)}' is not a valid email address (expected name@example.com).`
