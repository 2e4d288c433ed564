import { isIP } from "node:net"

/**
 * The client address that sign-in limits are keyed on (docs/dashboard-auth.md, "Sign-in limits").
 * Pure.
 *
 * By default it is the socket's remote address: X-Forwarded-For is anyone's to write. Behind
 * `trustProxy` reverse proxies (TRUST_PROXY), each of which appends the address it received the
 * request from to X-Forwarded-For, the client is the entry that many steps from the right (the
 * socket's address counting as the first step back). An entry that is not an IP address ends the
 * walk at the last address before it, and a header with fewer entries than proxies yields its
 * leftmost entry.
 */
export const clientAddress = (socketAddress: string | undefined, forwardedFor: string | undefined, trustProxy: number): string => {
  let client = socketAddress ?? "unknown"
  if (trustProxy <= 0 || forwardedFor === undefined || forwardedFor === "") return client
  const hops = forwardedFor.split(",").map((entry) => entry.trim()).reverse()
  for (let i = 0; i < Math.min(trustProxy, hops.length); i++) {
    const hop = stripPort(hops[i]!)
    if (isIP(hop) === 0) break
    client = hop
  }
  return client
}

/** `1.2.3.4:5678` and `[::1]:5678` → the address alone (some proxies write ports). */
const stripPort = (entry: string) => {
  const bracketed = /^\[([^\]]+)\](?::\d+)?$/.exec(entry)
  if (bracketed !== null) return bracketed[1]!
  const v4 = /^(\d{1,3}(?:\.\d{1,3}){3}):\d+$/.exec(entry)
  return v4 !== null ? v4[1]! : entry
}

/**
 * The key a client address is counted under: IPv4 as is (an IPv4-mapped IPv6 address as its IPv4
 * address), IPv6 by its /64 — one host usually has a whole /64 to draw addresses from.
 */
export const addressKey = (address: string): string => {
  const plain = address.replace(/%.*$/, "")
  const mapped = /^::ffff:(\d{1,3}(?:\.\d{1,3}){3})$/i.exec(plain)
  if (mapped !== null) return mapped[1]!
  if (isIP(plain) !== 6) return plain.slice(0, 64)
  return `${expandIpv6(plain).slice(0, 4).join(":")}::/64`
}

/** The eight groups of an IPv6 address, without leading zeros. */
const expandIpv6 = (address: string): Array<string> => {
  let text = address.toLowerCase()
  // A trailing dotted IPv4 part is two groups.
  const v4 = /(\d{1,3})\.(\d{1,3})\.(\d{1,3})\.(\d{1,3})$/.exec(text)
  if (v4 !== null) {
    const [a, b, c, d] = v4.slice(1).map(Number) as [number, number, number, number]
    text = text.slice(0, v4.index) + `${((a << 8) | b).toString(16)}:${((c << 8) | d).toString(16)}`
  }
  const [head, tail] = text.split("::") as [string, string | undefined]
  const left = head === "" ? [] : head.split(":")
  const right = tail === undefined || tail === "" ? [] : tail.split(":")
  const middle = tail === undefined ? [] : Array.from({ length: 8 - left.length - right.length }, () => "0")
  return [...left, ...middle, ...right].map((group) => Number.parseInt(group, 16).toString(16))
}
