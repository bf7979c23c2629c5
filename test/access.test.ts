// Access control in process: the handler over the demo tree with AccessControl, an in-memory store
// and an injected clock, so window boundaries are exact and nothing waits for real minutes.
import { beforeAll, describe, expect, inject, it } from 'vitest';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createHandler, type Handler } from '../edge/handler.js';
import { LocalOrigin } from '../edge/origins/local.js';
import { AccessControl } from '../edge/access/control.js';
import { resolveAccessConfig, type AccessConfig } from '../edge/access/config.js';
import { clientBucket } from '../edge/access/client-key.js';
import { importServerSecret, keyId } from '../edge/access/key-format.js';
import { MemoryQuotaStore } from '../edge/access/stores/memory.js';
import type { QuotaStore } from '../edge/access/quota-store.js';
import { FileKeyRegistry } from '../edge/access/stores/key-file.js';
import type { EdgeKeyRecord, KeyRegistry } from '../edge/access/key-registry.js';
import { issueKey, loadRegistry, readSecret, registryPath, revokeKey } from '../build/keys/registry.js';
import { validate } from './helpers/schemas.js';

const MINUTE = 60_000;
const T0 = Date.UTC(2026, 10, 22, 10, 0, 0); // the first millisecond of a minute (and of nothing longer)

let keysDir: string;
let standardKey: string;
let plusKey: string;
let revokedKey: string;
let secret: CryptoKey;

/** A key registry over the test's registry file, read on every lookup (no caching to reason about). */
const registry = (): KeyRegistry => ({
  description: 'test',
  async lookup(id: string): Promise<EdgeKeyRecord | null> {
    return loadRegistry(keysDir).keys.find((k) => k.id === id) ?? null;
  },
});

function setup(
  partial: unknown,
  mode: AccessConfig['mode'],
  store: QuotaStore = new MemoryQuotaStore(() => clock.now),
) {
  const access = new AccessControl({
    config: resolveAccessConfig(partial, mode),
    store,
    keys: registry(),
    secret,
    now: () => clock.now,
  });
  return createHandler({ origin: new LocalOrigin(inject('fixtureTree')), access });
}
const clock = { now: T0 };

const get = (
  handler: Handler,
  path: string,
  opts: { key?: string; ip?: string; headers?: Record<string, string>; method?: string } = {},
) =>
  handler(
    new Request(`http://atlas.test/api/v1${path}`, {
      method: opts.method ?? 'GET',
      headers: { ...(opts.key ? { Authorization: `Bearer ${opts.key}` } : {}), ...opts.headers },
    }),
    { clientIp: opts.ip ?? '192.0.2.1' },
  );

beforeAll(async () => {
  keysDir = mkdtempSync(join(tmpdir(), 'isoatlas-keys-'));
  standardKey = (await issueKey(keysDir, { name: 'A', affiliation: 'Lab', use: 'tests', tier: 'standard' })).key;
  plusKey = (await issueKey(keysDir, { name: 'B', affiliation: 'Lab', use: 'tests', tier: 'plus' })).key;
  revokedKey = (await issueKey(keysDir, { name: 'C', affiliation: 'Lab', use: 'tests', tier: 'standard' })).key;
  await revokeKey(keysDir, keyId(revokedKey)!);
  secret = await importServerSecret(readSecret(keysDir, { create: false })!);
});

describe('keys', () => {
  it('issues recognisable 256-bit keys and stores only their keyed hash', () => {
    expect(standardKey).toMatch(/^isoatlas_s[a-z2-7]{8}_[A-Za-z0-9_-]{43}$/); // the standard tier's letter, 8 random characters
    expect(plusKey).toMatch(/^isoatlas_p[a-z2-7]{8}_[A-Za-z0-9_-]{43}$/);
    const stored = JSON.stringify(loadRegistry(keysDir));
    for (const key of [standardKey, plusKey, revokedKey]) expect(stored).not.toContain(key);
    expect(stored).not.toContain(standardKey.slice(standardKey.indexOf('_', 9) + 1)); // not even the secret part
  });
});

