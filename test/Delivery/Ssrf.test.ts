import { describe, expect, it } from "@effect/vitest"
import { FastCheck } from "effect"
import { BlockList } from "node:net"
import { isBlockedAddress, nonPublicRange } from "../../src/Delivery/Ssrf.js"

/**
 * The SSRF classifier over many addresses: named cases from the IANA special-purpose registries,
 * and properties against an independent oracle (node's BlockList over the same registry table,
 * written out here), in every textual form an address can take.
 */

/** IANA IPv4 Special-Purpose Address Registry, not globally reachable, plus multicast and class E. */
const IPV4_DENY: ReadonlyArray<[string, number]> = [
  ["0.0.0.0", 8],
  ["10.0.0.0", 8],
  ["100.64.0.0", 10],
  ["127.0.0.0", 8],
  ["169.254.0.0", 16],
  ["172.16.0.0", 12],
  ["192.0.0.0", 24],
  ["192.0.2.0", 24],
  ["192.88.99.0", 24],
  ["192.168.0.0", 16],
  ["198.18.0.0", 15],
  ["198.51.100.0", 24],
  ["203.0.113.0", 24],
  ["224.0.0.0", 4],
  ["240.0.0.0", 4],
  ["168.63.129.16", 32]
]
const oracle4 = new BlockList()
for (const [base, bits] of IPV4_DENY) oracle4.addSubnet(base, bits, "ipv4")

/** Inside 2000::/3, the blocks that are not global unicast (6to4 is judged by what it carries). */
const oracle6 = new BlockList()
oracle6.addSubnet("2001::", 23, "ipv6")
oracle6.addSubnet("2001:db8::", 32, "ipv6")
oracle6.addSubnet("3fff::", 20, "ipv6")

const dotted = (n: number) => [n >>> 24, (n >>> 16) & 255, (n >>> 8) & 255, n & 255].join(".")
const hex = (n: number) => n.toString(16)
const v4Blocked = (n: number) => oracle4.check(dotted(n), "ipv4")

/** IPv4 numbers: anywhere, and inside, at the edges of and just outside every listed block. */
const ipv4 = FastCheck.oneof(
  FastCheck.integer({ min: 0, max: 0xffffffff }),
  FastCheck.tuple(FastCheck.constantFrom(...IPV4_DENY), FastCheck.integer({ min: 0, max: 0xffffffff }), FastCheck.constantFrom(-1, 0, 1, 2))
    .map(([[base, bits], random, edge]) => {
      const start = base.split(".").reduce((n, o) => n * 256 + Number(o), 0)
      const size = 2 ** (32 - bits)
      const at = edge === -1 ? start - 1 : edge === 0 ? start : edge === 1 ? start + size - 1 : start + (random % size)
      return ((at % 2 ** 32) + 2 ** 32) % 2 ** 32
    })
)

/** The ways one IPv6 address can be written. */
const spellings = (groups: ReadonlyArray<number>): Array<string> => {
  const full = groups.map(hex).join(":")
  const padded = groups.map((g) => hex(g).padStart(4, "0")).join(":")
  const canonical = new URL(`http://[${full}]/`).hostname.slice(1, -1)
  const tail = dotted(((groups[6]! << 16) | groups[7]!) >>> 0)
  const mixed = `${groups.slice(0, 6).map(hex).join(":")}:${tail}`
  return [full, padded, canonical, canonical.toUpperCase(), mixed, `[${canonical}]`]
}

