/**
 * Scopes and what they allow (docs/decisions.md#tokens-and-scopes). Pure, and free of Node-only
 * modules: the API's contract (src/Auth/Api.ts) names the scopes, and the dashboard type-checks
 * against that contract in the browser's types (web/src/types.ts).
 */

export const Scopes = ["admin", "write", "read", "ping", "metrics"] as const
export type Scope = (typeof Scopes)[number]

/**
 * What a request needs: `read` for GETs, `write` for changes, `admin` for tokens, `ping` for intake,
 * `metrics` for the Prometheus scrape (`GET /metrics`: a `read` token or broader, or a `metrics`
 * token, which can do nothing else; docs/decisions.md#metrics).
 */
export type Need = "admin" | "write" | "read" | "ping" | "metrics"

const grants: Record<Scope, ReadonlySet<Need>> = {
  admin: new Set(["admin", "write", "read", "ping", "metrics"]),
  write: new Set(["write", "read", "ping", "metrics"]),
  read: new Set(["read", "metrics"]),
  ping: new Set(["ping"]),
  metrics: new Set(["metrics"])
}

export const scopeAllows = (scope: Scope, need: Need): boolean => grants[scope].has(need)
