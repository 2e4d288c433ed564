import { createHmac, randomBytes, timingSafeEqual } from "node:crypto"

/** Lowercase hex HMAC-SHA256 of the exact body bytes, keyed with the webhook's secret. */
export const sign = (secret: string, body: string | Uint8Array): string =>
  createHmac("sha256", secret).update(body).digest("hex")

/** What a receiver does: recompute over the raw body and compare in constant time. */
export const verify = (secret: string, body: string | Uint8Array, signature: string): boolean => {
  const expected = Buffer.from(sign(secret, body), "utf8")
  const given = Buffer.from(signature, "utf8")
  return expected.length === given.length && timingSafeEqual(expected, given)
}

/** A new signing secret: 32 random bytes, hex. */
export const newSecret = (): string => randomBytes(32).toString("hex")
