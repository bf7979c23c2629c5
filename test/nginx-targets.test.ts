// The nginx front and the server refuse the same request targets the same way, /metrics and
// /admission cannot be reached through the front by any spelling, and no key character reaches an
// answer or a log line of either, with the server up or down.
import { beforeAll, describe, expect, inject, it } from 'vitest';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { REFUSED_TARGET_DETAIL, refusedTarget } from '../edge/contract/targets.js';
import { SERVER_LIMITS } from '../edge/adapters/server-limits.js';
import { HEADER_LIMITS } from '../edge/contract/header-limits.js';
import { filler } from './helpers/header-shapes.js';
import { UNWRITTEN_TARGET, atMostPattern } from '../edge/server/nginx-config.js';
import { frontRequests, type RunningFront } from './helpers/nginx-front.js';
import { frontsOfSuite } from './helpers/nginx-suite.js';
import { REFUSED, leaksSecret } from './helpers/targets.js';
import { rawRequest as send, type RawReply } from './helpers/raw-request.js';
import { issueTestKey } from './helpers/test-key.js';

const PROBLEM = 'application/problem+json; charset=utf-8';
const { front, temp } = frontsOfSuite();

/** Every spelling of a door we could think of: separators, dot segments and letters, raw and encoded. */
function spellings(door: string): string[] {
  const hex = (c: string) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`;
  return [
    `/${door}/`,
    `/${door}?x`,
    `/${door}?`,
    `/${door}#x`,
    `/${door};x`,
    `/${door}.`,
    `/${door}%20`,
    `/${door}%00`,
    `/${door}%2F`,
    `/${door}\\`,
    `//${door}`,
    `///${door}`,
    `/./${door}`,
    `/%2e/${door}`,
    `/x/../${door}`,
    `/x/%2e%2e/${door}`,
    `/x/.%2E/${door}`,
    `/api/v1/../../${door}`,
    `/api/v1/genes/..%2F..%2F..%2F${door}`,
    `/x\\..\\${door}`,
    `/api/v1/genes/x\\..\\..\\..\\${door}`,
    `/x%2F..%2F${door}`,
    `/x%2f..%2f${door}`,
    `/x%5C..%5C${door}`,
    `/x%5c..%5c${door}`,
    `/${door.toUpperCase()}`,
    `/${hex(door[0])}${door.slice(1)}`,
    `/${[...door].map(hex).join('')}`,
    `/${door}/.`,
    `/${door}/..`,
    `/.isoatlas/${door}`,
    `http://x/${door}`,
    `/api/v1/${door}`,
    `/${door}%23`,
  ];
}
const DOORS = ['/metrics', '/admission'];
const SPELLINGS = [...DOORS, ...DOORS.flatMap((d) => spellings(d.slice(1)))];

// The front counts and answers a request itself only when its head is short enough that it cannot
// hold more fields than the CDN inspects; nginx compares lengths by this pattern (a map has no `<=`).
describe('the short-head pattern', () => {
  it('matches exactly the numbers from 0 to its bound', () => {
    for (const most of [0, 9, 10, 99, 100, 101, 602, 8192]) {
      const pattern = new RegExp(atMostPattern(most));
      const wrong = Array.from({ length: 10_000 }, (_, n) => n).filter((n) => pattern.test(String(n)) !== n <= most);
      expect(wrong, `at most ${most}`).toEqual([]);
    }
  });
});

