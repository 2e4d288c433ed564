import { createHash } from "node:crypto"

/** What one request's take from its bucket says. */
export interface RateVerdict {
  /** Seconds to wait before the next request can pass; 0 when this one passes. */
  readonly retryAfterSeconds: number
  readonly headers: Readonly<Record<string, string>>
}

/** A token bucket: `tokens` left (fractional) as of `refilledAt` (epoch ms). */
export interface Bucket {
  tokens: number
  refilledAt: number
}

/** Tops the bucket up for the time passed since it was last refilled (never past `burst`). */
const refill = (bucket: Bucket, now: number, ratePerSecond: number, burst: number): void => {
  bucket.tokens = Math.min(burst, bucket.tokens + (Math.max(0, now - bucket.refilledAt) / 1000) * ratePerSecond)
  bucket.refilledAt = now
}

/**
 * Takes one token for a request at `now`: answers 0 when it passes, else the whole seconds to wait
 * (at least 1). Shared by the API's limit per credential and the ping intake's per monitor.
 */
export const takeToken = (bucket: Bucket, now: number, ratePerSecond: number, burst: number): number => {
  refill(bucket, now, ratePerSecond, burst)
  if (bucket.tokens >= 1) {
    bucket.tokens -= 1
    return 0
  }
  return Math.max(1, Math.ceil((1 - bucket.tokens) / ratePerSecond))
}

/** `X-RateLimit-*` of a bucket: the burst, whole tokens left, seconds until it is full again. */
export const rateLimitHeaders = (bucket: Bucket, ratePerSecond: number, burst: number): Record<string, string> => ({
  "x-ratelimit-limit": String(burst),
  "x-ratelimit-remaining": String(Math.max(0, Math.floor(bucket.tokens))),
  "x-ratelimit-reset": String(Math.ceil((burst - bucket.tokens) / ratePerSecond))
})

/**
 * Per-credential token buckets for the API's own endpoints (docs/decisions.md#rate-limits): `ratePerSecond`
 * sustained, bursts of `burst`. Keys are hashes of the credential, never the credential itself.
 * Time is passed in (the caller reads it from Clock).
 */
export class RateLimiter {
  private readonly buckets = new Map<string, Bucket>()

  constructor(readonly ratePerSecond: number, readonly burst: number) {}

  take(credential: string, now: number): RateVerdict {
    const key = createHash("sha256").update(credential).digest("base64")
    let bucket = this.buckets.get(key)
    if (bucket === undefined) {
      if (this.buckets.size >= 10_000) this.forgetFull(now)
      bucket = { tokens: this.burst, refilledAt: now }
      this.buckets.set(key, bucket)
    }
    const retryAfterSeconds = takeToken(bucket, now, this.ratePerSecond, this.burst)
    return { retryAfterSeconds, headers: rateLimitHeaders(bucket, this.ratePerSecond, this.burst) }
  }

  /** A full bucket is the same as none: dropping them bounds the map by the busy credentials. */
  private forgetFull(now: number) {
    for (const [key, bucket] of this.buckets) {
      refill(bucket, now, this.ratePerSecond, this.burst)
      if (bucket.tokens >= this.burst) this.buckets.delete(key)
    }
  }
}
