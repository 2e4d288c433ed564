/**
 * Scopes and what they allow (docs/decisions.md#tokens-and-scopes). Pure, and free of Node-only
 * modules: the API's contract (src/Auth/Api.ts) names the scopes, and the dashboard type-checks
 * against that contract in the browser's types (web/src/types.ts).
 */

export const Scopes = ["admin", "write", "read", "ping"] as const
export type Scope = (typeof Scopes)[number]

/** What a request needs: `read` for GETs, `write` for changes, `admin` for tokens, `ping` for intake. */
export type Need = "admin" | "write" | "read" | "ping"

const grants: Record<Scope, ReadonlySet<Need>> = {
  admin: new Set(["admin", "write", "read", "ping"]),
  write: new Set(["write", "read", "ping"]),
  read: new Set(["read"]),
  ping: new Set(["ping"])
}

export const scopeAllows = (scope: Scope, need: Need): boolean => grants[scope].has(need)