describe('refused targets through the front and at the server', () => {
  let f: RunningFront;
  let manifest: string;
  beforeAll(async () => {
    f = await front({ dir: inject('fixtureTree') });
    manifest = /X-Isoatlas-Front-Manifest "([0-9a-f]{64})"/.exec(f.config)![1];
  });

  it(`answers each of ${SPELLINGS.length} spellings of /metrics and /admission as the server does, never with either`, async () => {
    expect(SPELLINGS.length).toBeGreaterThanOrEqual(40);
    // The manifest header would make a reached admission answer 204; directly, from an address the
    // server does not trust as a front, /admission is not one.
    const headers = { 'X-Isoatlas-Front-Manifest': manifest };
    for (const target of SPELLINGS) {
      const viaFront = await send(f.base, target, { headers });
      const direct = await send(f.server.base, target, { headers, from: '127.0.0.5' });
      expect(viaFront.status, target).toBe(direct.status);
      expect(viaFront.status, target).not.toBe(403); // an admission that refers the request on
      expect(viaFront.status, target).toBeGreaterThanOrEqual(400);
      expect(viaFront.status, target).toBeLessThan(500);
      expect(viaFront.headers['content-type'], target).toBe(PROBLEM);
      if (refusedTarget(target))
        expect([viaFront.status, JSON.parse(viaFront.body.toString('latin1')).detail], target).toEqual([
          400,
          REFUSED_TARGET_DETAIL,
        ]);
    }
  });

  it('refuses every refused target with the server’s status and detail, before any location', async () => {
    for (const target of [...REFUSED, ...SPELLINGS.filter(refusedTarget)]) {
      const method = target === '*' ? 'OPTIONS' : 'GET';
      const viaFront = await send(f.base, target, { method });
      const direct = await send(f.server.base, target, { method });
      const seen = (r: RawReply) => [r.status, r.headers['content-type'], JSON.parse(r.body.toString('latin1')).detail];
      expect(seen(viaFront), target.slice(0, 80)).toEqual([400, PROBLEM, REFUSED_TARGET_DETAIL]);
      expect(seen(direct), target.slice(0, 80)).toEqual(seen(viaFront));
    }
    // A file the front would serve itself is refused too when its target climbs to it.
    const [gene] = [...(await frontRequests(inject('fixtureTree'))).keys()].filter((k) =>
      k.startsWith('/api/v1/genes/ENSG'),
    );
    expect((await send(f.base, gene)).status).toBe(200);
    expect((await send(f.base, gene.replace('/genes/', '/x/../genes/'))).status).toBe(400);
  });

  it('answers headers past the limit with 431 in the status line and the body alike, as the server does', async () => {
    const headers = { 'X-Padding': 'p'.repeat(SERVER_LIMITS.maxHeaderSize) };
    const viaFront = await send(f.base, '/api/v1/release', { headers });
    const direct = await send(f.server.base, '/api/v1/release', { headers });
    for (const [what, r] of [
      ['front', viaFront],
      ['server', direct],
    ] as const) {
      expect([r.status, r.headers['content-type'], JSON.parse(r.text).status], what).toEqual([431, PROBLEM, 431]);
    }
    expect(JSON.parse(viaFront.text).detail).toBe(JSON.parse(direct.text).detail);
  });

  it('answers a head past the limit in all, each line under it, with 431 as the server does, and one within it', async () => {
    const lines = (n: number) =>
      Object.fromEntries(
        Array.from({ length: n }, (_, i) => [`X-Padding-${i}`, 'p'.repeat(SERVER_LIMITS.maxHeaderSize / 4)]),
      );
    // A path the front answers itself (a request it passes on, the server refuses on its own). One line
    // within: two would be past the bound on header bytes (header-limits.ts), which only the server counts.
    for (const [n, status] of [
      [6, 431],
      [1, 404],
    ] as const) {
      const viaFront = await send(f.base, '/metrics', { headers: lines(n) });
      const direct = await send(f.server.base, '/metrics', { headers: lines(n), from: '127.0.0.5' });
      expect([viaFront.status, direct.status], `${n} lines`).toEqual([status, status]);
    }
  });

  it('answers a request past the header bounds of the CDN 431 as the server does, for a file it would send itself too, and serves one just within them', async () => {
    const [gene] = [...(await frontRequests(inject('fixtureTree'))).keys()].filter((k) =>
      k.startsWith('/api/v1/genes/ENSG'),
    );
    // The client adds Host and Connection: 198 more fields are the bound's 200. The front drops the
    // client's Connection (and replaces its X-Forwarded-For), so the server counts one field less of a
    // request through it: past the bound by two fields, it is past it there too.
    const fields = (n: number) => Object.fromEntries(filler(n, 1));
    const bytes = (n: number) => Object.fromEntries(filler(1, n));
    for (const [what, headers, status] of [
      ['200 fields', fields(HEADER_LIMITS.fields - 2), 200],
      ['202 fields', fields(HEADER_LIMITS.fields), 431],
      ['a field past the byte bound alone', bytes(HEADER_LIMITS.bytes), 431],
    ] as const) {
      const viaFront = await send(f.base, gene, { headers });
      const direct = await send(f.server.base, gene, { headers, from: '127.0.0.5' });
      expect([viaFront.status, direct.status], what).toEqual([status, status]);
      if (status === 431) expect(JSON.parse(viaFront.text), what).toEqual(JSON.parse(direct.text));
    }
  });

  it('with --metrics on, no spelling reaches the metrics or an admission through the front', async () => {
    const m = await front({ dir: inject('fixtureTree'), serverArgs: ['--metrics'] });
    const headers = { 'X-Isoatlas-Front-Manifest': manifest };
    for (const target of SPELLINGS) {
      const r = await send(m.base, target, { headers });
      expect(r.status, target).toBeGreaterThanOrEqual(400);
      expect(r.status, target).not.toBe(403);
      expect(r.body.toString('latin1'), target).not.toContain('isoatlas_requests_total');
    }
    // The server never answered a request for /metrics (its own count says so), and still serves.
    const metrics = await send(m.server.base, '/metrics');
    expect(metrics.status).toBe(200);
    expect(metrics.body.toString('latin1')).toContain('isoatlas_requests_total');
    expect(metrics.body.toString('latin1')).not.toContain('route="metrics"');
    expect((await send(m.server.base, '/health')).status).toBe(200);
  });
});

