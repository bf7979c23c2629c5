// Who counts as one client, for per-address limits and the server's connection cap: an IPv4 address
// by itself, an IPv6 address by its network (the access config's ipv6_prefix), since a subscriber
// usually holds a whole network and could otherwise multiply every per-address budget by choosing
// addresses from it. Plain string work (no node:net): this module is bundled into the edge too.

/** The largest IPv6 prefix: each address counted on its own. */
export const IPV6_BITS = 128;

/** The counter name of the client at `ip`: the IPv4 address (also when written IPv4-mapped, as a
 * dual-stack socket reports it), or the IPv6 address cut to its first `v6Prefix` bits and written
 * `<groups>/<prefix>`. Anything that is not an address is its own client, as given. */
export function clientBucket(ip: string, v6Prefix: number): string {
  const v4 = ipv4Of(ip);
  if (v4) return v4;
  const groups = ipv6Groups(ip.replace(/%.*$/, '')); // a zone id names an interface, not a client
  if (!groups) return ip;
  // ::ffff:a.b.c.d, in any spelling, is the IPv4 client a.b.c.d.
  if (groups.slice(0, 5).every((g) => g === 0) && groups[5] === 0xffff) {
    return [groups[6] >> 8, groups[6] & 0xff, groups[7] >> 8, groups[7] & 0xff].join('.');
  }
  const masked = groups.map((g, i) => {
    const bits = Math.min(16, Math.max(0, v6Prefix - 16 * i));
    return g & (0xffff << (16 - bits)) & 0xffff;
  });
  return `${masked.map((g) => g.toString(16)).join(':')}/${v6Prefix}`;
}

/** A dotted IPv4 address (four numbers of 1-3 digits, each at most 255) in its plain form (no
 * leading zeros), or null. Read a character at a time, and the text itself returned when it is plain:
 * it runs for every request and every connection. */
function ipv4Of(text: string): string | null {
  let value = 0;
  let digits = 0;
  let numbers = 0;
  let plain = true;
  // A dot after the last character ends the fourth number like the others.
  for (let i = 0; i <= text.length; i++) {
    const c = i < text.length ? text.charCodeAt(i) : 46;
    if (c >= 48 && c <= 57) {
      if (digits === 3) return null;
      if (digits > 0 && value === 0) plain = false;
      value = value * 10 + (c - 48);
      digits++;
    } else if (c === 46 && digits > 0 && value <= 255 && numbers < 4) {
      numbers++;
      value = 0;
      digits = 0;
    } else return null;
  }
  if (numbers !== 4) return null;
  return plain ? text : text.split('.').map(Number).join('.');
}

/** The eight 16-bit groups of an IPv6 address (with `::` and a dotted IPv4 tail), or null. */
function ipv6Groups(text: string): number[] | null {
  let body = text;
  const tail = /^(.*:)([^:]*\.[^:]*)$/.exec(text);
  if (tail) {
    const v4 = ipv4Of(tail[2]);
    if (!v4) return null;
    const [a, b, c, d] = v4.split('.').map(Number);
    body = `${tail[1]}${((a << 8) | b).toString(16)}:${((c << 8) | d).toString(16)}`;
  }
  const halves = body.split('::');
  if (halves.length > 2) return null;
  const split = (half: string) => (half === '' ? [] : half.split(':'));
  const head = split(halves[0]);
  const rest = halves.length === 2 ? split(halves[1]) : [];
  const missing = 8 - head.length - rest.length;
  if (halves.length === 2 ? missing < 1 : missing !== 0) return null;
  const all = [...head, ...Array<string>(halves.length === 2 ? missing : 0).fill('0'), ...rest];
  if (!all.every((g) => /^[0-9A-Fa-f]{1,4}$/.test(g))) return null;
  return all.map((g) => parseInt(g, 16));
}
