/**
 * Status badges (docs/badges.md): the state of a monitor (by slug) or of the monitors carrying a tag,
 * as an SVG, JSON, or a Shields.io endpoint. Pure: states and their renderings.
 */

export type BadgeState = "up" | "down" | "late" | "maintenance"

/** One monitor's badge state: in maintenance wins; FAILING and MISSED are down, LATE late, the rest up. */
export const monitorBadgeState = (status: string, paused: boolean, inMaintenance: boolean): BadgeState => {
  if (inMaintenance) return "maintenance"
  if (paused) return "up"
  if (status === "FAILING" || status === "MISSED") return "down"
  if (status === "LATE") return "late"
  return "up"
}

const RANK: Record<BadgeState, number> = { down: 3, late: 2, maintenance: 1, up: 0 }

/** Several monitors' state: the worst one (down, then late, then maintenance, then up). */
export const worstState = (states: ReadonlyArray<BadgeState>): BadgeState =>
  states.reduce<BadgeState>((worst, s) => (RANK[s] > RANK[worst] ? s : worst), "up")

const COLOR: Record<BadgeState, string> = { up: "#4c1", down: "#e05d44", late: "#dfb317", maintenance: "#9f9f9f" }
const SHIELDS_COLOR: Record<BadgeState, string> = { up: "brightgreen", down: "red", late: "yellow", maintenance: "lightgrey" }

const escapeXml = (text: string) =>
  text.replace(/[&<>"']/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", "\"": "&quot;", "'": "&apos;" })[c]!)

/** A label on a badge: at most 40 characters (a longer name is cut with an ellipsis). */
export const badgeLabel = (name: string) => (name.length > 40 ? `${name.slice(0, 39)}…` : name)

/** Width of a text in Verdana 11px, roughly (the badge's boxes are sized from it). */
const textWidth = (text: string) => Math.ceil([...text].length * 6.8) + 10

export const badgeSvg = (name: string, state: BadgeState): string => {
  const label = badgeLabel(name)
  const l = textWidth(label)
  const m = textWidth(state)
  const w = l + m
  const title = escapeXml(`${label}: ${state}`)
  return `<svg xmlns="http://www.w3.org/2000/svg" width="${w}" height="20" role="img" aria-label="${title}">` +
    `<title>${title}</title>` +
    `<linearGradient id="g" x2="0" y2="100%"><stop offset="0" stop-color="#bbb" stop-opacity=".1"/><stop offset="1" stop-opacity=".1"/></linearGradient>` +
    `<clipPath id="c"><rect width="${w}" height="20" rx="3" fill="#fff"/></clipPath>` +
    `<g clip-path="url(#c)"><rect width="${l}" height="20" fill="#555"/><rect x="${l}" width="${m}" height="20" fill="${COLOR[state]}"/>` +
    `<rect width="${w}" height="20" fill="url(#g)"/></g>` +
    `<g fill="#fff" text-anchor="middle" font-family="Verdana,Geneva,DejaVu Sans,sans-serif" font-size="11">` +
    `<text x="${l / 2}" y="14">${escapeXml(label)}</text><text x="${l + m / 2}" y="14">${state}</text></g></svg>`
}

export interface BadgeCounts {
  readonly total: number
  readonly up: number
  readonly down: number
  readonly late: number
  readonly maintenance: number
}

export const badgeJson = (name: string, state: BadgeState, counts: BadgeCounts) => ({ name, status: state, ...counts })

/** Shields.io's endpoint badge schema (https://shields.io/badges/endpoint-badge). */
export const shieldsJson = (name: string, state: BadgeState) => ({
  schemaVersion: 1,
  label: badgeLabel(name),
  message: state,
  color: SHIELDS_COLOR[state]
})

export type BadgeFormat = "svg" | "json" | "shields"

/** `/badge/<badgeKey>/<name>.<format>`: the key, the name (decoded) and the format; undefined: not a badge path. */
export const parseBadgePath = (path: string): { key: string; name: string; format: BadgeFormat } | "notFound" | undefined => {
  if (path.length < 7 || path.slice(0, 7).toLowerCase() !== "/badge/") return undefined
  const segments = path.slice(7).split("/")
  if (segments.length !== 2) return "notFound"
  const match = /^(.+)\.(svg|json|shields)$/.exec(segments[1]!)
  if (match === null) return "notFound"
  try {
    return { key: segments[0]!, name: decodeURIComponent(match[1]!), format: match[2] as BadgeFormat }
  } catch {
    return "notFound"
  }
}