describe('no key character in any answer or log', () => {
  it('a key in the path, a parameter name or value, or a header: not in answers, the server log, nginx’s access or error log, up or down', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'isoatlas-nginx-keyscan-'));
    temp.push(dir);
    const keysDir = join(dir, 'keys');
    const { key, secret } = await issueTestKey(keysDir, 'key redaction tests');
    expect(secret).toHaveLength(43);
    const f = await front({ dir: inject('fixtureTree'), serverArgs: ['--keys-dir', keysDir] });
    const [gene] = [...(await frontRequests(inject('fixtureTree'))).keys()].filter((k) =>
      /^\/api\/v1\/genes\/ENSG[^/]+$/.test(k),
    );
    const encoded = [...key].map((c) => `%${c.charCodeAt(0).toString(16)}`).join('');
    const targets = [
      `/api/v1/genes/${key}`,
      `/api/v1/genes/${encoded}`,
      `/api/v1/genes/${key.replace(/_/g, '%5F')}/isoforms`,
      `/api/v1/${key}/..${gene.slice(7)}`,
      `/api/v1/${'a'.repeat(160)}${key}`,
      `/api/v1/genes/${key}\\..\\x`,
      `/${key}`,
      ...[0, 13, 20, 31].map((at) => `${gene}?${'x'.repeat(at)}${key}=1`),
      ...[0, 5, 12].map((at) => `/api/v1/genes/PRR5/isoforms?limit=${'1'.repeat(at)}${key}`),
      `/api/v1/search?query=${key}`,
      `/api/v1/search?query=${encoded}`,
      `${gene}?release=${key}`,
      `/api/v1/docs/${key}`,
      `/api/v1/docs/x?release=${'r'.repeat(70)}${key}`,
    ];
    const headerSets: Record<string, string>[] = [
      { Authorization: `Bearer ${key} extra` },
      { Authorization: `Basic ${key}` },
      { Authorization: key },
      { Authorization: `Bearer ${key.slice(0, -1)}` },
      { 'X-Api-Key': key },
      { Referer: `https://atlas.test/?key=${key}` },
      { Cookie: `key=${key}` },
    ];
    const answers: string[] = [];
    const ask = async (base: string, target: string, headers: Record<string, string> = {}) => {
      const r = await send(base, target, { headers });
      answers.push(`${target.slice(0, 20)} ${r.status} ${JSON.stringify(r.headers)} ${r.body.toString('latin1')}`);
      return r.status;
    };
    for (const base of [f.base, f.server.base]) {
      for (const target of targets) expect(await ask(base, target), target).toBeLessThan(500);
      for (const headers of headerSets)
        for (const target of [gene, '/api/v1/search?query=PRR5'])
          expect(await ask(base, target, headers)).toBeLessThan(500);
    }
    expect(await f.server.stop()).toBe(0);
    for (const target of [...targets, gene]) await ask(f.base, target);
    for (const headers of headerSets) expect(await ask(f.base, '/api/v1/search?query=PRR5', headers)).toBe(502);
    expect(answers.some((a) => a.includes(' 502 '))).toBe(true);
    // What each would show: the answers, the server's output, nginx's access and error logs.
    const places = { error: f.errorLog(), access: f.frontLog(), server: f.server.logs(), answers: answers.join('\n') };
    expect(places.access.length).toBeGreaterThan(0);
    for (const [place, text] of Object.entries(places)) {
      // Line numbers only: a line that leaks is not printed.
      const lines = text.split('\n').flatMap((line, i) => (leaksSecret(line, secret) ? [i + 1] : []));
      expect(lines, `${place}: lines holding part of the key's secret`).toEqual([]);
    }
  });
});

