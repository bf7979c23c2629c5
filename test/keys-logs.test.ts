// Key material never reaches a log line, an error body or a response header: a real key-required
// server, keys issued into its registry, and requests carrying valid, wrong, revoked and malformed
// keys in every place a client might put one (the Authorization header, the path, the query, other
// headers, percent-encoded). The scanner behind the run-wide check (helpers/key-scan.ts) is tested
// here too, so that check can fail.
import { afterAll, beforeAll, describe, expect, inject, it, vi } from 'vitest';
import { mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { keyId } from '../edge/access/key-format.js';
import { createHandler } from '../edge/handler.js';
import { LocalOrigin } from '../edge/origins/local.js';
import { AccessControl } from '../edge/access/control.js';
import { resolveAccessConfig } from '../edge/access/config.js';
import { issueKey, revokeKey } from '../build/keys/registry.js';
import { startServer, type RunningServer } from './helpers/server.js';
import { KEY_MATERIAL, scanForKeys } from './helpers/key-scan.js';
import { PASTE_SHAPES, PASTE_SHAPES_BY_CHANCE, seededPastes } from './helpers/paste-shapes.js';
import { rawRequest } from './helpers/raw-request.js';
import { leaksSecret } from './helpers/targets.js';

/** The pastes' random choices, from a seed: a run that finds a leak finds it again. */
const pasteChoices = seededPastes(45).random;

let keysDir: string;
let server: RunningServer;
let valid: string;
let revoked: string;
/** Everything that must never be echoed: whole keys and their secret parts. */
const secrets: string[] = [];

/** Percent-decoded, leniently: an encoded key is still the key. */
const percentDecode = (text: string) =>
  text.replace(/%([0-9a-fA-F]{2})/g, (_, hex: string) => String.fromCharCode(parseInt(hex, 16)));
const secretOf = (key: string) => key.slice('isoatlas_'.length + 9);
function remember(...keys: string[]) {
  for (const k of keys) secrets.push(k, secretOf(k));
}

beforeAll(async () => {
  keysDir = mkdtempSync(join(tmpdir(), 'isoatlas-keys-logs-'));
  delete process.env.ISOATLAS_KEY_SECRET;
  valid = (await issueKey(keysDir, { name: 'Log', affiliation: 'Lab', use: 'log hygiene tests', tier: 'standard' }))
    .key;
  revoked = (await issueKey(keysDir, { name: 'Log', affiliation: 'Lab', use: 'log hygiene tests', tier: 'standard' }))
    .key;
  await revokeKey(keysDir, keyId(revoked)!);
  remember(valid, revoked);
  server = await startServer({
    dir: inject('fixtureTree'),
    extraArgs: ['--access', 'key-required', '--keys-dir', keysDir],
  });
});
afterAll(async () => {
  await server?.stop();
  rmSync(keysDir, { recursive: true, force: true });
});

/** The key with one character of its secret changed: well-formed, known id, wrong secret. */
function wrongSecret(key: string): string {
  const i = key.length - 5;
  return key.slice(0, i) + (key[i] === 'A' ? 'B' : 'A') + key.slice(i + 1);
}

describe('keys in requests, against a real server', () => {
  it('never echo a key or its secret in a body, a header or the log', async () => {
    const wrong = wrongSecret(valid);
    const unknownId = `isoatlas_aaaaaaaa_${secretOf(valid)}`;
    remember(wrong, unknownId);
    const enc = (k: string) => k.replace(/_/g, '%5F');
    const encodeAll = (k: string) => [...k].map((c) => `%${c.charCodeAt(0).toString(16)}`).join('');
    const requests: { path: string; headers?: Record<string, string>; expect: number }[] = [
      { path: '/genes/PRR5', headers: { Authorization: `Bearer ${valid}` }, expect: 200 },
      { path: '/genes/PRR5', headers: { Authorization: `Bearer ${wrong}` }, expect: 401 },
      { path: '/genes/PRR5', headers: { Authorization: `Bearer ${revoked}` }, expect: 401 },
      { path: '/genes/PRR5', headers: { Authorization: `Bearer ${unknownId}` }, expect: 401 },
      { path: '/genes/PRR5', headers: { Authorization: `Bearer ${valid}x` }, expect: 401 },
      { path: '/genes/PRR5', headers: { Authorization: `Bearer ${valid.slice(0, -1)}` }, expect: 401 },
      {
        path: '/genes/PRR5',
        headers: { Authorization: `Basic ${Buffer.from(`user:${valid}`).toString('base64')}` },
        expect: 401,
      },
      { path: '/genes/PRR5', headers: { Authorization: `Bearer ${valid} ${valid}` }, expect: 401 },
      { path: '/genes/PRR5', headers: { Authorization: valid }, expect: 401 },
      { path: `/genes/PRR5?api_key=${valid}`, headers: { Authorization: `Bearer ${valid}` }, expect: 400 },
      { path: `/genes/PRR5?api_key=${enc(valid)}`, headers: { Authorization: `Bearer ${valid}` }, expect: 400 },
      { path: `/genes/${valid}`, headers: { Authorization: `Bearer ${valid}` }, expect: 404 },
      { path: `/genes/${enc(valid)}`, headers: { Authorization: `Bearer ${valid}` }, expect: 404 },
      {
        path: `/genes/${encodeAll(valid)}/isoforms?offset=${encodeAll(valid)}`,
        headers: { Authorization: `Bearer ${valid}` },
        expect: 400,
      },
      { path: `/${valid}`, headers: { Authorization: `Bearer ${valid}` }, expect: 404 },
      { path: `/genes/PRR5`, headers: { 'X-Api-Key': valid, 'If-None-Match': `"${valid}"` }, expect: 401 },
      {
        path: `/genes/PRR5`,
        headers: { Authorization: `Bearer ${valid}`, 'If-None-Match': `"${valid}"` },
        expect: 200,
      },
    ];
    for (const r of requests) {
      const res = await fetch(`${server.api}${r.path}`, { headers: r.headers, redirect: 'manual' });
      const body = await res.text();
      const what = `${percentDecode(r.path).replace(KEY_MATERIAL, '<key>')} → ${res.status}`;
      expect(res.status, what).toBe(r.expect);
      const exposed = percentDecode([body, ...[...res.headers].map(([name, value]) => `${name}: ${value}`)].join('\n'));
      for (const s of secrets) expect(exposed.includes(s), `${what} echoes key material`).toBe(false);
    }
    // The log has a line per request (and the ids of keys are fine), but no key or secret.
    await server
      .untilLogged((text) => (text.match(/"method":"GET"/g)?.length ?? 0) >= requests.length, 'a line per request')
      .catch(() => {});
    const log = percentDecode(server.logs());
    expect(log.match(/"method":"GET"/g)?.length).toBeGreaterThanOrEqual(requests.length);
    for (const s of secrets) expect(log.includes(s), 'the server log holds key material').toBe(false);
    expect(log.match(KEY_MATERIAL)).toBeNull();
  });

  it('an issued key pasted in any shape into the path or the query leaves no piece of its secret in an answer or the log', async () => {
    // Each shape as the fixture's paste helper writes it (under /api/v1/genes/ or the search), and at
    // the root ("no endpoint at …"); with the key in Authorization too (the route's own answer) and
    // without (the 401). No header is echoed by the server, so the path and the query are where a
    // client's text comes back.
    const gets = (text: string) => text.match(/"method":"GET"/g)?.length ?? 0;
    const before = gets(server.logs());
    const pieces: string[] = [];
    let sent = 0;
    for (const [shape, paste] of Object.entries({ ...PASTE_SHAPES, ...PASTE_SHAPES_BY_CHANCE })) {
      for (const [key, authorized] of [
        [valid, true],
        [revoked, false],
      ] as const) {
        const { text, secret } = paste(key, pasteChoices);
        pieces.push(secret);
        for (const target of [text, text.replace('/api/v1/genes/', '/')]) {
          const reply = await rawRequest(server.base, target, {
            headers: authorized ? { Authorization: `Bearer ${valid}` } : {},
          });
          sent++;
          // Judged by the route with the key (the search echoes its query), refused by the gate without
          // it: each echoes the target.
          if (authorized) expect([200, 400, 404], shape).toContain(reply.status);
          else expect(reply.status, shape).toBe(401);
          const answer = [reply.text, ...Object.entries(reply.headers).map(([n, v]) => `${n}: ${v}`)].join('\n');
          // The shape's name only: a failure must not print the key.
          expect(leaksSecret(answer, secret), `${shape}: the answer`).toBe(false);
        }
      }
    }
    const log = await server.untilLogged((text) => gets(text) >= before + sent, 'a line for each request');
    for (const secret of pieces) expect(leaksSecret(log, secret), 'the server log').toBe(false);
  });

  it('an unexpected error whose message holds a key is logged redacted, and its 500 says nothing', async () => {
    // A quota store failing with a plain Error (a bug; not wrapped in fail-open) that quotes a key.
    const store = {
      description: 'broken',
      hit: () => Promise.reject(new Error(`counter broke for ${valid}`)),
      undo: async () => {},
    };
    const access = new AccessControl({ config: resolveAccessConfig({}, 'open'), store, keys: null, secret: null });
    const handler = createHandler({ origin: new LocalOrigin(inject('fixtureTree')), access });
    const logged: string[] = [];
    const spy = vi.spyOn(console, 'error').mockImplementation((...args: unknown[]) => void logged.push(args.join(' ')));
    try {
      const res = await handler(new Request(`http://x/api/v1/genes/${valid}`));
      expect(res.status).toBe(500);
      const body = await res.text();
      for (const s of secrets) expect(body.includes(s)).toBe(false);
    } finally {
      spy.mockRestore();
    }
    // One JSON line (the handler's default logger), its error's message and stack redacted.
    const line = JSON.parse(logged.find((l) => l.includes('"event":"unexpected_error"'))!);
    expect(line).toMatchObject({
      level: 'error',
      msg: 'unexpected error',
      err: { message: 'counter broke for isoatlas_[redacted]' },
    });
    expect(line.err.stack).toContain('isoatlas_[redacted]');
    for (const s of secrets) expect(logged.join('\n').includes(s)).toBe(false);
  });

  it('the run-wide scan: finds a key (and a piece of one) in a log file, reports only its id, ignores redacted keys', () => {
    const dir = mkdtempSync(join(tmpdir(), 'isoatlas-keyscan-'));
    try {
      writeFileSync(
        join(dir, 'clean.log'),
        `GET /api/v1/genes/isoatlas_[redacted] 404 1.0ms\nkey ${keyId(valid)} refused\n`,
      );
      expect(scanForKeys(dir)).toEqual([]);
      writeFileSync(
        join(dir, 'leaky.log'),
        `ok\nAuthorization: Bearer ${valid}\nfirst part ${valid.slice(0, 40).replace(/_/g, '%5F')}\n`,
      );
      const findings = scanForKeys(dir);
      expect(findings).toEqual([
        { file: 'leaky.log', line: 2, id: keyId(valid) },
        { file: 'leaky.log', line: 3, id: keyId(valid) },
      ]);
      expect(JSON.stringify(findings)).not.toContain(secretOf(valid));
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('writes this run’s server logs where the scan reads them', () => {
    const dir = process.env.ISOATLAS_TEST_LOG_DIR;
    expect(dir, 'the key-scan global setup ran').toBeTruthy();
    expect(scanForKeys(dir!).length).toBe(0);
    expect(readdirSync(dir!)).toContain(`serve-${server.child.pid}.log`);
  });
});
