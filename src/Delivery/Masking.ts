/**
 * Webhook urls as the API shows them after creation (docs/delivery.md#urls-are-credentials).
 *
 * A chat webhook's url is a credential: whoever has it can post to the channel. An outbound
 * webhook's url may carry one (a token in its path or query, user:password). Only the answer to
 * the create shows the url whole; GET, list and PATCH answers show it masked: scheme, host and port,
 * the path segments that name things, and `***` in place of what is secret. The stored url is not
 * changed (deliveries use it).
 */

export const MASK = "***"

/** Query parameters whose values are secrets, by name. */
const SECRET_PARAM = /token|key|secret|sig|auth|code|pass|pwd|credential|session|jwt|access|hmac|hash/i

/** Query parameters of chat urls that are known not to be secrets (Discord's thread and wait). */
const HARMLESS_CHAT_PARAMS = new Set(["thread_id", "wait", "with_components"])

/** Hosts of chat and automation services whose webhook urls are secret after their first segment. */
const SECRET_PATH_HOSTS = [/^hooks\.slack\.com$/, /\.webhook\.office\.com$/, /^outlook\.office\.com$/, /^hooks\.zapier\.com$/]

/** Discord's incoming webhook path: /api[/v10]/webhooks/<id>/<token>[/slack|/github]. */
const DISCORD_PATH = /^(\/api(?:\/v\d+)?\/webhooks\/\d+\/)([^/]+)(\/.*)?$/

/**
 * A path segment that looks like a generated secret: 16 characters or more of a token alphabet,
 * hexadecimal (hex tokens, UUIDs) or mixing digits, lower and upper case (base64 tokens). Words and
 * slugs ("incident-hooks-2024") stay.
 */
const looksLikeToken = (segment: string): boolean => {
  if (segment.length < 16 || !/^[A-Za-z0-9._~:+=%-]+$/.test(segment)) return false
  if (/^[0-9a-fA-F-]+$/.test(segment) && segment.replace(/-/g, "").length >= 16) return true
  return /[0-9]/.test(segment) && /[a-z]/.test(segment) && /[A-Z]/.test(segment)
}

const origin = (url: URL) =>
  `${url.protocol}//${url.username !== "" || url.password !== "" ? `${MASK}@` : ""}${url.host}`

/** Every segment after the first becomes one `***` (a lone segment too: it may be the secret). */
const keepFirstSegment = (pathname: string) => {
  const segments = pathname.split("/").slice(1)
  if (segments.every((s) => s === "")) return pathname
  if (segments.slice(1).every((s) => s === "")) return `/${MASK}`
  return `/${segments[0]}/${MASK}`
}

const maskQuery = (url: URL, keep: (name: string) => boolean) => {
  if (url.search === "") return ""
  const parts = url.search.slice(1).split("&").map((pair) => {
    const eq = pair.indexOf("=")
    const name = eq === -1 ? pair : pair.slice(0, eq)
    if (eq === -1) return pair
    let decoded = name
    try {
      decoded = decodeURIComponent(name.replace(/\+/g, " "))
    } catch {
      // keep the raw name
    }
    return keep(decoded) ? pair : `${name}=${MASK}`
  })
  return `?${parts.join("&")}`
}

const parse = (raw: string): URL | undefined => {
  try {
    return new URL(raw)
  } catch {
    return undefined
  }
}

/** A chat webhook's url, masked: Discord shows its webhook id, others their first path segment. */
export const maskChatUrl = (raw: string): string => {
  const url = parse(raw)
  if (url === undefined) return MASK
  const discord = DISCORD_PATH.exec(url.pathname)
  const path = discord ? `${discord[1]}${MASK}${discord[3] ?? ""}` : keepFirstSegment(url.pathname)
  const query = maskQuery(url, (name) => HARMLESS_CHAT_PARAMS.has(name))
  return `${origin(url)}${path}${query}${url.hash === "" ? "" : `#${MASK}`}`
}

/**
 * An outbound webhook's url, masked where it carries credentials: user:password, query values of
 * parameters named like secrets, token-like path segments, and the secret part of chat and
 * automation services' webhook urls (Discord, Slack, Teams, Zapier).
 */
export const maskWebhookUrl = (raw: string): string => {
  const url = parse(raw)
  if (url === undefined) return MASK
  const discord = DISCORD_PATH.exec(url.pathname)
  const path = discord
    ? `${discord[1]}${MASK}${discord[3] ?? ""}`
    : SECRET_PATH_HOSTS.some((host) => host.test(url.hostname))
    ? keepFirstSegment(url.pathname)
    : url.pathname.split("/").map((segment) => (looksLikeToken(segment) ? MASK : segment)).join("/")
  const query = maskQuery(url, (name) => !SECRET_PARAM.test(name))
  return `${origin(url)}${path}${query}${url.hash === "" ? "" : `#${MASK}`}`
}
