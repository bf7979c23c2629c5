// Black-box contract of API keys and rate limits: real `isoatlas serve` processes in both access
// arrangements, keys issued and revoked through the real CLI (`isoatlas keys …`), real HTTP. Every
// response, every server log and every CLI message is kept for the final check that no key leaks.
//
// Limits count in fixed minute windows of the server's clock, so each scenario uses its own keys (or
// its own server) and, before a burst that must fit in one window, waits out the end of a minute
// rather than risk straddling two.
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { eventually } from './helpers/wait.js';
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { generateKey, KEY_PATTERN, keyId } from '../edge/access/key-format.js';
import { startServer, type RunningServer } from './helpers/server.js';
import { SERVER_LIMIT_ENV } from '../edge/adapters/server-limits.js';

const ROOT = join(__dirname, '..');
const GENE = '/genes/PRR5';
const CHALLENGE = 'Bearer realm="isoatlas"';
const INVALID_TOKEN = 'Bearer realm="isoatlas", error="invalid_token"';

// ---------------------------------------------------------------------------------------------------
// Everything observed, for the leak check at the end.

interface Seen {
  what: string;
  status: number;
  headers: string;
  body: string;
}
const seen: Seen[] = [];
/** stderr of every CLI run, and stdout of every run but `keys issue` (whose stdout is the key). */
const cliOutput: string[] = [];
/** Every key issued, and every near-key presented (a leak of those would be almost as bad). */
const secrets: string[] = [];
const servers: RunningServer[] = [];
const tempDirs: string[] = [];

interface Reply {
  status: number;
  headers: Headers;
  body: string;
  json: () => any;
}

async function call(
  base: string,
  path: string,
  opts: { key?: string; auth?: string; headers?: Record<string, string>; method?: string } = {},
): Promise<Reply> {
  const headers: Record<string, string> = { ...opts.headers };
  if (opts.key !== undefined) headers.Authorization = `Bearer ${opts.key}`;
  if (opts.auth !== undefined) headers.Authorization = opts.auth;
  const method = opts.method ?? 'GET';
  const res = await fetch(`${base}/api/v1${path}`, { method, headers, redirect: 'manual' });
  const body = await res.text();
  seen.push({
    what: `${method} ${base}/api/v1${path}`,
    status: res.status,
    headers: [...res.headers].map(([n, v]) => `${n}: ${v}`).join('\n'),
    body,
  });
  return { status: res.status, headers: res.headers, body, json: () => JSON.parse(body) };
}

const statuses = (replies: Reply[]) => {
  const counts: Record<number, number> = {};
  for (const r of replies) counts[r.status] = (counts[r.status] ?? 0) + 1;
  return counts;
};

// ---------------------------------------------------------------------------------------------------
// The CLI.

function cli(
  args: string[],
  env: NodeJS.ProcessEnv = {},
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [join(ROOT, 'bin/isoatlas.mjs'), ...args], {
      cwd: ROOT,
      env: { ...process.env, ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (c: string) => (stdout += c));
    child.stderr.setEncoding('utf8').on('data', (c: string) => (stderr += c));
    child.once('error', reject);
    child.once('close', (code) => resolve({ code, stdout, stderr }));
  });
}

async function issue(keysDir: string, name: string, extra: string[] = []): Promise<string> {
  const out = await cli([
    'keys',
    'issue',
    '--name',
    name,
    '--affiliation',
    'Contract Test Lab',
    '--use',
    'black-box tests of the access contract',
    '--keys-dir',
    keysDir,
    ...extra,
  ]);
  cliOutput.push(out.stderr);
  expect(out.code, out.stderr).toBe(0);
  const key = out.stdout.trim();
  expect(out.stdout).toBe(`${key}\n`); // the key alone
  expect(key).toMatch(KEY_PATTERN);
  expect(out.stderr).toContain(`issued key ${keyId(key)}`);
  secrets.push(key);
  return key;
}

function tempDir(prefix: string): string {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  tempDirs.push(dir);
  return dir;
}

function writeConfig(dir: string, name: string, config: unknown): string {
  const path = join(dir, name);
  writeFileSync(path, JSON.stringify(config));
  return path;
}