/** The front's log lines. */
const lines = (log: string) =>
  log
    .split('\n')
    .filter(Boolean)
    .map((line) => JSON.parse(line) as { method: string; path: string; status: number });

/** The key with its prefix spelled in each way the server reads as the prefix (redactKeys): each
 * character percent-encoded in either hex case, a letter in capitals as itself or encoded, encoded
 * twice or three times (`%2569`), the prefix in capitals, and the whole key encoded. */
function prefixSpellings(key: string): Record<string, string> {
  const prefix = 'isoatlas_';
  const rest = key.slice(prefix.length);
  const hex = (c: string) => c.charCodeAt(0).toString(16).padStart(2, '0');
  const at = (i: number, spelled: string) => prefix.slice(0, i) + spelled + prefix.slice(i + 1) + rest;
  const spelled: Record<string, string> = { 'as issued': key, 'in capitals': prefix.toUpperCase() + rest };
  [...prefix].forEach((c, i) => {
    const place = `${c} (character ${i + 1})`;
    for (const letter of new Set([c, c.toUpperCase()])) {
      if (letter !== c) spelled[`${letter} for ${place}`] = at(i, letter);
      for (const code of new Set([hex(letter), hex(letter).toUpperCase()])) {
        spelled[`${place} as %${code}`] = at(i, `%${code}`);
        spelled[`${place} as %25${code}`] = at(i, `%25${code}`);
      }
    }
  });
  spelled['_ as %25255F'] = at(prefix.length - 1, '%25255F');
  spelled['the whole key encoded'] = [...key].map((c) => `%${hex(c).toUpperCase()}`).join('');
  return spelled;
}

