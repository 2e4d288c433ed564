/**
 * Every limit of sign-in, password hashing, tokens and invites, in one place
 * (docs/dashboard-auth.md, "Sign-in limits"; docs/api.md for the quotas). The two quotas are
 * settings (MAX_ACTIVE_TOKENS_PER_ORG, MAX_PENDING_INVITES_PER_ORG in src/Config.ts) whose defaults
 * are here; the rest are fixed. Pure: no Effect services.
 */

/** The window in which failed sign-ins are counted. */
export const SIGN_IN_WINDOW_MS = 15 * 60_000

/** Failed sign-ins for one account from one client address in the window; then that pair is 429. */
export const SIGN_IN_MAX_FAILURES_PER_ACCOUNT_AND_ADDRESS = 10

/** Failed sign-ins from one client address in the window, whatever the emails; then the address is 429. */
export const SIGN_IN_MAX_FAILURES_PER_ADDRESS = 20

/**
 * Failed sign-ins for one account in the window, from all addresses together, after which the
 * account is slowed down (never locked): from an address it has not signed in from, an attempt
 * must come at least `failures − this + 1` seconds (at most SIGN_IN_MAX_SPACING_MS) after the
 * account's latest attempt.
 */
export const SIGN_IN_ACCOUNT_SLOWDOWN_AFTER = 20
export const SIGN_IN_MAX_SPACING_MS = 60_000

/** An address an account signed in from successfully is known to it this long. */
export const SIGN_IN_KNOWN_ADDRESS_MS = 30 * 24 * 3600_000

/**
 * Password hashes computed at once (each holds 128 MiB and a core for a noticeable time at
 * N = 2^17, r = 8: docs/performance.md#figures-behind-code-comments), and how many more may wait for their turn; past that, sign-in is
 * 429 with Retry-After.
 */
export const PASSWORD_HASHES_AT_ONCE = 2
export const PASSWORD_HASHES_WAITING = 16

/**
 * Sign-in checks that may hold a database connection at once (each waits there for the advisory
 * locks of its email and address), and how many more may wait in the process; past that, 429. A
 * flood of sign-ins for one email must not take the pool the ping intake needs.
 */
export const SIGN_IN_CHECKS_AT_ONCE = 4
export const SIGN_IN_CHECKS_WAITING = 64

/** Defaults of the quotas per organization (settings in src/Config.ts). */
export const DEFAULT_MAX_ACTIVE_TOKENS_PER_ORG = 500
export const DEFAULT_MAX_PENDING_INVITES_PER_ORG = 50

/** What the database says about recent attempts, for one email key and one client address. */
export interface SignInHistory {
  /** Attempts not known to have succeeded (failures and checks in flight) for this email from this address. */
  readonly pairCount: number
  readonly pairOldest: Date | null
  /** The same from this address, any email. */
  readonly addressCount: number
  readonly addressOldest: Date | null
  /** The same for this email, any address. */
  readonly accountCount: number
  readonly accountLatest: Date | null
  /** The account signed in successfully from this address within SIGN_IN_KNOWN_ADDRESS_MS. */
  readonly knownAddress: boolean
}

export type SignInLimit = "pair" | "address" | "account"

export type SignInVerdict =
  | { readonly _tag: "Allowed" }
  | {
    readonly _tag: "Refused"
    readonly limit: SignInLimit
    /** Epoch ms when the attempt would be judged again with a chance to pass. */
    readonly until: number
    readonly retryAfterSeconds: number
    readonly message: string
  }

const seconds = (ms: number) => Math.max(1, Math.ceil(ms / 1000))
const minutes = SIGN_IN_WINDOW_MS / 60_000

/** The account-wide spacing after `failures` failures in the window (0 below the threshold). */
export const accountSpacingMs = (failures: number): number =>
  failures < SIGN_IN_ACCOUNT_SLOWDOWN_AFTER
    ? 0
    : Math.min(SIGN_IN_MAX_SPACING_MS, (failures - SIGN_IN_ACCOUNT_SLOWDOWN_AFTER + 1) * 1000)

/** What a refusal says, for the seconds left. */
export const refusalMessage = (limit: SignInLimit, retryAfterSeconds: number): string =>
  limit === "pair"
    ? `Too many failed sign-ins for this email from your address: at most ${SIGN_IN_MAX_FAILURES_PER_ACCOUNT_AND_ADDRESS} in ${minutes} minutes. Try again in ${retryAfterSeconds} s.`
    : limit === "address"
    ? `Too many failed sign-ins from your address: at most ${SIGN_IN_MAX_FAILURES_PER_ADDRESS} in ${minutes} minutes, whatever the email. Try again in ${retryAfterSeconds} s.`
    : `This account has had many failed sign-ins lately, so attempts from new addresses are slowed down. Try again in ${retryAfterSeconds} s.`

const refused = (limit: SignInLimit, until: number, now: number): SignInVerdict => {
  const retryAfterSeconds = seconds(until - now)
  return { _tag: "Refused", limit, until, retryAfterSeconds, message: refusalMessage(limit, retryAfterSeconds) }
}

/** Whether one more attempt may be checked at `now`, and if not, which limit says so and until when. */
export const judgeSignIn = (history: SignInHistory, now: number): SignInVerdict => {
  if (history.pairCount >= SIGN_IN_MAX_FAILURES_PER_ACCOUNT_AND_ADDRESS) {
    return refused("pair", (history.pairOldest?.getTime() ?? now) + SIGN_IN_WINDOW_MS, now)
  }
  if (history.addressCount >= SIGN_IN_MAX_FAILURES_PER_ADDRESS) {
    return refused("address", (history.addressOldest?.getTime() ?? now) + SIGN_IN_WINDOW_MS, now)
  }
  const spacing = history.knownAddress ? 0 : accountSpacingMs(history.accountCount)
  if (spacing > 0 && history.accountLatest !== null && history.accountLatest.getTime() + spacing > now) {
    return refused("account", history.accountLatest.getTime() + spacing, now)
  }
  return { _tag: "Allowed" }
}