async function serve(extraArgs: string[], mode: string): Promise<RunningServer> {
  // The bursts here are one address's, over a connection per request in flight (fetch's way): the
  // per-address connection cap is server-limits.test.ts's to test, not these.
  const env = { [SERVER_LIMIT_ENV.maxConnectionsPerAddress]: '1000' };
  const server = await startServer({ dir: inject('fixtureTree'), extraArgs, env });
  servers.push(server);
  expect(server.logs()).toContain(`(access: ${mode};`);
  return server;
}

/** Waits, when less than `ms` is left of the current minute, for the next one to begin. */
async function roomInMinute(ms: number) {
  const left = 60_000 - (Date.now() % 60_000);
  if (left < ms) await new Promise((ok) => setTimeout(ok, left + 100));
}

/** The key with one character of its secret part changed. */
function alter(key: string): string {
  const i = key.length - 10;
  const altered = key.slice(0, i) + (key[i] === 'A' ? 'B' : 'A') + key.slice(i + 1);
  secrets.push(altered);
  return altered;
}

/** Headers a client might send to pose as another address; only the connection's address counts. */
const spoofing = (i: number): Record<string, string> => ({
  'X-Forwarded-For': `10.${i % 250}.${(i * 7) % 250}.1, 172.16.0.${i % 250}`,
  'X-Real-IP': `10.${i % 250}.0.2`,
  Forwarded: `for=10.${i % 250}.0.3;proto=https`,
  'True-Client-IP': `10.${i % 250}.0.4`,
  'CF-Connecting-IP': `10.${i % 250}.0.5`,
});

// ---------------------------------------------------------------------------------------------------

const dirs = { b: '', bIp: '', a: '' };
const k = { b: '', burst: '', plus: '', revoke: '', ip: [] as string[], a: '' };
let b: RunningServer;
let bIp: RunningServer;
let a: RunningServer;

beforeAll(async () => {
  // Hermetic: the secret comes from each keys dir, never from the environment.
  delete process.env.ISOATLAS_KEY_SECRET;
  delete process.env.ISOATLAS_KEYS_DIR;
  dirs.b = tempDir('isoatlas-keys-b-');
  dirs.bIp = tempDir('isoatlas-keys-b-ip-');
  dirs.a = tempDir('isoatlas-keys-a-');
  const configs = tempDir('isoatlas-access-config-');

  // Keys are issued before the servers start (a server reads its keys dir's secret at start).
  await Promise.all([
    (async () => {
      k.b = await issue(dirs.b, 'Headers');
      k.burst = await issue(dirs.b, 'Burst');
      k.plus = await issue(dirs.b, 'Plus', ['--tier', 'plus']);
      k.revoke = await issue(dirs.b, 'Revoked');
    })(),
    (async () => {
      for (const name of ['IP one', 'IP two', 'IP three']) k.ip.push(await issue(dirs.bIp, name));
    })(),
    (async () => {
      k.a = await issue(dirs.a, 'Open');
    })(),
  ]);

  [b, bIp, a] = await Promise.all([
    serve(['--access', 'key-required', '--keys-dir', dirs.b], 'key-required'),
    serve(
      [
        '--access',
        'key-required',
        '--keys-dir',
        dirs.bIp,
        '--access-config',
        writeConfig(configs, 'b-per-ip.json', { key_required: { per_ip: { per_minute: 40 } } }),
      ],
      'key-required',
    ),
    serve(
      [
        '--access',
        'open',
        '--keys-dir',
        dirs.a,
        '--access-config',
        writeConfig(configs, 'a.json', { open: { anonymous_per_ip: { per_minute: 30 } } }),
      ],
      'open',
    ),
  ]);
});

afterAll(async () => {
  await Promise.all(servers.map((s) => s.stop()));
  for (const dir of tempDirs) rmSync(dir, { recursive: true, force: true });
});

// ---------------------------------------------------------------------------------------------------

