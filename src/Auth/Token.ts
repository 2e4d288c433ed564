import { createHash, randomBytes } from "node:crypto"

/**
 * Pure token helpers: generation and hashing (docs/decisions.md#tokens-and-scopes). What a token's
 * scope allows: src/Auth/Scopes.ts.
 */

export const TOKEN_PREFIX = "jmt_"

/** 192 random bits, base64url, behind a recognisable prefix: `jmt_` + 32 characters. */
export const generateToken = (): string => TOKEN_PREFIX + randomBytes(24).toString("base64url")

export const hashToken = (token: string): Buffer => createHash("sha256").update(token, "utf8").digest()

/** The non-secret start shown in listings, so users can tell their tokens apart. */
export const displayPrefix = (token: string): string => token.slice(0, TOKEN_PREFIX.length + 6)

/** A bootstrap token from the environment must still be strong enough to guard an admin scope. */
export const isAcceptableToken = (token: string): boolean => token.length >= 24 && /^[\x21-\x7e]+$/.test(token)
