/**
 * Which IP addresses a server-side fetch may connect to. Anything that reaches this machine,
 * its network or infrastructure (loopback, private, link-local, unique-local, unspecified,
 * carrier-grade NAT, multicast, reserved) is refused, including those addresses spelled as
 * IPv4-mapped, IPv4-compatible, NAT64 or 6to4 IPv6.
 */
import { BlockList, isIP } from 'node:net';

const blocked = new BlockList();
const V4_RANGES: ReadonlyArray<readonly [string, number]> = [
  ['0.0.0.0', 8], // "this network", includes the unspecified address
  ['10.0.0.0', 8], // private
  ['100.64.0.0', 10], // carrier-grade NAT
  ['127.0.0.0', 8], // loopback
  ['169.254.0.0', 16], // link-local, cloud metadata endpoints
  ['172.16.0.0', 12], // private
  ['192.0.0.0', 24], // IETF protocol assignments
  ['192.0.2.0', 24], // documentation
  ['192.88.99.0', 24], // 6to4 relay anycast
  ['192.168.0.0', 16], // private
  ['198.18.0.0', 15], // benchmarking
  ['198.51.100.0', 24], // documentation
  ['203.0.113.0', 24], // documentation
  ['224.0.0.0', 4], // multicast
  ['240.0.0.0', 4], // reserved, includes broadcast
];
const V6_RANGES: ReadonlyArray<readonly [string, number]> = [
  ['::', 128], // unspecified
  ['::1', 128], // loopback
  ['100::', 64], // discard-only
  ['2001:db8::', 32], // documentation
  ['fc00::', 7], // unique-local
  ['fe80::', 10], // link-local
  ['fec0::', 10], // site-local (deprecated, still routed by some stacks)
  ['ff00::', 8], // multicast
];
for (const [net, prefix] of V4_RANGES) blocked.addSubnet(net, prefix, 'ipv4');
for (const [net, prefix] of V6_RANGES) blocked.addSubnet(net, prefix, 'ipv6');

/** Expands an IPv6 address to its eight 16-bit groups. */
function ipv6Groups(address: string): number[] {
  let text = address.toLowerCase();
  const zone = text.indexOf('%');
  if (zone >= 0) text = text.slice(0, zone);
  // A trailing dotted quad (::ffff:1.2.3.4) is two groups.
  const dotted = /(\d+\.\d+\.\d+\.\d+)$/.exec(text);
  if (dotted?.[1]) {
    const [a, b, c, d] = dotted[1].split('.').map(Number) as [number, number, number, number];
    text = text.slice(0, -dotted[1].length) + ((a << 8) | b).toString(16) + ':' + ((c << 8) | d).toString(16);
  }
  const [head = '', tail] = text.split('::');
  const parse = (part: string) => (part ? part.split(':').map((g) => parseInt(g, 16)) : []);
  const left = parse(head);
  const right = tail === undefined ? [] : parse(tail);
  const missing = 8 - left.length - right.length;
  return [...left, ...new Array<number>(Math.max(0, missing)).fill(0), ...right];
}

function v4FromGroups(high: number, low: number): string {
  return [high >> 8, high & 255, low >> 8, low & 255].join('.');
}

/** The IPv4 address an IPv6 address carries, for the forms that route to it. */
function embeddedIpv4(address: string): string | undefined {
  const g = ipv6Groups(address);
  const [g0, g1, g2, g3, g4, g5, g6 = 0, g7 = 0] = g;
  const firstFiveZero = g0 === 0 && g1 === 0 && g2 === 0 && g3 === 0 && g4 === 0;
  if (firstFiveZero && g5 === 0xffff) return v4FromGroups(g6, g7); // ::ffff:a.b.c.d, IPv4-mapped
  if (firstFiveZero && g5 === 0 && (g6 !== 0 || g7 > 1)) return v4FromGroups(g6, g7); // ::a.b.c.d, IPv4-compatible
  if (g0 === 0x64 && g1 === 0xff9b) return v4FromGroups(g6, g7); // 64:ff9b::/96, NAT64
  if (g0 === 0x2002 && g1 !== undefined && g2 !== undefined) return v4FromGroups(g1, g2); // 2002::/16, 6to4
  return undefined;
}

/** True when a fetch must not connect to `address` (an IP literal). Non-IP input is refused too. */
export function isForbiddenAddress(address: string): boolean {
  const bare = address.startsWith('[') && address.endsWith(']') ? address.slice(1, -1) : address;
  const family = isIP(bare);
  if (family === 4) return blocked.check(bare, 'ipv4');
  if (family !== 6) return true;
  const v4 = embeddedIpv4(bare);
  if (v4 !== undefined) return blocked.check(v4, 'ipv4');
  return blocked.check(bare.split('%')[0] ?? bare, 'ipv6');
}
