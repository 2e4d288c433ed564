import { promises as dns } from "node:dns"
import { isIPv4, isIPv6 } from "node:net"
import { echo } from "./Input.js"

/**
 * The SSRF guard (docs/decisions.md#delivery, docs/delivery.md#ssrf-guard): unless the operator
 * allows private targets, a webhook or chat url may only point at **global unicast** addresses.
 * Everything in the IANA IPv4 and IPv6 Special-Purpose Address Registries that is not globally
 * reachable is refused, and so are multicast, the reserved IPv4 class E, and every IPv6 address
 * outside 2000::/3 (the only block IANA has allocated for global unicast). IPv6 forms that carry
 * an IPv4 address (IPv4-mapped ::ffff:a.b.c.d, NAT64 64:ff9b::a.b.c.d, 6to4 2002:aabb:ccdd::) are
 * judged by the IPv4 address they carry; IPv4-compatible ::a.b.c.d (deprecated) is refused
 * whatever it carries.
 */

interface Range4 {
  readonly base: number
  readonly bits: number
  readonly name: string
}

const ipv4Number = (address: string): number => {
  const [a, b, c, d] = address.split(".").map(Number) as [number, number, number, number]
  return ((a << 24) | (b << 16) | (c << 8) | d) >>> 0
}

const range4 = (cidr: string, name: string): Range4 => {
  const [base, bits] = cidr.split("/") as [string, string]
  return { base: ipv4Number(base), bits: Number(bits), name }
}

/**
 * IPv4 blocks that are not global unicast: the special-purpose registry's entries whose
 * "Globally Reachable" is False or N/A (192.0.0.0/24 as a whole, though two of its anycast
 * addresses are global: no webhook lives there), multicast, class E with the limited broadcast,
 * and Azure's metadata address (a public address that only answers from inside Azure).
 */
export const IPV4_NON_PUBLIC: ReadonlyArray<Range4> = [
  range4("0.0.0.0/8", "this network"),
  range4("10.0.0.0/8", "private-use"),
  range4("100.64.0.0/10", "shared address space (CGN)"),
  range4("127.0.0.0/8", "loopback"),
  range4("169.254.0.0/16", "link-local (cloud metadata)"),
  range4("172.16.0.0/12", "private-use"),
  range4("192.0.0.0/24", "IETF protocol assignments"),
  range4("192.0.2.0/24", "documentation (TEST-NET-1)"),
  range4("192.88.99.0/24", "6to4 relay anycast (deprecated)"),
  range4("192.168.0.0/16", "private-use"),
  range4("198.18.0.0/15", "benchmarking"),
  range4("198.51.100.0/24", "documentation (TEST-NET-2)"),
  range4("203.0.113.0/24", "documentation (TEST-NET-3)"),
  range4("224.0.0.0/4", "multicast"),
  range4("240.0.0.0/4", "reserved (class E, broadcast)"),
  range4("168.63.129.16/32", "cloud metadata (Azure)")
]

const inRange4 = (n: number, r: Range4) => r.bits === 0 || (n >>> (32 - r.bits)) === (r.base >>> (32 - r.bits))

/** The name of the non-public IPv4 block `n` is in, or undefined when it is global unicast. */
const classify4 = (n: number): string | undefined => IPV4_NON_PUBLIC.find((r) => inRange4(n, r))?.name

/** The eight 16-bit groups of an IPv6 address (already checked with isIPv6, no zone). */
const ipv6Groups = (address: string): Array<number> => {
  let text = address
  // a trailing dotted IPv4 part becomes two groups
  const dotted = /(\d+\.\d+\.\d+\.\d+)$/.exec(text)
  if (dotted) {
    const n = ipv4Number(dotted[1]!)
    text = `${text.slice(0, dotted.index)}${(n >>> 16).toString(16)}:${(n & 0xffff).toString(16)}`
  }
  const [head, tail] = text.includes("::") ? (text.split("::") as [string, string]) : [text, undefined]
  const parse = (part: string) => (part === "" ? [] : part.split(":").map((g) => parseInt(g, 16)))
  const front = parse(head)
  if (tail === undefined) return front
  const back = parse(tail)
  return [...front, ...new Array<number>(8 - front.length - back.length).fill(0), ...back]
}

/**
 * IPv6 blocks inside 2000::/3 that are not global unicast: IETF protocol assignments (Teredo,
 * benchmarking, ORCHID, AS112-v6, …: 2001::/23 as a whole), documentation (2001:db8::/32 and
 * 3fff::/20). 2002::/16 (6to4) is judged by the IPv4 address it carries.
 */
