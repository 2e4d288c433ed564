/**
 * The outbound webhook retry table (interface spec, Delivery rules): 8 attempts in total, with
 * 0, 1, 2, 4, 8, 16, 32, 64 s before them (cumulative 0, 1, 3, 7, 15, 31, 63, 127 s).
 */
export const MAX_ATTEMPTS = 8

/** Milliseconds to wait after failed attempt `attempt` (1-based) before the next; undefined after the last. */
export const delayAfterAttempt = (attempt: number): number | undefined =>
  attempt >= MAX_ATTEMPTS ? undefined : 1000 * 2 ** (attempt - 1)

export type Outcome =
  | { readonly _tag: "Answered"; readonly status: number }
  | { readonly _tag: "NoAnswer"; readonly error: string }
  | { readonly _tag: "Refused"; readonly error: string }

/**
 * Retry only on 5xx, timeout, connection refused or no response; never on 2xx or 4xx (nor on a
 * 3xx: redirects are not followed), nor when the target was refused by the SSRF guard.
 */
export const isRetryable = (outcome: Outcome): boolean =>
  outcome._tag === "NoAnswer" || (outcome._tag === "Answered" && outcome.status >= 500)

export const isSuccess = (outcome: Outcome): boolean =>
  outcome._tag === "Answered" && outcome.status >= 200 && outcome.status < 300

/** Deliveries per webhook per minute (interface spec, Limits); the rest wait for the next minute. */
export const RATE_LIMIT_PER_MINUTE = 100
export const RATE_WINDOW_MS = 60_000

/** Chat webhooks (interface spec, Errors): retries after 1, 2, 4, 8, 16 s: 6 attempts in total. */
export const CHAT_MAX_ATTEMPTS = 6

export const chatDelayAfterAttempt = (attempt: number): number | undefined =>
  attempt >= CHAT_MAX_ATTEMPTS ? undefined : 1000 * 2 ** (attempt - 1)

/** Chat messages per webhook per minute (interface spec, Limits). */
export const CHAT_RATE_LIMIT_PER_MINUTE = 30
