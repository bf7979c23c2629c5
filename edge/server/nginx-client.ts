// The client as the server counts it (edge/access/client-key.ts), written as an nginx map of
// $remote_addr, for the front that counts anonymous requests itself (nginx-config.ts): an IPv4
// address, also written IPv4-mapped; an IPv6 address by its first `prefix` bits, when the prefix is a
// whole number of 16-bit groups (nginx can pick groups out of an address with a regular expression,
// not bits). An IPv6 client of another prefix maps to nothing: nginx does not count it, the server does.
//
// nginx writes $remote_addr as its own inet_ntop does (nginx: ngx_inet6_ntop): lowercase groups
// without leading zeros, the longest run of two zero groups or more written `::`. Each pattern below
// reads one such spelling: k groups before `::` and m after, or eight groups without it.

const GROUP = '([0-9a-f]{1,4})';

/** The map's lines (for `map $remote_addr $isoatlas_client { … }`): regular expressions and the key
 * each spelling of an address gives, the same for every address of one client. */
export function clientKeyMap(ipv6Prefix: number): string[] {
  const lines = ['"~^(?:::ffff:)?(\\d+\\.\\d+\\.\\d+\\.\\d+)$" $1;'];
  if (ipv6Prefix % 16 !== 0) return [...lines, 'default "";'];
  const kept = ipv6Prefix / 16;
  const line = (pattern: string, groups: string[]) => `"~^${pattern}$" "${groups.slice(0, kept).join(':')}";`;
  const captured = (n: number, from: number) => Array.from({ length: n }, (_, i) => `$${from + i}`);
  lines.push(line(Array(8).fill(GROUP).join(':'), captured(8, 1)));
  for (let before = 0; before <= 7; before++) {
    for (let after = 0; before + after <= 7; after++) {
      const pattern = `${Array(before).fill(GROUP).join(':')}::${Array(after).fill(GROUP).join(':')}`;
      const zeros = Array<string>(8 - before - after).fill('0');
      lines.push(line(pattern, [...captured(before, 1), ...zeros, ...captured(after, before + 1)]));
    }
  }
  return [...lines, 'default "";'];
}