describe('key registry', () => {
  it('keeps every key when several `keys issue` run at once', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'isoatlas-keys-concurrent-'));
    const issued = await Promise.all(
      Array.from({ length: 8 }, (_, i) =>
        issueKey(dir, { name: `n${i}`, affiliation: 'a', use: 'u', tier: 'standard' }),
      ),
    );
    expect(
      loadRegistry(dir)
        .keys.map((k) => k.id)
        .sort(),
    ).toEqual(issued.map((i) => i.record.id).sort());
  });
});

describe('arrangement B: key required', () => {
  it('answers 401 with a Bearer challenge without a key, and invalid_token for a bad one', async () => {
    clock.now = T0;
    const handler = setup({}, 'key-required');
    const none = await get(handler, '/genes/PRR5');
    expect(none.status).toBe(401);
    expect(none.headers.get('WWW-Authenticate')).toBe('Bearer realm="isoatlas"');
    expect(validate('Problem', await none.json())).toEqual([]);
    const tampered = standardKey.slice(0, -1) + (standardKey.endsWith('A') ? 'B' : 'A');
    for (const key of ['not-a-key', tampered, revokedKey, 'isoatlas_aaaaaaaa_' + 'x'.repeat(43)]) {
      const r = await get(handler, '/genes/PRR5', { key });
      expect(r.status, key).toBe(401);
      expect(r.headers.get('WWW-Authenticate')).toBe('Bearer realm="isoatlas", error="invalid_token"');
      const body = await r.text();
      if (key.length > 20) expect(body).not.toContain(key.slice(key.indexOf('_', 9) + 1)); // the secret part of a key is never echoed
    }
    const basic = await get(handler, '/genes/PRR5', { headers: { Authorization: 'Basic dXNlcjpwYXNz' } });
    expect(basic.status).toBe(401);
  });

  it('admits 60 requests a minute per key, then 429 with Retry-After until the next minute', async () => {
    clock.now = T0 + 15_000;
    const handler = setup({}, 'key-required');
    for (let i = 1; i <= 60; i++) {
      const r = await get(handler, '/isoforms/PRR5-201', { key: standardKey });
      expect(r.status).toBe(200);
      expect(r.headers.get('RateLimit-Remaining')).toBe(String(60 - i));
    }
    const ok = await get(handler, '/release', { key: plusKey }); // another key is counted apart
    expect(ok.headers.get('RateLimit-Limit')).toBe('600');
    const refused = await get(handler, '/isoforms/PRR5-201', { key: standardKey });
    expect(refused.status).toBe(429);
    expect(refused.headers.get('Retry-After')).toBe('45');
    expect(refused.headers.get('RateLimit-Remaining')).toBe('0');
    expect(refused.headers.get('Content-Type')).toBe('application/problem+json; charset=utf-8');
    expect((await refused.json()).detail).toContain('60 requests per minute for API key');
    clock.now = T0 + MINUTE - 1; // the last millisecond of the window
    expect((await get(handler, '/release', { key: standardKey })).headers.get('Retry-After')).toBe('1');
    clock.now = T0 + MINUTE; // the first of the next
    const next = await get(handler, '/release', { key: standardKey });
    expect(next.status).toBe(200);
    expect(next.headers.get('RateLimit-Policy')).toBe('60;w=60, 5000;w=86400');
  });

  it('enforces the daily quota across minutes', async () => {
    clock.now = T0;
    const handler = setup(
      {
        key_required: {
          per_ip: { per_minute: 1000 },
          tiers: { standard: { per_minute: 10, per_day: 25 }, plus: { per_minute: 10 } },
        },
      },
      'key-required',
    );
    let admitted = 0;
    for (let minute = 0; minute < 4; minute++) {
      clock.now = T0 + minute * MINUTE;
      for (let i = 0; i < 10; i++)
        if ((await get(handler, '/release', { key: standardKey })).status === 200) admitted++;
    }
    expect(admitted).toBe(25);
    // Requests refused by the day window were given back to the minute window, so the refusal keeps
    // naming the limit that actually binds, with Retry-After until midnight UTC.
    const refused = await get(handler, '/release', { key: standardKey });
    expect((await refused.json()).detail).toContain('25 requests per day');
    const untilMidnight = Math.ceil((Date.UTC(2026, 10, 23) - clock.now) / 1000);
    expect(refused.headers.get('Retry-After')).toBe(String(untilMidnight));
  });

  it('admits exactly the limit among 300 concurrent requests with one key', async () => {
    clock.now = T0 + 5 * MINUTE;
    const handler = setup({}, 'key-required');
    const statuses = await Promise.all(
      Array.from({ length: 300 }, () => get(handler, '/genes/PRR5', { key: standardKey }).then((r) => r.status)),
    );
    expect(statuses.filter((s) => s === 200)).toHaveLength(60);
    expect(statuses.filter((s) => s === 429)).toHaveLength(240);
  });

  it('applies the per-IP limit before the key, and only the adapter-given address counts', async () => {
    clock.now = T0 + 7 * MINUTE;
    const handler = setup(
      {
        key_required: { per_ip: { per_minute: 5 }, tiers: { standard: { per_minute: 60 }, plus: { per_minute: 60 } } },
      },
      'key-required',
    );
    const spoofed = (i: number) => ({
      'X-Forwarded-For': `203.0.113.${i}`,
      'X-Real-IP': `203.0.113.${i}`,
      Forwarded: `for=203.0.113.${i}`,
    });
    const statuses = [];
    for (let i = 0; i < 8; i++)
      statuses.push(
        (await get(handler, '/release', { key: i % 2 ? standardKey : plusKey, headers: spoofed(i) })).status,
      );
    expect(statuses).toEqual([200, 200, 200, 200, 200, 429, 429, 429]);
    // Bad keys are throttled by the per-IP limit too, before they cost a key lookup.
    expect((await get(handler, '/release', { key: 'garbage' })).status).toBe(429);
    expect((await get(handler, '/release', { key: standardKey, ip: '192.0.2.99' })).status).toBe(200);
  });
});

