import { promises as dns } from "node:dns"
import { BlockList, isIP } from "node:net"

/**
 * The SSRF guard (decisions §10): webhook targets that are or resolve to loopback, private,
 * link-local or metadata addresses are refused unless the operator allows private targets.
 */
const blocked = new BlockList()
blocked.addSubnet("0.0.0.0", 8, "ipv4")
blocked.addSubnet("10.0.0.0", 8, "ipv4")
blocked.addSubnet("127.0.0.0", 8, "ipv4")
blocked.addSubnet("169.254.0.0", 16, "ipv4")
blocked.addSubnet("172.16.0.0", 12, "ipv4")
blocked.addSubnet("192.168.0.0", 16, "ipv4")
blocked.addSubnet("100.64.0.0", 10, "ipv4")
blocked.addAddress("255.255.255.255", "ipv4")
blocked.addAddress("::", "ipv6")
blocked.addAddress("::1", "ipv6")
blocked.addSubnet("fc00::", 7, "ipv6")
blocked.addSubnet("fe80::", 10, "ipv6")

/** True when the address (IPv4 or IPv6 literal) must not be a target. Unparseable counts as blocked. */
export const isBlockedAddress = (address: string): boolean => {
  const bare = address.replace(/^\[|\]$/g, "")
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(bare)
  if (mapped) return isBlockedAddress(mapped[1]!)
  const family = isIP(bare)
  if (family === 4) return blocked.check(bare, "ipv4")
  if (family === 6) return blocked.check(bare, "ipv6")
  return true
}

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
 * address it resolves to must be allowed). Answers the reason it is refused, or undefined.
 */
export const targetProblem = async (raw: string): Promise<string | undefined> => {
  const host = new URL(raw).hostname.replace(/^\[|\]$/g, "")
  if (isIP(host) !== 0) {
    return isBlockedAddress(host) ? `url points at a private, loopback or link-local address (${host}).` : undefined
  }
  if (host.toLowerCase() === "localhost" || host.toLowerCase().endsWith(".localhost")) {
    return `url points at a loopback host (${host}).`
  }
  let addresses: Array<{ address: string }>
  try {
    addresses = await dns.lookup(host, { all: true, verbatim: true })
  } catch {
    return `url host ${host} does not resolve.`
  }
  const bad = addresses.find((a) => isBlockedAddress(a.address))
  return bad === undefined ? undefined : `url host ${host} resolves to a private, loopback or link-local address (${bad.address}).`
}
