/**
 * Ping URLs without a header (docs/pings.md#ping-urls), compatible with Healthchecks' pinging API:
 * `/ping/<pingId>[/start|/fail|/log|/<exit-status>]` and `/ping/<pingKey>/<slug>[/…]`. Pure: what a
 * path asks for, and the plain-text answers. The route is src/Pings/PingUrlRoute.ts.
 */
import { isUuid } from "../Domain/Ids.js"

/** The ping URL of a monitor. */
export const pingUrlOf = (publicUrl: string, pingId: string) => `${publicUrl}/ping/${pingId}`

/** The base of an organization's slug ping URLs: append `/<slug>`. */
export const slugPingUrlOf = (publicUrl: string, pingKey: string) => `${publicUrl}/ping/${pingKey}`

export type PingAction =
  | { readonly kind: "success" | "start" | "fail" | "log" }
  /** `/<exit-status>`: 0 is a success, 1 to 255 a failure with that exit code. */
  | { readonly kind: "exit"; readonly exitCode: number }

export type PingTarget =
  | { readonly _tag: "ById"; readonly pingId: string; readonly action: PingAction }
  | { readonly _tag: "BySlug"; readonly pingKey: string; readonly slug: string; readonly action: PingAction }
  /** A ping path that names nothing (404 "not found"). */
  | { readonly _tag: "NotFound" }
  /** `/ping/<id>/256`: 400 "invalid url format", as Healthchecks answers it. */
  | { readonly _tag: "Invalid"; readonly message: string }

const EXIT = /^\d{1,10}$/

const actionOf = (segment: string | undefined): PingAction | "invalid" | undefined => {
  if (segment === undefined) return { kind: "success" }
  const lower = segment.toLowerCase()
  if (lower === "start" || lower === "fail" || lower === "log") return { kind: lower }
  if (EXIT.test(segment)) {
    const exitCode = Number(segment)
    return exitCode <= 255 ? { kind: "exit", exitCode } : "invalid"
  }
  return undefined
}

/** What `/ping/...` (the path, without the query) asks for; undefined when the path is not under /ping/. */
export const parsePingPath = (path: string): PingTarget | undefined => {
  if (path.length < 6 || path.slice(0, 6).toLowerCase() !== "/ping/") return undefined
  const segments = path.slice(6).split("/")
  const first = segments[0] ?? ""
  if (isUuid(first)) {
    if (segments.length > 2) return { _tag: "NotFound" }
    const action = actionOf(segments[1])
    if (action === "invalid") return { _tag: "Invalid", message: "invalid url format" }
    return action === undefined ? { _tag: "NotFound" } : { _tag: "ById", pingId: first.toLowerCase(), action }
  }
  if (segments.length < 2 || segments.length > 3) return { _tag: "NotFound" }
  const action = actionOf(segments[2])
  if (action === "invalid") return { _tag: "Invalid", message: "invalid url format" }
  if (action === undefined) return { _tag: "NotFound" }
  let slug: string
  try {
    slug = decodeURIComponent(segments[1]!)
  } catch {
    return { _tag: "NotFound" }
  }
  return { _tag: "BySlug", pingKey: first, slug, action }
}

/** Healthchecks' plain-text answers, by status; other statuses say their message. */
export const plainText = (status: number, message: string | undefined): string => {
  switch (status) {
    case 200:
      return "OK"
    case 201:
      return "Created"
    case 404:
      return "not found"
    case 429:
      return "rate limited"
    default:
      return message ?? "error"
  }
}

const DURATION = /^(\d{1,9})([smhd]?)$/
const UNIT: Record<string, number> = { "": 1, s: 1, m: 60, h: 3600, d: 86400 }

/** `?grace=`: seconds, or a number with s, m, h or d. */
export const parseGrace = (text: string): number | undefined => {
  const m = DURATION.exec(text.trim())
  return m === null ? undefined : Number(m[1]) * UNIT[m[2]!]!
}

/** `?schedule=`: an interval (a number with s, m, h or d: `1d`) or else a cron expression. */
export const scheduleOfQuery = (text: string): { type: "cron" | "interval"; expression: string } =>
  /^\d+[smhd]$/.test(text.trim()) ? { type: "interval", expression: text.trim() } : { type: "cron", expression: text.trim() }

/** What an auto-provisioned monitor gets when the URL says nothing (Healthchecks' defaults: a day, an hour's grace). */
export const AUTO_CREATE_DEFAULTS = { schedule: { type: "interval" as const, expression: "1d" }, graceSeconds: 3600 }