describe('arrangement A: open, key optional', () => {
  it('limits anonymous clients per IP and gives keys their higher tier', async () => {
    clock.now = T0 + 10 * MINUTE;
    const handler = setup(
      {
        open: {
          anonymous_per_ip: { per_minute: 3 },
          tiers: { standard: { per_minute: 100 }, plus: { per_minute: 1000 } },
        },
      },
      'open',
    );
    const anon = [];
    for (let i = 0; i < 4; i++)
      anon.push(await get(handler, '/genes/PRR5', { headers: { 'X-Forwarded-For': `10.0.0.${i}` } }));
    expect(anon.map((r) => r.status)).toEqual([200, 200, 200, 429]);
    expect(anon[0].headers.get('RateLimit-Limit')).toBe('3');
    expect(anon[0].headers.get('RateLimit-Policy')).toBe('3;w=60');
    expect(anon[3].headers.get('Retry-After')).toBe('60');
    const keyed = await get(handler, '/genes/PRR5', { key: standardKey });
    expect(keyed.status).toBe(200);
    expect(keyed.headers.get('RateLimit-Limit')).toBe('100');
    const otherIp = await get(handler, '/genes/PRR5', { ip: '192.0.2.2' });
    expect(otherIp.status).toBe(200);
  });

  it('refuses an invalid or revoked key instead of treating it as anonymous', async () => {
    clock.now = T0 + 11 * MINUTE;
    const handler = setup({}, 'open');
    expect((await get(handler, '/genes/PRR5', { key: revokedKey })).status).toBe(401);
    expect((await get(handler, '/genes/PRR5', { key: 'isoatlas_abcdefgh_' + 'y'.repeat(43) })).status).toBe(401);
    expect((await get(handler, '/genes/PRR5')).status).toBe(200);
  });

  it("holds keyed requests from one address to keyed_per_ip, whatever the keys, as the CDN's WAF does", async () => {
    clock.now = T0 + 13 * MINUTE;
    const handler = setup(
      {
        open: {
          anonymous_per_ip: { per_minute: 2 },
          keyed_per_ip: { per_minute: 5 },
          tiers: { standard: { per_minute: 3 }, plus: { per_minute: 3 } },
        },
      },
      'open',
    );
    const statuses = [];
    for (const key of [standardKey, standardKey, plusKey, plusKey, 'garbage', plusKey])
      statuses.push((await get(handler, '/release', { key })).status);
    // A bad key counts at the address too (WAF counts before any key is checked).
    expect(statuses).toEqual([200, 200, 200, 200, 401, 429]);
    const refused = await get(handler, '/release', { key: plusKey });
    expect((await refused.json()).detail).toMatch(/5 requests per minute from one IP address with API keys/);
    expect((await get(handler, '/release', { key: plusKey, ip: '192.0.2.77' })).status).toBe(200);
    // Anonymous requests have their own budget.
    expect((await get(handler, '/release')).status).toBe(200);
  });

  it("refuses a key whose id carries another tier's letter than its record, as the CDN's gate does", async () => {
    clock.now = T0 + 14 * MINUTE;
    const plusId = keyId(plusKey)!;
    const moved: KeyRegistry = {
      description: 'moved',
      lookup: async (id) => ({ ...(loadRegistry(keysDir).keys.find((k) => k.id === id) ?? null)!, tier: 'standard' }),
    };
    const access = new AccessControl({
      config: resolveAccessConfig({}, 'open'),
      store: new MemoryQuotaStore(() => clock.now),
      keys: moved,
      secret,
      now: () => clock.now,
    });
    const refused = await createHandler({ origin: new LocalOrigin(inject('fixtureTree')), access })(
      new Request('http://atlas.test/api/v1/release', { headers: { Authorization: `Bearer ${plusKey}` } }),
      { clientIp: '192.0.2.1' },
    );
    expect(refused.status).toBe(401);
    expect((await refused.json()).detail).toContain(
      `API key ${plusId} does not carry the letter of its tier (standard): it must be reissued`,
    );
  });

  it('never counts or challenges CORS preflights, and carries RateLimit headers on errors too', async () => {
    clock.now = T0 + 12 * MINUTE;
    const handler = setup(
      {
        open: { anonymous_per_ip: { per_minute: 1 }, tiers: { standard: { per_minute: 1 }, plus: { per_minute: 1 } } },
      },
      'open',
    );
    for (let i = 0; i < 3; i++) expect((await get(handler, '/genes/PRR5', { method: 'OPTIONS' })).status).toBe(204);
    const notFound = await get(handler, '/genes/NO_SUCH_GENE');
    expect(notFound.status).toBe(404);
    expect(notFound.headers.get('RateLimit-Remaining')).toBe('0');
    expect((await get(handler, '/genes/PRR5')).status).toBe(429);
  });
});

