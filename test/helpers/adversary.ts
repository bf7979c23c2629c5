// The standard attacks (issue #44), applied to whatever a table names: each target is a request for an
// entry of the dispatch table (or anything else a test adds), and each attack returns what it found
// wrong instead of throwing, so that a test can show a bad entry is caught. The attacks:
//   - head:       HEAD answers as GET does (status, length), with no body;
//   - range:      a Range past the end is 416 where the answer takes ranges, and ignored elsewhere;
//   - keys:       a key in every position of the request: never a 5xx, and no 8 characters of its
//                 secret in any answer (and, checked once at the end, in the server's log); a key
//                 after more headers than the CDN's firewall sees: 431;
//   - kill:       a client that goes away after the head: the server goes on answering;
//   - neverReads: a client that asks and never reads: its connection is closed by the server (all
//                 targets at once);
//   - crowd:      64 such clients from one address while another address is answered, memory bounded;
//   - poison:     a request carrying a key, another coding and the nginx front's own headers (which
//                 only the front may set) does not change what a plain request is answered next:
//                 nothing one client sends is kept and given to another.
import net from 'node:net';
import { rawRequest, type RawReply } from './raw-request.js';
import { filler } from './header-shapes.js';
import { HEADER_LIMITS } from '../../edge/contract/header-limits.js';
import { eventually } from './wait.js';
import { establishedFrom as established, rssBytes as residentBytes } from '../../bench/servers.js';

export interface Target {
  /** What the table calls it. */
  label: string;
  /** Path and query. */
  path: string;
}

export interface Subject {
  /** `http://127.0.0.1:PORT` */
  base: string;
  /** The process whose memory is bounded. */
  pid: number;
  /** An issued key, and a request every subject answers 200 (to show another client is served). */
  key: string;
  probe: string;
  /** The resident memory the subject must stay under while attacked. */
  rssBoundBytes: number;
  /** The status the subject answers a path with before it reads the request's headers (a front's own
   * refusal of a path it never passes on), if any: what a key past the header bounds gets there. */
  refusedUnread?: (path: string) => number | undefined;
}

export type Finding = string;

/** Addresses of this machine (all of 127/8 is loopback on Linux): one per role, so that per-address
 * limits count each role apart. */
const ADDRESS = { attacker: '127.0.0.31', crowd: '127.0.0.32', other: '127.0.0.33', keys: '127.0.0.34' };
export const CROWD = 64;

/** Connections the kernel holds established between the subject's port and `client`. */
const establishedFrom = (base: string, client: string) => established(Number(new URL(base).port), client);
/** The subject's resident memory (0 once it is gone). */
const rssBytes = (pid: number) => residentBytes(pid) ?? 0;

/** The secret part of a key and every 8-character piece of it. */
export function secretPieces(key: string): string[] {
  const secret = key.split('_').slice(2).join('_');
  const pieces: string[] = [];
  for (let i = 0; i + 8 <= secret.length; i++) pieces.push(secret.slice(i, i + 8));
  return pieces;
}

