/**
 * One canonical spelling of each request target, computed once as the request arrives and before
 * anything reads it (the ping route, the dashboard, the API router, the rate limit, the logs). The
 * router matches loosely (any case, `%xx`, `//`, a trailing slash): whatever reads the URL after it
 * must see what the router saw, so the spellings it folds are folded here first (docs/security.md).
 *
 * - absolute form (`POST http://host/api/tokens`, RFC 9112 §3.2.2) becomes its path and query;
 * - a `%xx` of an unreserved character (`%74` → `t`) is decoded; other escapes stay as they are;
 * - repeated slashes become one, `.` and `..` segments are resolved, a trailing slash is dropped;
 * - a malformed escape (`%ZZ`, `%C3%28`: not UTF-8) is 400, a target over `MAX_TARGET_LENGTH` is 414.
 *
 * Letter case is left alone: the router matches fixed segments in any case, and path ids are
 * compared by the handlers.
 */

/** Longer request targets are refused with 414 (no id or query of this API comes near it). */
export const MAX_TARGET_LENGTH = 4096

export type CanonicalTarget =
  | { readonly _tag: "Ok"; readonly url: string }
  | { readonly _tag: "Rejected"; readonly status: 400 | 414; readonly message: string }

const ABSOLUTE = /^[a-zA-Z][a-zA-Z0-9+.-]*:\/\/[^/?#]*/
const HEX = /^[0-9a-fA-F]{2}$/
/** A path already in canonical form: no escape, no empty, `.` or `..` segment, no trailing slash. */
const isPlain = (path: string): boolean => {
  if (path.charCodeAt(0) !== 0x2f) return false
  if (path.length === 1) return true
  let segmentStart = 1
  for (let i = 1; i <= path.length; i++) {
    const code = i === path.length ? 0x2f : path.charCodeAt(i)
    if (code === 0x25) return false
    if (code !== 0x2f) continue
    const length = i - segmentStart
    if (length === 0) return false
    if (path.charCodeAt(segmentStart) === 0x2e && (length === 1 || (length === 2 && path.charCodeAt(segmentStart + 1) === 0x2e))) {
      return false
    }
    segmentStart = i + 1
  }
  return true
}

const isUnreserved = (code: number) =>
  (code >= 0x41 && code <= 0x5a) || (code >= 0x61 && code <= 0x7a) || (code >= 0x30 && code <= 0x39) ||
  code === 0x2d || code === 0x2e || code === 0x5f || code === 0x7e

const rejected = (status: 400 | 414, message: string): CanonicalTarget => ({ _tag: "Rejected", status, message })

/** Decodes `%xx` of unreserved characters; null when an escape is malformed or not UTF-8. */
const normalizeEscapes = (path: string): string | null => {
  if (!path.includes("%")) return path
  let out = ""
  for (let i = 0; i < path.length; i++) {
    const ch = path[i]!
    if (ch !== "%") {
      out += ch
      continue
    }
    const hex = path.slice(i + 1, i + 3)
    if (!HEX.test(hex)) return null
    const code = parseInt(hex, 16)
    out += isUnreserved(code) ? String.fromCharCode(code) : `%${hex.toUpperCase()}`
    i += 2
  }
  try {
    decodeURIComponent(out)
  } catch {
    return null
  }
  return out
}

const resolveSegments = (path: string): string => {
  const segments: Array<string> = []
  for (const segment of path.split("/")) {
    if (segment === "" || segment === ".") continue
    if (segment === "..") segments.pop()
    else segments.push(segment)
  }
  return "/" + segments.join("/")
}

const shown = (target: string) => (target.length > 100 ? `${target.slice(0, 100)}…` : target)

export const canonicalTarget = (target: string): CanonicalTarget => {
  if (target.length > MAX_TARGET_LENGTH) {
    return rejected(414, `The request target has ${target.length} characters; the limit is ${MAX_TARGET_LENGTH}.`)
  }
  const q = target.indexOf("?")
  let path = q < 0 ? target : target.slice(0, q)
  const query = q < 0 ? "" : target.slice(q)
  // The common case, a target already canonical, returns the same string without work.
  if (isPlain(path)) return { _tag: "Ok", url: target }
  const absolute = ABSOLUTE.exec(path)
  if (absolute !== null) path = path.slice(absolute[0].length)
  if (path === "") path = "/"
  if (!path.startsWith("/")) {
    return rejected(400, `The request target '${shown(target)}' is not a path: send a path that starts with '/'.`)
  }
  const escaped = normalizeEscapes(path)
  if (escaped === null) {
    return rejected(400, `The request path '${shown(path)}' has a malformed percent-escape: each '%' must be followed by two hex digits that encode UTF-8.`)
  }
  return { _tag: "Ok", url: resolveSegments(escaped) + query }
}