describe('who counts as one client', () => {
  it('reads any text of digits and dots as the pattern of a dotted IPv4 address does', () => {
    const byPattern = (text: string) => {
      const m = /^(\d{1,3})\.(\d{1,3})\.(\d{1,3})\.(\d{1,3})$/.exec(text);
      const parts = m?.slice(1).map(Number);
      return parts?.every((p) => p <= 255) ? parts.join('.') : text;
    };
    // Zeros and dots weighted up, so that about one text in a hundred is four numbers, of which
    // many have a leading zero or a number over 255.
    const alphabet = '001256789....';
    let seed = 47;
    const next = () => (seed = (seed * 48271) % 2147483647);
    for (let n = 0; n < 20_000; n++) {
      const text = Array.from({ length: next() % 17 }, () => alphabet[next() % alphabet.length]).join('');
      expect(clientBucket(text, 64), text).toBe(byPattern(text));
    }
  });

  it('names an IPv4 client by its address and an IPv6 client by its network, however written', () => {
    expect(clientBucket('192.0.2.1', 64)).toBe('192.0.2.1');
    expect(clientBucket('192.000.02.1', 64)).toBe('192.0.2.1');
    // Not an IPv4 address: each its own client, as given.
    for (const other of ['256.0.2.1', '192.0.2', '192.0.2.1.5', '192..2.1', '192.0.2.1.', '.192.0.2', '1920.0.2.1', ''])
      expect(clientBucket(other, 64), other).toBe(other);
    for (const mapped of ['::ffff:192.0.2.1', '::FFFF:192.0.2.1', '0:0:0:0:0:ffff:c000:201', '::ffff:c000:0201'])
      expect(clientBucket(mapped, 64), mapped).toBe('192.0.2.1');
    const net = '2001:db8:1:2:0:0:0:0/64';
    for (const v6 of [
      '2001:db8:1:2::1',
      '2001:0db8:0001:0002:ffff:ffff:ffff:ffff',
      '2001:db8:1:2::5%eth0',
      '2001:db8:1:2:0:0:1.2.3.4',
    ])
      expect(clientBucket(v6, 64), v6).toBe(net);
    expect(clientBucket('2001:db8:1:3::1', 64)).not.toBe(net);
    expect(clientBucket('2001:db8:1:2::1', 128)).toBe('2001:db8:1:2:0:0:0:1/128');
    expect(clientBucket('2001:db8:1:2::1', 48)).toBe('2001:db8:1:0:0:0:0:0/48');
    expect(clientBucket('::', 64)).toBe('0:0:0:0:0:0:0:0/64');
    // Not addresses: each its own client, as given.
    for (const odd of ['unknown', '1:2:3', '1::2::3', '2001:db8::1::', '256.0.0.1', '1:2:3:4:5:6:7:8:9', 'g::1'])
      expect(clientBucket(odd, 64), odd).toBe(odd);
  });

  it('gives a /64 one anonymous budget, however many addresses it sends from, and another /64 its own', async () => {
    clock.now = T0 + 20 * MINUTE;
    const handler = setup(
      { open: { anonymous_per_ip: { per_minute: 4 }, tiers: { standard: { per_minute: 100 } } } },
      'open',
    );
    const spread = [
      '2001:db8:a:1::1',
      '2001:db8:a:1::2',
      '2001:db8:a:1:ffff::9',
      '2001:db8:a:1:1:2:3:4',
      '2001:db8:a:1::77',
    ];
    const statuses = [];
    for (const ip of spread) statuses.push((await get(handler, '/release', { ip })).status);
    expect(statuses).toEqual([200, 200, 200, 200, 429]);
    expect((await get(handler, '/release', { ip: '2001:db8:a:2::1' })).status).toBe(200);
    // An IPv4 client is the same client when a dual-stack socket reports it IPv4-mapped.
    expect((await get(handler, '/release', { ip: '198.51.100.4' })).headers.get('RateLimit-Remaining')).toBe('3');
    expect((await get(handler, '/release', { ip: '::ffff:198.51.100.4' })).headers.get('RateLimit-Remaining')).toBe(
      '2',
    );
  });

  it('counts each IPv6 address on its own with ipv6_prefix 128', async () => {
    clock.now = T0 + 21 * MINUTE;
    const handler = setup(
      { ipv6_prefix: 128, open: { anonymous_per_ip: { per_minute: 1 }, tiers: { standard: { per_minute: 100 } } } },
      'open',
    );
    for (let i = 1; i <= 5; i++)
      expect((await get(handler, '/release', { ip: `2001:db8:a:1::${i}` })).status).toBe(200);
    expect((await get(handler, '/release', { ip: '2001:db8:a:1::1' })).status).toBe(429);
  });
});

