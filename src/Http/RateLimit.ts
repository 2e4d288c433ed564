import { createHash } from "node:crypto"

/** What one request's take from its bucket says. */
export interface RateVerdict {
  /** Seconds to wait before the next request can pass; 0 when this one passes. */
  readonly retryAfterSeconds: number
  readonly headers: Readonly<Record<string, string>>
}

interface Bucket {
  tokens: number
  refilledAt: number
}

/**
 * Per-credential token buckets for the API's own endpoints (decisions §11): `ratePerSecond`
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
    this.refill(bucket, now)
    const passes = bucket.tokens >= 1
    if (passes) bucket.tokens -= 1
    const retryAfterSeconds = passes ? 0 : Math.max(1, Math.ceil((1 - bucket.tokens) / this.ratePerSecond))
    return {
      retryAfterSeconds,
      headers: {
        "x-ratelimit-limit": String(this.burst),
        "x-ratelimit-remaining": String(Math.max(0, Math.floor(bucket.tokens))),
        "x-ratelimit-reset": String(Math.ceil((this.burst - bucket.tokens) / this.ratePerSecond))
      }
    }
  }

  private refill(bucket: Bucket, now: number) {
    bucket.tokens = Math.min(this.burst, bucket.tokens + (Math.max(0, now - bucket.refilledAt) / 1000) * this.ratePerSecond)
    bucket.refilledAt = now
  }

  /** A full bucket is the same as none: dropping them bounds the map by the busy credentials. */
  private forgetFull(now: number) {
    for (const [key, bucket] of this.buckets) {
      this.refill(bucket, now)
      if (bucket.tokens >= this.burst) this.buckets.delete(key)
    }
  }
}