/** Does `text` carry 8 characters of the key's secret, as they are or percent-encoded? */
export function leaks(text: string, key: string): boolean {
  let decoded = text;
  try {
    decoded = decodeURIComponent(decodeURIComponent(text));
  } catch {}
  const pieces = secretPieces(key);
  if (pieces.length === 0) return false;
  // One pass over a text for all pieces (answers are searched whole, a pack among them); a text
  // unchanged by decoding (or not decodable) is searched once.
  const any = new RegExp(pieces.map((p) => p.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')).join('|'));
  return any.test(text) || (decoded !== text && any.test(decoded));
}

const get = (s: Subject, t: Target, headers: Record<string, string> = {}, from?: string, method = 'GET') =>
  rawRequest(s.base, t.path, { headers, from, method });

const describe = (r: RawReply) => `${r.status} (${r.headers['content-length'] ?? '?'} bytes)`;

async function head(s: Subject, t: Target): Promise<Finding[]> {
  const [g, h] = [await get(s, t), await get(s, t, {}, undefined, 'HEAD')];
  const found: Finding[] = [];
  if (h.status !== g.status) found.push(`HEAD ${describe(h)} but GET ${describe(g)}`);
  if (h.body.length > 0) found.push(`HEAD sent a body of ${h.body.length} bytes`);
  if (h.headers['content-length'] !== g.headers['content-length'])
    found.push(`HEAD says ${h.headers['content-length']} bytes, GET ${g.headers['content-length']}`);
  return found;
}

async function range(s: Subject, t: Target): Promise<Finding[]> {
  const whole = await get(s, t);
  const size = whole.body.length;
  const found: Finding[] = [];
  for (const asked of [`bytes=${size}-`, `bytes=${size + 1}-${size + 100}`, 'bytes=99999999999-']) {
    const r = await get(s, t, { Range: asked });
    if (r.status >= 500) found.push(`Range ${asked}: ${describe(r)}`);
    else if (whole.headers['accept-ranges'] === 'bytes' && whole.status === 200) {
      if (r.status !== 416 || r.headers['content-range'] !== `bytes */${size}`)
        found.push(`Range ${asked} of ${size} bytes: ${describe(r)}, not 416 with Content-Range bytes */${size}`);
    } else if (r.status !== whole.status || !r.body.equals(whole.body))
      found.push(`Range ${asked} not taken: ${describe(r)}, not the answer without it (${describe(whole)})`);
  }
  return found;
}

/** The key in each place a client may put it, on purpose or by mistake (test/helpers/paste-shapes.ts
 * has every careless spelling; redaction.test.ts tries them all), and after more headers than the
 * CDN's firewall sees (header-shapes.ts), which every entry refuses with `status`. */
export function keyPlacements(
  path: string,
  key: string,
): { where: string; path: string; headers: Record<string, string>; status?: number }[] {
  const join = path.includes('?') ? '&' : '?';
  const encoded = [...key].map((c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`).join('');
  return [
    { where: 'Authorization', path, headers: { Authorization: `Bearer ${key}` } },
    { where: 'Authorization, no scheme', path, headers: { Authorization: key } },
    { where: 'Authorization, one character more', path, headers: { Authorization: `Bearer ${key}.` } },
    {
      where: 'Authorization after 8 KiB of other headers',
      path,
      headers: { ...Object.fromEntries(filler(8, 1024)), Authorization: `Bearer ${key}` },
      status: 431,
    },
    {
      where: 'Authorization after 200 other headers',
      path,
      headers: { ...Object.fromEntries(filler(HEADER_LIMITS.fields, 1)), Authorization: `Bearer ${key}` },
      status: 431,
    },
    { where: 'X-Api-Key', path, headers: { 'X-Api-Key': key } },
    { where: 'Cookie', path, headers: { Cookie: `key=${key}` } },
    { where: 'Referer', path, headers: { Referer: `https://example.org/?key=${key}` } },
    { where: 'query', path: `${path}${join}api_key=${key}`, headers: {} },
    { where: 'query, percent-encoded', path: `${path}${join}key=${encoded}`, headers: {} },
    { where: 'path segment', path: `${path.split('?')[0]}/${key}`, headers: {} },
    { where: 'path, percent-encoded', path: `${path.split('?')[0]}${encoded}`, headers: {} },
    // Pasted carelessly: a stray character inside it, or the secret without the key's prefix.
    {
      where: 'query, a stray character inside',
      path: `${path}${join}key=${key.slice(0, 30)}.${key.slice(30)}`,
      headers: {},
    },
    {
      where: 'path, the secret alone',
      path: `${path.split('?')[0]}/${key.split('_').slice(2).join('_')}`,
      headers: {},
    },
  ];
}

async function keys(s: Subject, t: Target): Promise<Finding[]> {
  const found: Finding[] = [];
  for (const p of keyPlacements(t.path, s.key)) {
    const r = await rawRequest(s.base, p.path, { headers: p.headers, from: ADDRESS.keys });
    const wanted = p.status && (s.refusedUnread?.(p.path) ?? p.status);
    if (r.status >= 500 || (wanted && r.status !== wanted))
      found.push(`key in ${p.where}: ${describe(r)}${wanted ? `, not ${wanted}` : ''}`);
    const said = `${JSON.stringify(r.headers)}\n${r.text}`;
    if (leaks(said, s.key)) found.push(`key in ${p.where}: the answer carries a piece of its secret`);
  }
  return found;
}

async function kill(s: Subject, t: Target): Promise<Finding[]> {
  await new Promise<void>((done) => {
    const socket = net.connect({
      host: '127.0.0.1',
      port: Number(new URL(s.base).port),
      localAddress: ADDRESS.attacker,
    });
    socket.on('error', () => done());
    socket.once('data', () => {
      socket.destroy();
      done();
    });
    socket.once('close', () => done());
    socket.write(`GET ${t.path} HTTP/1.1\r\nHost: atlas.test\r\n\r\n`);
  });
  const after = await rawRequest(s.base, s.probe, { from: ADDRESS.other });
  return after.status === 200 ? [] : [`after a client went away mid-answer, ${s.probe} answered ${describe(after)}`];
}

/** Connections from `from`, each asking for the target and never reading, once each is established. */
async function stalled(s: Subject, t: Target, from: string, count: number): Promise<net.Socket[]> {
  const port = Number(new URL(s.base).port);
  return Promise.all(
    Array.from(
      { length: count },
      () =>
        new Promise<net.Socket>((connected) => {
          const socket = net.connect({ host: '127.0.0.1', port, localAddress: from });
          socket.on('error', () => connected(socket));
          socket.pause();
          socket.write(`GET ${t.path} HTTP/1.1\r\nHost: atlas.test\r\n\r\n`, () => connected(socket));
        }),
    ),
  );
}

/** A client that asks for each target and never reads: the server closes every such connection
 * (whatever was answered, or cut off), in a bounded time. One connection per target, all at once. */
export async function neverReads(s: Subject, targets: Target[]): Promise<Record<string, Finding[]>> {
  const sockets = (await Promise.all(targets.map((t) => stalled(s, t, ADDRESS.attacker, 1)))).flat();
  try {
    await eventually(
      async () => establishedFrom(s.base, ADDRESS.attacker),
      (n) => n === 0,
      'the server to close the connections of clients that never read',
    );
    return {};
  } catch (err) {
    const open = establishedFrom(s.base, ADDRESS.attacker);
    return { 'never reads': [`${(err as Error).message}: ${open} of ${targets.length} connections still open`] };
  } finally {
    for (const socket of sockets) socket.destroy();
  }
}

async function crowd(s: Subject, t: Target): Promise<Finding[]> {
  const found: Finding[] = [];
  let peak = rssBytes(s.pid);
  const sampler = setInterval(() => (peak = Math.max(peak, rssBytes(s.pid))), 50);
  // Every one of them connected and asked: then another address asks.
  const sockets = await stalled(s, t, ADDRESS.crowd, CROWD);
  try {
    for (const path of [t.path, s.probe]) {
      const r = await rawRequest(s.base, path, { from: ADDRESS.other });
      if (r.status >= 500 || r.status === 429) found.push(`another address asking ${path} meanwhile: ${describe(r)}`);
    }
  } finally {
    clearInterval(sampler);
    for (const socket of sockets) socket.destroy();
  }
  peak = Math.max(peak, rssBytes(s.pid));
  if (peak > s.rssBoundBytes)
    found.push(
      `${CROWD} clients not reading: ${(peak / 2 ** 20).toFixed(0)} MiB resident, over ${(s.rssBoundBytes / 2 ** 20).toFixed(0)} MiB`,
    );
  return found;
}

/** What a plain anonymous answer is made of besides its body, for comparing two of them: its status
 * and the headers that name the representation and its count (not those of the message or the minute). */
const essence = (r: RawReply) =>
  JSON.stringify([
    r.status,
    ...['etag', 'content-encoding', 'content-type', 'cache-control', 'ratelimit-limit', 'ratelimit-policy', 'link'].map(
      (h) => r.headers[h] ?? null,
    ),
  ]);
/** Two answers alike: their essence and their bytes. */
const alike = (a: RawReply, b: RawReply) => essence(a) === essence(b) && a.body.equals(b.body);

/** The nginx front's own request headers (edge/server/front-count.ts, front-file.ts), as a client
 * might forge them. */
const FRONT_HEADERS = {
  'X-Isoatlas-Front-Counted': '1000000000/min; ipv6=/64',
  'X-Isoatlas-Front-State': '"0-0"',
  'X-Isoatlas-Front-Target': '/api/v1/release',
  'X-Isoatlas-Front-Type': 'application/json; charset=utf-8',
  'X-Isoatlas-Front-Manifest': '0'.repeat(64),
};

async function poison(s: Subject, t: Target): Promise<Finding[]> {
  const plain = await get(s, t, {}, ADDRESS.other);
  const found: Finding[] = [];
  const odd: Record<string, string>[] = [
    { Authorization: `Bearer ${s.key}` },
    { 'Accept-Encoding': 'gzip' },
    { ...FRONT_HEADERS },
    { ...FRONT_HEADERS, Authorization: `Bearer ${s.key}`, 'Accept-Encoding': 'br' },
  ];
  // Each twice: a front keeps an answer a few seconds after it first sees a request.
  for (const headers of [...odd, ...odd]) {
    await get(s, t, headers, ADDRESS.attacker);
    const after = await get(s, t, {}, ADDRESS.other);
    if (!alike(after, plain))
      found.push(`after a request with ${Object.keys(headers).join(', ')}: ${describe(after)}, not ${describe(plain)}`);
  }
  return found;
}

/** The attacks made on each target in turn (neverReads is made on all targets at once). */
export const attacks = { head, range, keys, kill, crowd, poison } as const;
export type AttackName = keyof typeof attacks;

/** Every attack on every target, in turn; what each found, by target and attack. */
export async function attackAll(
  s: Subject,
  targets: Target[],
  names: AttackName[] = Object.keys(attacks) as AttackName[],
): Promise<Record<string, Finding[]>> {
  const report: Record<string, Finding[]> = {};
  for (const t of targets)
    for (const name of names) {
      const found = await attacks[name](s, t);
      if (found.length) report[`${t.label} ${t.path} ${name}`] = found;
    }
  return report;
}