describe('refusals are counted', () => {
  it('open: bad keys cost their address anonymous requests, 401 until the budget is spent, then 429', async () => {
    clock.now = T0 + 22 * MINUTE;
    const handler = setup(
      { open: { anonymous_per_ip: { per_minute: 5 }, tiers: { standard: { per_minute: 100 } } } },
      'open',
    );
    const bad = [revokedKey, 'garbage', 'isoatlas_abcdefgh_' + 'y'.repeat(43)];
    const answers = [];
    for (let i = 0; i < 8; i++)
      answers.push(await get(handler, '/genes/PRR5', { key: bad[i % bad.length], ip: '192.0.2.50' }));
    expect(answers.map((r) => r.status)).toEqual([401, 401, 401, 401, 401, 429, 429, 429]);
    expect(answers[0].headers.get('WWW-Authenticate')).toBe('Bearer realm="isoatlas", error="invalid_token"');
    expect(Number(answers[5].headers.get('Retry-After'))).toBeGreaterThan(0);
    expect((await answers[5].json()).detail).toContain('5 requests per minute from one IP address');
    // Another scheme is refused the same way; anonymous requests share the spent budget; a valid key
    // still has its own.
    expect(
      (await get(handler, '/genes/PRR5', { ip: '192.0.2.50', headers: { Authorization: 'Basic dXNlcjpwYXNz' } }))
        .status,
    ).toBe(429);
    expect((await get(handler, '/genes/PRR5', { ip: '192.0.2.50' })).status).toBe(429);
    expect((await get(handler, '/genes/PRR5', { ip: '192.0.2.50', key: standardKey })).status).toBe(200);
    expect((await get(handler, '/genes/PRR5', { ip: '192.0.2.51', key: 'garbage' })).status).toBe(401);
  });

  it("a decision that does not count refusals (a front's admission) leaves the counters as they were", async () => {
    clock.now = T0 + 23 * MINUTE;
    for (const [mode, partial] of [
      [
        'key-required',
        {
          key_required: {
            per_ip: { per_minute: 3 },
            tiers: { standard: { per_minute: 100 }, plus: { per_minute: 100 } },
          },
        },
      ],
      ['open', { open: { anonymous_per_ip: { per_minute: 3 }, tiers: { standard: { per_minute: 100 } } } }],
    ] as const) {
      const access = new AccessControl({
        config: resolveAccessConfig(partial, mode),
        store: new MemoryQuotaStore(() => clock.now),
        keys: registry(),
        secret,
        now: () => clock.now,
      });
      const ask = (auth: string | null, countRefused?: boolean) =>
        access.decide(
          new Request('http://atlas.test/api/v1/release', { headers: auth ? { Authorization: auth } : {} }),
          '192.0.2.60',
          { countRefused },
        );
      // Refused without counting, as often as asked: the budget is whole.
      for (let i = 0; i < 5; i++)
        expect((await ask(mode === 'open' ? 'Bearer garbage' : null, false)).denied?.status, mode).toBe(401);
      const admitted = await ask(mode === 'open' ? null : `Bearer ${standardKey}`, false);
      expect(admitted.denied, mode).toBeNull();
      // Admitted requests are counted: two refusals (counted) spend the rest, then 429.
      for (let i = 0; i < 2; i++) expect((await ask('Bearer garbage')).denied?.status, mode).toBe(401);
      expect((await ask('Bearer garbage')).denied?.status, mode).toBe(429);
    }
  });
});