const classify6 = (g: ReadonlyArray<number>): string | undefined => {
  const [g0, g1, g2, g3, g4, g5, g6, g7] = g as [number, number, number, number, number, number, number, number]
  const v4 = (hi: number, lo: number) => ((hi << 16) | lo) >>> 0
  const first80Zero = g0 === 0 && g1 === 0 && g2 === 0 && g3 === 0 && g4 === 0
  // ::ffff:a.b.c.d — IPv4-mapped: the IPv4 address is what a socket reaches
  if (first80Zero && g5 === 0xffff) {
    const inner = classify4(v4(g6, g7))
    return inner === undefined ? undefined : `IPv4-mapped ${inner}`
  }
  // 64:ff9b::a.b.c.d — the well-known NAT64 prefix: a NAT64 gateway forwards to the IPv4 address
  if (g0 === 0x64 && g1 === 0xff9b && g2 === 0 && g3 === 0 && g4 === 0 && g5 === 0) {
    const inner = classify4(v4(g6, g7))
    return inner === undefined ? undefined : `NAT64 ${inner}`
  }
  if (first80Zero && g5 === 0) {
    if (g6 === 0 && g7 === 0) return "unspecified"
    if (g6 === 0 && g7 === 1) return "loopback"
    return "IPv4-compatible (deprecated)"
  }
  // outside 2000::/3 nothing is global unicast: ULA fc00::/7, link-local fe80::/10, site-local
  // fec0::/10, multicast ff00::/8, discard 100::/64, local NAT64 64:ff9b:1::/48, SIIT, unassigned
  if ((g0 & 0xe000) !== 0x2000) {
    if ((g0 & 0xfe00) === 0xfc00) return "unique local"
    if ((g0 & 0xffc0) === 0xfe80) return "link-local"
    if ((g0 & 0xffc0) === 0xfec0) return "site-local (deprecated)"
    if ((g0 & 0xff00) === 0xff00) return "multicast"
    return "not global unicast"
  }
  // 2002:aabb:ccdd::/48 — 6to4: relays deliver to the IPv4 address aa.bb.cc.dd
  if (g0 === 0x2002) {
    const inner = classify4(v4(g1, g2))
    return inner === undefined ? undefined : `6to4 ${inner}`
  }
  if (g0 === 0x2001 && g1 < 0x200) return "IETF protocol assignments (Teredo, benchmarking, ORCHID, …)"
  if (g0 === 0x2001 && g1 === 0xdb8) return "documentation"
  if (g0 === 0x3fff && g1 < 0x1000) return "documentation"
  return undefined
}

/**
 * Why an address (IPv4 or IPv6 literal, brackets allowed) may not be a target: the name of its
 * special-purpose block, or undefined when it is global unicast. Anything that is not an address
 * (and an IPv6 address with a zone) counts as not allowed.
 */
export const nonPublicRange = (address: string): string | undefined => {
  const bare = address.replace(/^\[|\]$/g, "")
  if (isIPv4(bare)) return classify4(ipv4Number(bare))
  if (bare.includes("%")) return "scoped (zone)"
  if (isIPv6(bare)) return classify6(ipv6Groups(bare.toLowerCase()))
  return "not an address"
}

/** True when the address (IPv4 or IPv6 literal) must not be a target. Unparseable counts as blocked. */
export const isBlockedAddress = (address: string): boolean => nonPublicRange(address) !== undefined

const isAddress = (host: string) => isIPv4(host) || isIPv6(host)

/** Why a url may not be a target (a sentence), or undefined when it may. Syntax only: no DNS. */
export const urlProblem = (raw: string): string | undefined => {
  let url: URL
  try {
    url = new URL(raw)
  } catch {
    return "url must be an absolute http:// or https:// URL."
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") return "url must use http or https."
  if (url.hostname === "") return "url must name a host."
  if (url.username !== "" || url.password !== "") return "url must not carry credentials."
  if (raw.length > 2048) return "url must be at most 2048 characters."
  return undefined
}

/**
 * Checks the url's host against the guard: an address literal directly, a name through DNS (every
 * address it resolves to must be allowed). Answers the reason it is refused, or undefined. The
 * reason never says what a name resolved to (nor tells "does not resolve" from "resolves to an
 * internal address": that would map the operator's internal DNS).
 */
export const targetProblem = async (raw: string): Promise<string | undefined> => {
  const host = new URL(raw).hostname.replace(/^\[|\]$/g, "")
  if (isAddress(host)) {
    return isBlockedAddress(host) ? `url points at a non-public address (${echo(host)}).` : undefined
  }
  if (host.toLowerCase() === "localhost" || host.toLowerCase().endsWith(".localhost")) {
    return `url points at a loopback host (${echo(host)}).`
  }
  let addresses: Array<{ address: string }>
  try {
    addresses = await dns.lookup(host, { all: true, verbatim: true })
  } catch {
    addresses = []
  }
  return addresses.length > 0 && addresses.every((a) => !isBlockedAddress(a.address))
    ? undefined
    : `url host ${echo(host)} must resolve, and only to public addresses.`
}