describe('arrangement B (key-required)', () => {
  it('answers 401 problem+json with a Bearer challenge without a key', async () => {
    const r = await call(b.base, GENE);
    expect(r.status).toBe(401);
    expect(r.headers.get('Content-Type')).toMatch(/^application\/problem\+json/);
    expect(r.headers.get('WWW-Authenticate')).toBe(CHALLENGE);
    const body = r.json();
    expect(body).toMatchObject({ status: 401, title: 'Unauthorized', instance: '/api/v1/genes/PRR5' });
    expect(body.detail).toContain('Authorization: Bearer');
    expect(r.headers.get('RateLimit-Limit')).toBeNull();
    // Every route needs the key, the index too.
    expect((await call(b.base, '/')).status).toBe(401);
  });

  it('answers 401 invalid_token for a garbage, an unknown or an altered key, and 401 for another scheme', async () => {
    const unknown = generateKey('s').key; // well-formed, never issued
    secrets.push(unknown);
    const truncated = k.b.slice(0, -1);
    secrets.push(truncated);
    for (const auth of ['Bearer garbage', `Bearer ${unknown}`, `Bearer ${alter(k.b)}`, `Bearer ${truncated}`]) {
      const r = await call(b.base, GENE, { auth });
      expect(r.status, auth).toBe(401);
      expect(r.headers.get('WWW-Authenticate'), auth).toBe(INVALID_TOKEN);
      expect(r.headers.get('Content-Type')).toMatch(/^application\/problem\+json/);
      expect(r.json().status).toBe(401);
    }
    // A spelling the CDN would count apart (here: no key after the scheme, two spaces) is a malformed request.
    for (const auth of ['Bearer', `Bearer  ${k.b}`]) {
      const r = await call(b.base, GENE, { auth });
      expect(r.status, auth).toBe(401);
      expect(r.headers.get('WWW-Authenticate'), auth).toBe('Bearer realm="isoatlas", error="invalid_request"');
      expect(r.json().detail, auth).toContain('one space');
    }
    const basic = await call(b.base, GENE, { auth: `Basic ${Buffer.from(`user:${k.b}`).toString('base64')}` });
    expect(basic.status).toBe(401);
    // Another scheme carries no Bearer credentials: the plain challenge, no error code (RFC 6750 §3).
    expect(basic.headers.get('WWW-Authenticate')).toBe('Bearer realm="isoatlas"');
  });

  it('accepts keys issued after the server started (the server creates the secret it shares with the CLI)', async () => {
    const dir = tempDir('isoatlas-keys-late-');
    const late = await serve(['--access', 'key-required', '--keys-dir', dir], 'key-required');
    const key = await issue(dir, 'Late');
    // The server re-reads its key registry on its own schedule.
    const { status } = await eventually(
      () => call(late.base, GENE, { key }),
      (r) => r.status === 200,
      'the late key to be accepted',
      250,
    );
    expect(status).toBe(200);
  });

  it('serves a valid key with RateLimit headers counting down from 60', async () => {
    await roomInMinute(5_000);
    for (let i = 0; i < 5; i++) {
      const r = await call(b.base, GENE, { key: k.b });
      expect(r.status).toBe(200);
      expect(r.json().symbol).toBe('PRR5');
      expect(r.headers.get('RateLimit-Limit')).toBe('60');
      expect(r.headers.get('RateLimit-Remaining')).toBe(String(59 - i));
      const reset = Number(r.headers.get('RateLimit-Reset'));
      expect(reset).toBeGreaterThanOrEqual(1);
      expect(reset).toBeLessThanOrEqual(60);
      expect(r.headers.get('RateLimit-Policy')).toBe('60;w=60, 5000;w=86400');
      expect(r.headers.get('Access-Control-Expose-Headers')).toContain('RateLimit-Remaining');
      // Asked with a key: no shared cache in front may keep it for clients without one.
      expect(r.headers.get('Cache-Control')).toMatch(/^private\b/);
      expect(r.headers.get('Vary')).toMatch(/\bAuthorization\b/);
    }
    // The scheme is case-insensitive.
    const lower = await call(b.base, GENE, { auth: `bearer ${k.b}` });
    expect([lower.status, lower.headers.get('RateLimit-Remaining')]).toEqual([200, '54']);
  });

  it('admits exactly 60 of 300 concurrent requests with one key; the rest get 429 with Retry-After', async () => {
    await roomInMinute(5_000);
    const started = performance.now();
    const replies = await Promise.all(Array.from({ length: 300 }, () => call(b.base, GENE, { key: k.burst })));
    console.log(
      `key-required burst: 300 concurrent requests in ${(performance.now() - started).toFixed(0)} ms → ${JSON.stringify(statuses(replies))}`,
    );
    expect(statuses(replies)).toEqual({ 200: 60, 429: 240 });
    const remaining = replies.filter((r) => r.status === 200).map((r) => Number(r.headers.get('RateLimit-Remaining')));
    expect(remaining.sort((x, y) => x - y)).toEqual(Array.from({ length: 60 }, (_, i) => i));
    for (const r of replies.filter((x) => x.status === 429)) {
      const retry = Number(r.headers.get('Retry-After'));
      expect(Number.isInteger(retry)).toBe(true);
      expect(retry).toBeGreaterThanOrEqual(1);
      expect(retry).toBeLessThanOrEqual(60);
      expect(r.headers.get('RateLimit-Reset')).toBe(String(retry));
      expect(r.headers.get('RateLimit-Remaining')).toBe('0');
      expect(r.headers.get('RateLimit-Limit')).toBe('60');
      expect(r.headers.get('Content-Type')).toMatch(/^application\/problem\+json/);
      const body = r.json();
      expect(body.status).toBe(429);
      expect(body.title).toBe('Too Many Requests');
      expect(body.detail).toContain('60 requests per minute');
    }
    // Another key is not affected by this one's exhaustion.
    expect((await call(b.base, GENE, { key: k.b })).status).toBe(200);
  });

  it('gives a plus key the plus tier', async () => {
    // `keys issue --tier` puts the tier's letter first in the id, where the CDN's WAF reads it.
    expect(keyId(k.plus)![0]).toBe('p');
    expect(keyId(k.b)![0]).toBe('s');
    const r = await call(b.base, GENE, { key: k.plus });
    expect(r.status).toBe(200);
    expect(r.headers.get('RateLimit-Limit')).toBe('600');
    expect(r.headers.get('RateLimit-Remaining')).toBe('599');
    expect(r.headers.get('RateLimit-Policy')).toBe('600;w=60, 100000;w=86400');
  });

  it('refuses a key within seconds of `isoatlas keys revoke`', async () => {
    expect((await call(b.base, GENE, { key: k.revoke })).status).toBe(200);
    const revoking = performance.now();
    const out = await cli(['keys', 'revoke', keyId(k.revoke)!, '--keys-dir', dirs.b]);
    cliOutput.push(out.stdout, out.stderr);
    expect(out.code, out.stderr).toBe(0);
    expect(out.stderr).toContain(`key ${keyId(k.revoke)} (Revoked) revoked at`);
    const revokedAt = performance.now();

    let refused: Reply | null = null;
    while (performance.now() - revokedAt < 60_000) {
      const r = await call(b.base, GENE, { key: k.revoke });
      if (r.status === 401) {
        refused = r;
        break;
      }
      expect(r.status).toBe(200);
      await new Promise((ok) => setTimeout(ok, 250));
    }
    const delay = performance.now() - revokedAt;
    const sinceStart = performance.now() - revoking;
    console.log(
      `revocation: key refused ${(delay / 1000).toFixed(2)} s after \`isoatlas keys revoke\` exited (${(sinceStart / 1000).toFixed(2)} s after it was started)`,
    );
    expect(refused, 'the revoked key was still accepted after 60 s').not.toBeNull();
    expect(delay).toBeLessThan(10_000); // "within seconds" (the registry file is checked every 2 s)
    expect(refused!.headers.get('WWW-Authenticate')).toBe(INVALID_TOKEN);
    expect(refused!.json().detail).toContain('revoked');
    // Other keys are unaffected.
    expect((await call(b.base, GENE, { key: k.plus })).status).toBe(200);
  });

  it('answers CORS preflights 204 without a key', async () => {
    const r = await call(b.base, GENE, {
      method: 'OPTIONS',
      headers: {
        Origin: 'https://example.org',
        'Access-Control-Request-Method': 'GET',
        'Access-Control-Request-Headers': 'authorization',
      },
    });
    expect(r.status).toBe(204);
    expect(r.headers.get('WWW-Authenticate')).toBeNull();
    expect(r.headers.get('RateLimit-Limit')).toBeNull();
    expect(r.headers.get('Access-Control-Allow-Headers')).toMatch(/Authorization/i);
    expect(r.headers.get('Access-Control-Allow-Origin')).toBe('*');
  });
});

