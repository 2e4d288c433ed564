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

// ---- Standard Webhooks (docs/webhook-verification.md) ----------------------------------------------

/** A secret in the Standard Webhooks serialization: `whsec_` and the base64 of the key. */
const WHSEC = /^whsec_([A-Za-z0-9+/]+={0,2})$/

/** Whether a secret given at creation that starts with `whsec_` is a well-formed one (24 to 64 bytes). */
export const isWellFormedWhsec = (secret: string): boolean => {
  const m = WHSEC.exec(secret)
  if (m === null || m[1]!.length % 4 !== 0) return false
  const bytes = Buffer.from(m[1]!, "base64").length
  return bytes >= 24 && bytes <= 64
}

/**
 * The HMAC key of the Standard Webhooks signature. A secret of the standard's form,
 * `whsec_<base64>`, is used as the standard says: the key is the decoded bytes (so it is given
 * unchanged to the official libraries). Any other secret (the generated 64 hex characters, or one
 * given at creation) is its own UTF-8 bytes: the same key as X-Service-Signature's; its
 * `whsec_` form is `"whsec_" + base64(secret)`.
 */
export const standardKey = (secret: string): Buffer => {
  const m = WHSEC.exec(secret)
  return m !== null && isWellFormedWhsec(secret) ? Buffer.from(m[1]!, "base64") : Buffer.from(secret, "utf8")
}

/**
 * The `webhook-signature` header: `v1,` and the base64 HMAC-SHA256 of `<id>.<timestamp>.<body>`,
 * keyed with standardKey(secret). `timestamp` is the attempt's Unix time in seconds (the
 * `webhook-timestamp` header), `id` the delivery id (`webhook-id`).
 */
export const standardSignature = (secret: string, id: string, timestampSeconds: number, body: string): string =>
  `v1,${createHmac("sha256", standardKey(secret)).update(`${id}.${timestampSeconds}.${body}`, "utf8").digest("base64")}`
