/**
 * Which IP addresses a server-side fetch may reach. Everything that is not plain public unicast is
 * refused (unless --allow-private-urls): loopback, RFC 1918, CGNAT, link-local, unique-local,
 * multicast, reserved, documentation ranges, and IPv4 embedded in IPv6 (mapped/NAT64/6to4) is
 * judged by its IPv4 part so `::ffff:127.0.0.1` cannot sneak through.
 */
import { isIP } from 'node:net';

const V4_BLOCKED: ReadonlyArray<[string, number]> = [
  ['0.0.0.0', 8], // "this network"
  ['10.0.0.0', 8],
  ['100.64.0.0', 10], // CGNAT
  ['127.0.0.0', 8],
  ['169.254.0.0', 16], // link-local (cloud metadata lives here)
  ['172.16.0.0', 12],
  ['192.0.0.0', 24],
  ['192.0.2.0', 24],
  ['192.88.99.0', 24],
  ['192.168.0.0', 16],
  ['198.18.0.0', 15],
  ['198.51.100.0', 24],
  ['203.0.113.0', 24],
  ['224.0.0.0', 4], // multicast
  ['240.0.0.0', 4], // reserved + broadcast
];

function v4ToInt(ip: string): number {
  return ip.split('.').reduce((acc, part) => acc * 256 + Number(part), 0);
}

function isBlockedV4(ip: string): boolean {
  const n = v4ToInt(ip);
  return V4_BLOCKED.some(([base, bits]) => {
    const size = 2 ** (32 - bits);
    const start = v4ToInt(base);
    return n >= start && n < start + size;
  });
}

/** Expands an IPv6 literal into 8 16-bit groups (handles `::` and a trailing dotted IPv4). */
function v6Groups(ip: string): number[] {
  let s = ip.toLowerCase();
  const zone = s.indexOf('%');
  if (zone >= 0) s = s.slice(0, zone);
  const lastColon = s.lastIndexOf(':');
  const maybeV4 = s.slice(lastColon + 1);
  if (maybeV4.includes('.')) {
    // a.b.c.d tail → two hex groups, so one parser handles every spelling
    const n = v4ToInt(maybeV4);
    s = `${s.slice(0, lastColon + 1)}${Math.floor(n / 65536).toString(16)}:${(n % 65536).toString(16)}`;
  }
  const [head = '', rest] = s.split('::');
  const h = head ? head.split(':').map((x) => parseInt(x, 16)) : [];
  const r = rest ? rest.split(':').map((x) => parseInt(x, 16)) : [];
  const fill = 8 - h.length - r.length;
  return [...h, ...Array<number>(Math.max(0, fill)).fill(0), ...r].slice(0, 8);
}

function embeddedV4(g: number[]): string {
  const a = g[6] ?? 0;
  const b = g[7] ?? 0;
  return `${a >> 8}.${a & 255}.${b >> 8}.${b & 255}`;
}

function isBlockedV6(ip: string): boolean {
  const g = v6Groups(ip);
  const [g0 = 0, g1 = 0, g2 = 0, g3 = 0, g4 = 0, g5 = 0] = g;
  const allZeroTo = (n: number) => g.slice(0, n).every((x) => x === 0);
  if (allZeroTo(8)) return true; // ::
  if (allZeroTo(7) && g[7] === 1) return true; // ::1
  if (allZeroTo(5) && g5 === 0xffff) return isBlockedV4(embeddedV4(g)); // ::ffff:a.b.c.d
  if (allZeroTo(6)) return true; // deprecated IPv4-compatible
  if (g0 === 0x64 && g1 === 0xff9b) return isBlockedV4(embeddedV4(g)); // NAT64 64:ff9b::/96
  if (g0 === 0x2002) return isBlockedV4(`${g1 >> 8}.${g1 & 255}.${g2 >> 8}.${g2 & 255}`); // 6to4
  if ((g0 & 0xfe00) === 0xfc00) return true; // fc00::/7 unique-local
  if ((g0 & 0xffc0) === 0xfe80) return true; // fe80::/10 link-local
  if ((g0 & 0xffc0) === 0xfec0) return true; // fec0::/10 site-local (deprecated)
  if ((g0 & 0xff00) === 0xff00) return true; // multicast
  if (g0 === 0x2001 && g1 === 0x0db8) return true; // documentation
  if (g0 === 0x2001 && g1 < 0x0200) return true; // 2001::/23 IETF special (Teredo, ORCHID, …)
  if (g0 === 0x0100 && g1 === 0 && g2 === 0 && g3 === 0) return true; // discard-only
  void g4;
  return false;
}

/** True when `ip` (a literal) is anything but public unicast. Non-IP strings are treated as blocked. */
export function isPrivateAddress(ip: string): boolean {
  const v = isIP(ip.replace(/^\[|\]$/g, ''));
  if (v === 4) return isBlockedV4(ip);
  if (v === 6) return isBlockedV6(ip.replace(/^\[|\]$/g, ''));
  return true;
}