describe('when keys cannot be looked up', () => {
  it('answers 503 with Retry-After when keys cannot be looked up', async () => {
    const access = new AccessControl({
      config: resolveAccessConfig({}, 'key-required'),
      store: new MemoryQuotaStore(),
      keys: { description: 'down', lookup: () => Promise.reject(new Error('timeout')) },
      secret,
    });
    const handler = createHandler({ origin: new LocalOrigin(inject('fixtureTree')), access });
    const r = await get(handler, '/release', { key: standardKey });
    expect(r.status).toBe(503);
    expect(r.headers.get('Retry-After')).toBe('5');
  });
});

describe('FileKeyRegistry (the key source of the local server)', () => {
  it('answers concurrent first lookups from the registry, not from the records before the first read', async () => {
    const registry = new FileKeyRegistry(registryPath(keysDir));
    const id = keyId(plusKey)!;
    const found = await Promise.all(Array.from({ length: 20 }, () => registry.lookup(id)));
    expect(found.map((r) => r?.id ?? null)).toEqual(Array(20).fill(id));
  });
});

describe('access config', () => {
  it('overlays a partial file on the defaults and rejects what it does not know', () => {
    const c = resolveAccessConfig(
      { open: { anonymous_per_ip: { per_minute: 10 }, tiers: { standard: { per_minute: 20 } } } },
      'open',
    );
    expect(c.open.anonymous_per_ip).toEqual({ per_minute: 10 });
    expect(c.key_required.tiers.standard).toEqual({ per_minute: 60, per_day: 5000 }); // untouched section keeps defaults
    expect(() => resolveAccessConfig({ open: { anonymous_per_ip: { per_minute: 0 }, tiers: {} } })).toThrow(
      /per_minute must be a positive integer/,
    );
    expect(() => resolveAccessConfig({ open: { anonymous_per_ip: { per_hour: 5 }, tiers: { standard: {} } } })).toThrow(
      /per_hour is not a known limit/,
    );
    expect(() => resolveAccessConfig({ default_tier: 'gold' })).toThrow(/default tier "gold" is missing/);
    expect(() => resolveAccessConfig({ modes: 'open' })).toThrow(/unknown setting "modes"/);
    expect(resolveAccessConfig({}).ipv6_prefix).toBe(64);
    expect(resolveAccessConfig({ ipv6_prefix: 48 }).ipv6_prefix).toBe(48);
    for (const bad of [0, 129, 64.5, '64'])
      expect(() => resolveAccessConfig({ ipv6_prefix: bad }), String(bad)).toThrow(
        /ipv6_prefix must be an integer from 1 to 128/,
      );
  });

  it('gives each tier a declared letter, unique and of the id alphabet, kept whatever the order of tiers', () => {
    expect(resolveAccessConfig({}).tier_letters).toEqual({ standard: 's', plus: 'p' });
    const tiers = { gold: { per_minute: 900 }, standard: { per_minute: 60 }, plus: { per_minute: 600 } };
    const c = resolveAccessConfig({ tier_letters: { gold: 'g' }, open: { tiers }, key_required: { tiers } });
    expect(c.tier_letters).toEqual({ gold: 'g', standard: 's', plus: 'p' });
    const reordered = { plus: tiers.plus, gold: tiers.gold, standard: tiers.standard };
    expect(
      resolveAccessConfig({
        tier_letters: { gold: 'g' },
        open: { tiers: reordered },
        key_required: { tiers: reordered },
      }).tier_letters,
    ).toEqual(c.tier_letters);
    expect(() => resolveAccessConfig({ open: { tiers }, key_required: { tiers } })).toThrow(
      /tier gold has no letter: add "gold": "<letter>" to tier_letters/,
    );
    expect(() =>
      resolveAccessConfig({ tier_letters: { gold: 'p' }, open: { tiers }, key_required: { tiers } }),
    ).toThrow(/tiers (plus and gold|gold and plus) both have the letter "p"/);
    for (const bad of ['G', '8', 'gg', '', 1]) {
      expect(
        () => resolveAccessConfig({ tier_letters: { gold: bad }, open: { tiers }, key_required: { tiers } }),
        String(bad),
      ).toThrow(/tier_letters.gold must be one character of a-z or 2-7/);
    }
    // A retired tier keeps its letter reserved.
    expect(resolveAccessConfig({ tier_letters: { retired: 'r' } }).tier_letters.retired).toBe('r');
    expect(() => resolveAccessConfig({ tier_letters: ['s'] })).toThrow(/tier_letters must be an object/);
  });

  it("open.keyed_per_ip: twice the highest tier's minute limit unless set; never below a tier's", () => {
    expect(resolveAccessConfig({}).open.keyed_per_ip).toEqual({ per_minute: 24000 });
    expect(
      resolveAccessConfig({ open: { tiers: { standard: { per_minute: 100 }, plus: { per_minute: 700 } } } }).open
        .keyed_per_ip,
    ).toEqual({ per_minute: 1400 });
    expect(resolveAccessConfig({ open: { keyed_per_ip: { per_minute: 30000 } } }).open.keyed_per_ip).toEqual({
      per_minute: 30000,
    });
    expect(() => resolveAccessConfig({ open: { keyed_per_ip: { per_minute: 5000 } } })).toThrow(
      /keyed_per_ip.per_minute \(5000\) is below a tier's per_minute \(12000\)/,
    );
    expect(() => resolveAccessConfig({ open: { keyed_per_ip: { per_day: 5000 } } })).toThrow(
      /keyed_per_ip takes per_minute only/,
    );
    // What the meter receives (the resolved config as JSON) resolves to itself.
    const c = resolveAccessConfig({}, 'open');
    expect(resolveAccessConfig(JSON.parse(JSON.stringify(c)), 'open')).toEqual(c);
  });
});