describe("SSRF classifier", () => {
  it("the registries' examples: refused", () => {
    for (
      const address of [
        "0.0.0.0", "10.1.2.3", "100.64.0.1", "127.0.0.1", "127.255.255.254", "169.254.169.254", "172.16.0.1", "172.31.255.255",
        "192.0.0.170", "192.0.2.1", "192.88.99.1", "192.168.1.1", "198.18.0.1", "198.19.255.255", "198.51.100.7", "203.0.113.9",
        "224.0.0.1", "239.255.255.250", "240.0.0.1", "255.255.255.255", "168.63.129.16",
        "::", "::1", "::127.0.0.1", "::7f00:1", "::8.8.8.8", "::ffff:127.0.0.1", "::ffff:7f00:1", "::ffff:10.0.0.1",
        "::ffff:169.254.169.254", "0:0:0:0:0:ffff:c0a8:0101", "64:ff9b::127.0.0.1", "64:ff9b::a00:1", "64:ff9b::169.254.169.254",
        "64:ff9b:1::8.8.8.8", "2002:7f00:1::", "2002:a00:1::1", "2002:c0a8:101:0:0:0:0:1", "fec0::1", "fe80::1", "fe80::1%eth0",
        "fd00:ec2::254", "fc00::1", "ff02::1", "ff05::1:3", "100::1", "2001::1", "2001:0:4136:e378:8000:63bf:3fff:fdd2",
        "2001:2::1", "2001:db8::1", "3fff::1", "::ffff:0:7f00:1", "4000::1", "[::1]", "not-an-address", ""
      ]
    ) {
      expect(isBlockedAddress(address), address).toBe(true)
    }
  })

  it("global unicast: allowed", () => {
    for (
      const address of [
        "8.8.8.8", "1.1.1.1", "93.184.216.34", "100.63.255.255", "100.128.0.0", "172.15.255.255", "172.32.0.0", "192.167.255.255",
        "192.169.0.0", "198.17.255.255", "198.20.0.0", "223.255.255.255", "192.31.196.1", "192.175.48.1",
        "2606:4700:4700::1111", "2a00:1450:4001:82b::200e", "[2606:4700:4700::1111]", "::ffff:8.8.8.8", "::ffff:808:808",
        "64:ff9b::8.8.8.8", "64:ff9b::808:808", "2002:808:808::1", "2001:200::1", "2620:4f:8000::1", "3ffe::1"
      ]
    ) {
      expect(nonPublicRange(address), address).toBeUndefined()
    }
  })

  it("IPv4: exactly the registry's non-global blocks are refused", () => {
    FastCheck.assert(
      FastCheck.property(ipv4, (n) => {
        expect(isBlockedAddress(dotted(n)), dotted(n)).toBe(v4Blocked(n))
      }),
      { numRuns: 20_000 }
    )
  })

  it("an IPv4 address carried in IPv6 (mapped, NAT64, 6to4) is judged as that IPv4 address, however it is written; IPv4-compatible is always refused", () => {
    FastCheck.assert(
      FastCheck.property(ipv4, FastCheck.integer({ min: 0, max: 0xffff }), (n, suffix) => {
        const hi = n >>> 16
        const lo = n & 0xffff
        const blocked = v4Blocked(n)
        for (const groups of [[0, 0, 0, 0, 0, 0xffff, hi, lo], [0x64, 0xff9b, 0, 0, 0, 0, hi, lo]]) {
          for (const spelling of spellings(groups)) expect(isBlockedAddress(spelling), spelling).toBe(blocked)
        }
        for (const spelling of spellings([0x2002, hi, lo, suffix, 0, 0, 0, suffix])) {
          expect(isBlockedAddress(spelling), spelling).toBe(blocked)
        }
        for (const spelling of spellings([0, 0, 0, 0, 0, 0, hi, lo])) expect(isBlockedAddress(spelling), spelling).toBe(true)
      }),
      { numRuns: 5_000 }
    )
  })

  it("IPv6: only 2000::/3 outside its special blocks is allowed (and mapped/NAT64 of a public IPv4)", () => {
    const firstGroup = FastCheck.oneof(
      FastCheck.integer({ min: 0, max: 0xffff }),
      FastCheck.integer({ min: 0x2000, max: 0x3fff }),
      FastCheck.constantFrom(0, 0x64, 0x100, 0x2001, 0x2002, 0x3fff, 0x3ffe, 0x1fff, 0x4000, 0xfc00, 0xfd00, 0xfe80, 0xfec0, 0xff02)
    )
    const group = FastCheck.oneof(FastCheck.integer({ min: 0, max: 0xffff }), FastCheck.constantFrom(0, 1, 0xdb8, 0x1ff, 0x200, 0xffff))
    FastCheck.assert(
      FastCheck.property(firstGroup, FastCheck.array(group, { minLength: 7, maxLength: 7 }), (g0, rest) => {
        const groups = [g0, ...rest]
        const address = groups.map(hex).join(":")
        const carried = ((rest[5]! << 16) | rest[6]!) >>> 0
        const zeros80 = groups.slice(0, 5).every((g) => g === 0)
        let expected: boolean
        if (zeros80 && groups[5] === 0xffff) expected = v4Blocked(carried)
        else if (g0 === 0x64 && groups.slice(1, 6).join() === "65435,0,0,0,0") expected = v4Blocked(carried)
        else if ((g0 & 0xe000) !== 0x2000) expected = true
        else if (g0 === 0x2002) expected = v4Blocked(((rest[0]! << 16) | rest[1]!) >>> 0)
        else expected = oracle6.check(address, "ipv6")
        for (const spelling of spellings(groups)) expect(isBlockedAddress(spelling), spelling).toBe(expected)
      }),
      { numRuns: 20_000 }
    )
  })
})