describe('arrangement B: the per-IP limit (40/min here)', () => {
  it('caps one address whatever the keys, forwarding headers cannot escape it, and preflights do not count', async () => {
    await roomInMinute(5_000);
    const preflights = await Promise.all(Array.from({ length: 50 }, () => call(bIp.base, GENE, { method: 'OPTIONS' })));
    expect(statuses(preflights)).toEqual({ 204: 50 });

    // Three valid keys (60/min each) and a different claimed client address on every request.
    const replies = await Promise.all(
      Array.from({ length: 60 }, (_, i) => call(bIp.base, GENE, { key: k.ip[i % 3], headers: spoofing(i) })),
    );
    expect(statuses(replies)).toEqual({ 200: 40, 429: 20 });
    for (const r of replies.filter((x) => x.status === 429)) {
      expect(r.json().detail).toContain('40 requests per minute from one IP address');
      expect(r.headers.get('RateLimit-Limit')).toBe('40');
      expect(Number(r.headers.get('Retry-After'))).toBeGreaterThanOrEqual(1);
    }
    // Applied before the key is even checked: no key, or a bad one, is throttled too.
    const none = await call(bIp.base, GENE, { headers: spoofing(999) });
    expect(none.status).toBe(429);
    const bad = await call(bIp.base, GENE, { auth: 'Bearer garbage', headers: { 'X-Forwarded-For': '198.51.100.1' } });
    expect(bad.status).toBe(429);
    // Preflights still pass.
    expect((await call(bIp.base, GENE, { method: 'OPTIONS' })).status).toBe(204);
  });
});

