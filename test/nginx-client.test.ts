// The client as the nginx front counts it (edge/server/nginx-client.ts) is the client the server counts
// (edge/access/client-key.ts): the map's regular expressions, read here as nginx reads a map (the
// first that matches, its captures put into the value), over addresses written as nginx writes
// $remote_addr (nginx: ngx_inet6_ntop, transcribed below), group together exactly the addresses the
// server groups together, for every prefix the front counts; for any other prefix nginx counts no
// IPv6 client (the server does).
import { describe, expect, it } from 'vitest';
import { clientKeyMap } from '../edge/server/nginx-client.js';
import { clientBucket } from '../edge/access/client-key.js';

/** The map as nginx applies it to one value: the first regular expression that matches, with its
 * captures; else the default. */
function applyMap(lines: string[], value: string): string {
  for (const line of lines) {
    const m = /^"~(.*)" "?(.*?)"?;$/.exec(line);
    if (!m) continue;
    const found = new RegExp(m[1]).exec(value);
    if (found) return m[2].replace(/\$(\d)/g, (_, n: string) => found[Number(n)] ?? '');
  }
  return '';
}

/** An IPv6 address as nginx writes it: lowercase groups without leading zeros, the first longest run
 * of two zero groups or more as `::`, an IPv4-mapped or -compatible address with a dotted tail. */
function ngxInet6(groups: number[]): string {
  let zero = -1;
  let max = 1;
  let run = 0;
  let last = -1;
  for (let i = 0; i < 8; i++) {
    if (groups[i] !== 0) {
      if (max < run) [zero, max] = [last, run];
      run = 0;
      continue;
    }
    if (run++ === 0) last = i;
  }
  if (max < run) [zero, max] = [last, run];
  const dotted =
    zero === 0 &&
    ((max === 5 && groups[5] === 0xffff) ||
      max === 6 ||
      (max === 7 && groups[7] >> 8 !== 0 && (groups[7] & 255) !== 1));
  const tail = dotted ? [groups[6] >> 8, groups[6] & 255, groups[7] >> 8, groups[7] & 255].join('.') : null;
  const shown = dotted ? groups.slice(0, 6) : groups;
  let text = '';
  for (let i = 0; i < shown.length; i++) {
    if (i === zero) {
      text += i === 0 ? '::' : ':';
      i += max - 1;
      continue;
    }
    text += shown[i].toString(16) + (i < shown.length - 1 || tail ? ':' : '');
  }
  return tail ? `${text}${tail}` : text;
}

/** Addresses of few networks, with many zero groups (so `::` falls everywhere). */
function addresses(count: number, seed: number): number[][] {
  let s = seed;
  const random = () => {
    s = (s * 1_103_515_245 + 12_345) % 2 ** 31;
    return s / 2 ** 31;
  };
  const group = () => (random() < 0.5 ? 0 : random() < 0.5 ? Math.floor(random() * 16) : Math.floor(random() * 65536));
  const networks = Array.from({ length: 6 }, () => Array.from({ length: 8 }, group));
  return Array.from({ length: count }, () => {
    const base = networks[Math.floor(random() * networks.length)];
    const keep = Math.floor(random() * 9);
    return base.map((g, i) => (i < keep ? g : group()));
  });
}

describe('the client nginx counts', () => {
  it('is the IPv4 address, also written IPv4-mapped', () => {
    const lines = clientKeyMap(64);
    expect(applyMap(lines, '203.0.113.9')).toBe('203.0.113.9');
    expect(applyMap(lines, '::ffff:203.0.113.9')).toBe('203.0.113.9');
    expect(applyMap(lines, '::ffff:203.0.113.9')).toBe(clientBucket('::ffff:203.0.113.9', 64));
  });

  it('groups IPv6 addresses as the server does, for every prefix of whole groups', () => {
    const all = addresses(400, 47);
    for (let prefix = 16; prefix <= 128; prefix += 16) {
      const lines = clientKeyMap(prefix);
      const byNginx = new Map<string, string>();
      const byServer = new Map<string, string>();
      for (const groups of all) {
        const text = ngxInet6(groups);
        const key = applyMap(lines, text);
        const bucket = clientBucket(text, prefix);
        // An address nginx writes with a dotted tail is no client of its own to nginx: the server counts it.
        if (/\./.test(text)) {
          if (!text.startsWith('::ffff:')) expect(key, text).toBe('');
          continue;
        }
        expect(key, `${text} /${prefix}`).not.toBe('');
        if (byNginx.has(key)) expect(byNginx.get(key), `${text} /${prefix}`).toBe(bucket);
        if (byServer.has(bucket)) expect(byServer.get(bucket), `${text} /${prefix}`).toBe(key);
        byNginx.set(key, bucket);
        byServer.set(bucket, key);
      }
      // The addresses fall into several networks at every prefix but the shortest few.
      if (prefix >= 64) expect(byServer.size).toBeGreaterThan(6);
    }
  });

  it('is no IPv6 client at a prefix nginx cannot cut an address at', () => {
    const lines = clientKeyMap(56);
    expect(applyMap(lines, '2001:db8::1')).toBe('');
    expect(applyMap(lines, '203.0.113.9')).toBe('203.0.113.9');
  });
});