describe('a key in a target, in every spelling the server reads as one', () => {
  it('is in no answer, header or log line of the front, nor of the server, whether nginx refuses the target, answers it or passes it on, up or down', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'isoatlas-nginx-spellings-'));
    temp.push(dir);
    const issued = await issueTestKey(join(dir, 'keys'), 'key spelling tests');
    const f = await front({ dir: inject('fixtureTree'), serverArgs: ['--keys-dir', join(dir, 'keys')] });
    const spellings = Object.entries(prefixSpellings(issued.key));
    expect(spellings.length).toBe(new Set(spellings.map(([, s]) => s)).size);
    expect(spellings.length).toBeGreaterThanOrEqual(50);
    const contexts: [string, (spelled: string) => string, 'front' | 'server'][] = [
      ['a backslash, which the front refuses', (s) => `/api/v1/genes/${s}\\x`, 'front'],
      ['an overlong segment, which the front refuses', (s) => `/api/v1/genes/${s}${'a'.repeat(200)}`, 'front'],
      ['a query on a path the front answers 404', (s) => `/metrics?${s}`, 'front'],
      ['a path the server answers 404', (s) => `/api/v1/genes/${s}`, 'server'],
    ];
    const answers: string[] = [];
    // Labels only, here and below: a failure prints no piece of the key.
    const namedTarget: string[] = [];
    const ask = async (base: string, target: string) => {
      const r = await send(base, target);
      answers.push(`${r.status} ${JSON.stringify(r.headers)} ${r.body.toString('latin1')}`);
      return r;
    };
    for (const [what, spelled] of spellings)
      for (const [where, target, answeredBy] of contexts) {
        const viaFront = await ask(f.base, target(spelled));
        const direct = await ask(f.server.base, target(spelled));
        for (const r of [viaFront, direct]) {
          expect(r.status, `${what}, ${where}`).toBeGreaterThanOrEqual(400);
          expect(r.status, `${what}, ${where}`).toBeLessThan(500);
          expect(r.headers['content-type']).toBe(PROBLEM);
        }
        // The front's own problems name no target they cannot vouch for.
        if (answeredBy === 'front' && JSON.parse(viaFront.text).instance !== '/') namedTarget.push(`${what}, ${where}`);
      }
    // With the server down: nginx's own 502, and its error log (kept at crit) quiet.
    expect(await f.server.stop()).toBe(0);
    for (const [what, spelled] of spellings)
      expect((await ask(f.base, `/api/v1/genes/${spelled}`)).status, what).toBe(502);
    const places = { error: f.errorLog(), access: f.frontLog(), server: f.server.logs(), answers: answers.join('\n') };
    for (const [place, text] of Object.entries(places)) {
      // Line numbers only: a line that leaks is not printed.
      const lines = text
        .split('\n')
        .flatMap((line, i) => (leaksSecret(line, issued.secret) || leaksSecret(line, issued.id) ? [i + 1] : []));
      expect(lines, `${place}: lines holding 8 characters in a row of the key's id or secret`).toEqual([]);
    }
    // A line for each of the front's own answers (three contexts, and the 502s), each saying what it
    // left out: nginx read every spelling as a key.
    const log = await f.untilFrontLogged((l) => lines(l).length === spellings.length * 4, 'every line');
    const notRedacted = lines(log).filter((l) => l.path !== '[redacted: shaped like an API key]');
    expect(notRedacted.length, 'lines writing something of a target holding a key').toBe(0);
    expect(namedTarget, "the front's problems whose instance is not /").toEqual([]);
  });

  it('writes a target of its own answers only when it cannot hold a piece of a key; else the route it names, else nothing of it', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'isoatlas-nginx-written-'));
    temp.push(dir);
    const { secret } = await issueTestKey(join(dir, 'keys'), 'key spelling tests');
    const f = await front({ dir: inject('fixtureTree'), serverArgs: ['--keys-dir', join(dir, 'keys')] });
    expect(await f.server.stop()).toBe(0);
    // [method, target, status, what the front's log line says of it, the problem's instance]
    const cases: [string, string, number, string, string][] = [
      ['GET', '/api/v1/release', 502, '/api/v1/release', '/api/v1/release'],
      ['GET', '/metrics?x=1', 404, '/metrics?x=1', '/metrics?x=1'],
      // A run of eight characters could be a piece of a secret: the route instead.
      ['GET', '/api/v1/releases', 502, '/api/v1/releases', '/'],
      ['GET', '/api/v1/genes/ENSG00000099917', 502, '/api/v1/genes/{symbol}', '/'],
      // A secret pasted without the key's prefix.
      ['GET', `/api/v1/isoforms/${secret}/domains?limit=3`, 502, '/api/v1/isoforms/{transcript_id}/domains', '/'],
      ['GET', `/api/v1/genes/${secret}\\x`, 400, '/api/v1/genes/{symbol}', '/'],
      ['GET', `/${secret}`, 502, UNWRITTEN_TARGET, '/'],
      ['GET', '/api/v1/genes/%41BC', 502, '/api/v1/genes/{symbol}', '/'],
      // A method of the client's own words; a POST, as sent (nginx's error page would say GET).
      [secret.replace(/[^A-Za-z]/g, '').toUpperCase(), '/api/v1/release', 502, '/api/v1/release', '/api/v1/release'],
      ['POST', '/api/v1/release', 502, '/api/v1/release', '/api/v1/release'],
    ];
    for (const [i, [method, target, status, path, instance]] of cases.entries()) {
      // Compared, not printed, where it may hold the secret.
      const r = await send(f.base, target, { method });
      expect(r.status, `case ${i}`).toBe(status);
      const log = await f.untilFrontLogged((l) => lines(l).length === i + 1, `line ${i + 1}`);
      const line = lines(log)[i];
      expect(line.path === path, `case ${i}: the line's path is ${path}`).toBe(true);
      expect(line.method === (['GET', 'POST'].includes(method) ? method : 'other'), `case ${i}: method`).toBe(true);
      expect(JSON.parse(r.text).instance === instance, `case ${i}: the instance is ${instance}`).toBe(true);
      expect(leaksSecret(r.text, secret) || leaksSecret(JSON.stringify(r.headers), secret), `case ${i}`).toBe(false);
    }
    expect(leaksSecret(f.frontLog(), secret)).toBe(false);
  });
});