describe('arrangement A (open)', () => {
  it('limits anonymous clients per address (30/min here); forwarding headers do not reset it', async () => {
    await roomInMinute(5_000);
    let r = await call(a.base, GENE);
    expect(r.status).toBe(200);
    expect(r.json().symbol).toBe('PRR5');
    expect(r.headers.get('RateLimit-Limit')).toBe('30');
    expect(r.headers.get('RateLimit-Remaining')).toBe('29');
    expect(r.headers.get('RateLimit-Policy')).toBe('30;w=60');
    // Open: the same body for everyone, shareable.
    expect(r.headers.get('Cache-Control')).toMatch(/^public\b/);

    // Preflights are answered and not counted.
    for (let i = 0; i < 5; i++) {
      const p = await call(a.base, GENE, {
        method: 'OPTIONS',
        headers: { Origin: 'https://example.org', 'Access-Control-Request-Method': 'GET' },
      });
      expect(p.status).toBe(204);
      expect(p.headers.get('RateLimit-Limit')).toBeNull();
    }
    r = await call(a.base, GENE);
    expect(r.headers.get('RateLimit-Remaining')).toBe('28');

    for (let i = 0; i < 28; i++) {
      r = await call(a.base, GENE, { headers: spoofing(i) });
      expect(r.status).toBe(200);
      expect(r.headers.get('RateLimit-Remaining')).toBe(String(27 - i));
    }
    r = await call(a.base, GENE); // the 31st
    expect(r.status).toBe(429);
    const retry = Number(r.headers.get('Retry-After'));
    expect(retry).toBeGreaterThanOrEqual(1);
    expect(retry).toBeLessThanOrEqual(60);
    expect(r.headers.get('RateLimit-Remaining')).toBe('0');
    expect(r.headers.get('Content-Type')).toMatch(/^application\/problem\+json/);
    expect(r.json().detail).toContain('30 requests per minute from one IP address without an API key');

    for (let i = 100; i < 105; i++) expect((await call(a.base, GENE, { headers: spoofing(i) })).status).toBe(429);
  });

  it('serves a valid key at its tier even when the address is exhausted', async () => {
    expect((await call(a.base, GENE)).status).toBe(429); // still exhausted anonymously
    const r = await call(a.base, GENE, { key: k.a });
    expect(r.status).toBe(200);
    expect(r.headers.get('RateLimit-Limit')).toBe('3000');
    expect(r.headers.get('RateLimit-Remaining')).toBe('2999');
    expect(r.headers.get('RateLimit-Policy')).toBe('3000;w=60');
  });

  it('never serves an invalid key as anonymous: it is refused, and counted against the anonymous budget', async () => {
    // The budget is spent above; should a new minute have begun since, bad keys spend it again.
    let refused = 0;
    for (
      let r = await call(a.base, GENE, { auth: 'Bearer garbage' });
      r.status === 401 && refused <= 30;
      r = await call(a.base, GENE, { auth: 'Bearer garbage' })
    ) {
      expect(r.headers.get('WWW-Authenticate')).toBe(INVALID_TOKEN);
      refused++;
    }
    expect(refused).toBeLessThanOrEqual(30);
    for (const auth of [
      `Bearer ${alter(k.a)}`,
      'Bearer garbage',
      `Bearer ${generateKey('s').key}`,
      'Basic dXNlcjpwYXNz',
    ]) {
      const r = await call(a.base, GENE, { auth });
      expect(r.status, auth).toBe(429);
      expect(Number(r.headers.get('Retry-After')), auth).toBeGreaterThanOrEqual(1);
      expect(r.json().detail, auth).toContain('30 requests per minute from one IP address without a valid API key');
    }
  });

  it('never echoes a key pasted into the URL (the log check at the end covers the server log)', async () => {
    // Sent with the key as well, since this address has spent its anonymous budget by now.
    const r = await call(a.base, `/genes/PRR5?api_key=${k.a}`, { key: k.a });
    expect(r.status).toBe(400);
    expect(r.body).toContain('isoatlas_[redacted]');
  });

  it('answers CORS preflights 204 after the anonymous limit is spent', async () => {
    const r = await call(a.base, GENE, { method: 'OPTIONS' });
    expect(r.status).toBe(204);
    expect(r.headers.get('Allow')).toBe('GET, HEAD, OPTIONS');
  });
});

describe('no key leaks', () => {
  it('appears in no response, no server log, no CLI message, and not in the registries', async () => {
    // `keys list` shows ids and holders, never keys (here through ISOATLAS_KEYS_DIR, the default dir).
    const list = await cli(['keys', 'list'], { ISOATLAS_KEYS_DIR: dirs.b });
    cliOutput.push(list.stdout, list.stderr);
    expect(list.code, list.stderr).toBe(0);
    for (const key of [k.b, k.burst, k.plus, k.revoke]) expect(list.stdout).toContain(keyId(key)!);
    expect(list.stdout).toMatch(/revoked 20\d\d-/);

    await Promise.all(servers.map((s) => s.stop())); // so the logs are complete
    const logs = servers.map((s) => s.logs());
    expect(logs.every((l) => /"path":"\/api\/v1\/genes\/PRR5","status":200/.test(l))).toBe(true); // the request log is there

    const serverSecrets = Object.values(dirs).map((d) => readFileSync(join(d, 'secret'), 'utf8').trim());
    const places = [
      ...seen.map((s) => ({ where: `response to ${s.what} (${s.status})`, text: `${s.headers}\n${s.body}` })),
      ...logs.map((text, i) => ({ where: `server ${i} log`, text })),
      ...cliOutput.map((text, i) => ({ where: `CLI output ${i}`, text })),
    ];
    for (const secret of [...secrets, ...serverSecrets]) {
      const secretPart = secret.split('_').slice(2).join('_') || secret;
      for (const place of places) {
        expect(place.text.includes(secret), `${place.where} holds a key`).toBe(false);
        expect(place.text.includes(secretPart), `${place.where} holds a key's secret part`).toBe(false);
      }
    }
    expect(seen.length).toBeGreaterThan(400); // every scenario's responses were checked

    for (const dir of Object.values(dirs)) {
      const path = join(dir, 'registry.json');
      const text = readFileSync(path, 'utf8');
      expect(statSync(path).mode & 0o777).toBe(0o600);
      for (const secret of secrets) expect(text.includes(secret.slice('isoatlas_'.length + 9))).toBe(false);
      const registry = JSON.parse(text) as { keys: { id: string; hash: string }[] };
      expect(registry.keys.length).toBeGreaterThan(0);
      for (const record of registry.keys) expect(record.hash).toMatch(/^[0-9a-f]{64}$/);
    }
  });
});
