// The CloudFront Function that gates every data behaviour (edge/cloudfront/key-gate-function.js), run in a
// harness with the `cloudfront` module backed by the entries `isoatlas keys publish` writes. Keys are
// issued and revoked with the real registry code; nothing here is a copy of the gate's logic.
import { beforeAll, describe, expect, it } from 'vitest';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { resolveAccessConfig } from '../edge/access/config.js';
import { KEY_GATE_FILE, KEY_GATE_MAX_BYTES, keyGateCode, keyGateSettings } from '../edge/cloudfront/key-gate.js';
import {
  CURRENT_RELEASE_ENTRY,
  decodeKeyRecord,
  encodeKeyRecord,
  keyEntry,
  kvsEntries,
  METER_MARK,
  meterLine,
  SECRET_ENTRY,
} from '../edge/cloudfront/kvs-layout.js';
import { issueKey, loadRegistry, readSecret, revokeKey } from '../build/keys/registry.js';
import { loadCloudFrontFunction, runtimeProblems, viewerRequest } from './helpers/cloudfront-function.js';
import { validate } from './helpers/schemas.js';
import { PASTE_SHAPES, PASTE_SHAPES_BY_CHANCE, seededPastes } from './helpers/paste-shapes.js';
import { leaksSecret } from './helpers/targets.js';
import { createHandler } from '../edge/handler.js';
import { CORS_HEADERS } from '../edge/contract/http-headers.js';
import { DEFAULT_RELEASE_PARAM, RELEASE_PARAM } from '../edge/contract/routes.js';

/** The pastes' random choices, from a seed: a run that finds a leak finds it again. */
const pasteChoices = seededPastes(46).random;

const NOW = Date.parse('2026-11-25T10:00:00Z');
let keysDir: string;
let standard: { key: string; id: string };
let plus: { key: string; id: string };
let revoked: { key: string; id: string };

beforeAll(async () => {
  keysDir = mkdtempSync(join(tmpdir(), 'isoatlas-gate-'));
  const issue = async (tier: string) => {
    const { key, record } = await issueKey(keysDir, { name: 'T', affiliation: 'T', use: 'tests', tier });
    return { key, id: record.id };
  };
  standard = await issue('standard');
  plus = await issue('plus');
  revoked = await issue('standard');
  await revokeKey(keysDir, revoked.id, new Date('2026-11-01T00:00:00Z'));
});

/** The store as `keys publish` leaves it, optionally changed. */
function store(change?: (entries: Map<string, string>) => void): Map<string, string> {
  const entries = kvsEntries(loadRegistry(keysDir).keys, readSecret(keysDir, { create: false })!);
  change?.(entries);
  return entries;
}

function gate(mode: 'open' | 'key-required', entries = store(), now = NOW) {
  return loadCloudFrontFunction(keyGateCode(keyGateSettings(resolveAccessConfig({}, mode))), entries, () => now);
}

async function refusal(result: any, status: number) {
  expect(result.statusCode, JSON.stringify(result)).toBe(status);
  expect(result.headers['content-type'].value).toBe('application/problem+json');
  expect(result.headers['cache-control'].value).toBe('no-store');
  expect(result.headers['access-control-allow-origin'].value).toBe(CORS_HEADERS['Access-Control-Allow-Origin']);
  // A script may read why it was refused and when to try again, as from the edge's own answers.
  expect(result.headers['access-control-expose-headers'].value).toBe(CORS_HEADERS['Access-Control-Expose-Headers']);
  expect(result.headers['access-control-expose-headers'].value.split(', ')).toEqual(
    expect.arrayContaining(['WWW-Authenticate', 'Retry-After']),
  );
  const body = JSON.parse(result.body.data);
  expect(validate('Problem', body)).toEqual([]);
  expect(body.status).toBe(status);
  return body;
}

const bearer = (key: string) => `Bearer ${key}`;

describe('the key gate source', () => {
  it('fits CloudFront: only what cloudfront-js-2.0 supports, under the 10 KB code limit', () => {
    const code = keyGateCode(keyGateSettings(resolveAccessConfig({}, 'key-required')));
    expect(runtimeProblems(code)).toEqual([]);
    expect(Buffer.byteLength(code)).toBeLessThan(KEY_GATE_MAX_BYTES);
    expect(code).not.toContain('__SETTINGS__ ;');
    expect(code).toContain('"mode":"key-required"');
  });

  it('the harness refuses what the runtime lacks (so the check above can fail)', () => {
    const source = readFileSync(KEY_GATE_FILE, 'utf8');
    expect(runtimeProblems(source.replace('var body = {', 'var body = { ...{},'))).toContain(
      'uses spread and rest syntax',
    );
    expect(
      runtimeProblems(source.replace("import crypto from 'crypto';", "const crypto = require('crypto');")).join(),
    ).toContain('require()');
    expect(runtimeProblems(`${source}\nfetch('https://example.org');`).join()).toContain('network access');
    expect(runtimeProblems(`${source}\nPromise.all([]);`).join()).toContain('Promise combinators');
  });
});

describe('key-required (B)', () => {
  it('admits a valid key, removes Authorization from what goes further, and logs its id for the meter', async () => {
    const f = gate('key-required');
    const out = await f.handler(viewerRequest({ authorization: bearer(standard.key) }));
    expect(out.statusCode).toBeUndefined();
    expect(out.uri).toBe('/api/v1/genes/ENSG00000100300');
    expect(out.headers.authorization).toBeUndefined();
    expect(out.headers.host.value).toBe('d111111abcdef8.cloudfront.net');
    expect(f.logs).toEqual([meterLine(standard.id, 'standard')]);
    expect(f.logs[0].startsWith(`${METER_MARK}${standard.id} `)).toBe(true);
    // The secret is what follows `isoatlas_<id>_` (it may itself hold underscores).
    expect(f.logs.join()).not.toContain(standard.key.slice('isoatlas_'.length + standard.id.length + 1));
  });

  it('refuses a request without a key: 401 with a Bearer challenge', async () => {
    const body = await refusal(await gate('key-required').handler(viewerRequest({})), 401);
    expect(body.detail).toMatch(/requires an API key/);
    const out = await gate('key-required').handler(viewerRequest({}));
    expect(out.headers['www-authenticate'].value).toBe('Bearer realm="isoatlas"');
  });

  it('refuses malformed, other-scheme, forged and unknown keys alike, computing the HMAC every time', async () => {
    const f = gate('key-required');
    const forged = standard.key.slice(0, -4) + (standard.key.endsWith('AAAA') ? 'BBBB' : 'AAAA');
    const unknown = standard.key.replace(`_${standard.id}_`, '_aaaaaaaa_');
    for (const auth of [
      bearer('not-a-key'),
      bearer(forged),
      bearer(unknown),
      bearer(standard.key.replace(`_${standard.id}_`, `_${standard.id.slice(1)}_`)),
    ]) {
      const before = f.hmacs();
      const out = await f.handler(viewerRequest({ authorization: auth }));
      const body = await refusal(out, 401);
      expect(out.headers['www-authenticate'].value, auth).toBe('Bearer realm="isoatlas", error="invalid_token"');
      expect(body.detail).toMatch(/malformed or unknown/);
      expect(f.hmacs() - before, auth).toBe(1);
    }
    const basic = await f.handler(viewerRequest({ authorization: 'Basic dXNlcjpwYXNz' }));
    await refusal(basic, 401);
    expect(basic.headers['www-authenticate'].value).toBe('Bearer realm="isoatlas"');
    await refusal(await f.handler(viewerRequest({ authorization: [bearer(standard.key), bearer(plus.key)] })), 401);
    expect(f.logs).toEqual([]);
  });

  it('refuses every other spelling of a key than "Bearer", one space, the key (WAF would count it apart), saying what to send', async () => {
    const f = gate('key-required');
    for (const auth of [
      'Bearer',
      'Bearer ',
      `Bearer  ${standard.key}`,
      `Bearer ${standard.key} `,
      ` Bearer ${standard.key}`,
      `Bearer\t${standard.key}`,
      `Bearer ${standard.key} extra`,
    ]) {
      const out = await f.handler(viewerRequest({ authorization: auth }));
      const body = await refusal(out, 401);
      expect(out.headers['www-authenticate'].value, auth).toBe('Bearer realm="isoatlas", error="invalid_request"');
      expect(body.detail, auth).toContain('"Authorization: Bearer <key>": the word Bearer, one space, the key');
    }
    expect(f.hmacs()).toBe(0); // nothing secret is involved in how a header is spelled
    expect((await f.handler(viewerRequest({ authorization: `BEARER ${standard.key}` }))).statusCode).toBeUndefined();
  });

  it("refuses a lettered key whose letter is not its tier's, naming the key and saying to reissue; legacy ids carry no letter and pass", async () => {
    const { key, record } = await issueKey(keysDir, {
      name: 'L',
      affiliation: 'L',
      use: 'legacy',
      tier: 'plus',
      letter: null,
    });
    expect(record.id).toHaveLength(8);
    expect(
      (await gate('key-required').handler(viewerRequest({ authorization: bearer(key) }))).statusCode,
    ).toBeUndefined();
    // The plus key's record says standard (a registry edited by hand, or letters changed in the config).
    const moved = store((e) =>
      e.set(keyEntry(plus.id), encodeKeyRecord({ ...decodeKeyRecord(e.get(keyEntry(plus.id))!)!, tier: 'standard' })),
    );
    const body = await refusal(
      await gate('key-required', moved).handler(viewerRequest({ authorization: bearer(plus.key) })),
      401,
    );
    expect(body.detail).toContain(`API key ${plus.id} does not carry the letter of its tier (standard)`);
    expect(body.detail).toContain('reissued');
  });

  it('refuses a revoked key as revoked, naming when', async () => {
    const body = await refusal(
      await gate('key-required').handler(viewerRequest({ authorization: bearer(revoked.key) })),
      401,
    );
    expect(body.detail).toContain(`${revoked.id} was revoked on 2026-11-01`);
  });

  it('refuses a key whose day quota is used up with 429 and Retry-After until the store says, then admits it again', async () => {
    const until = Math.floor(Date.parse('2026-11-26T00:00:00Z') / 1000);
    const exhausted = store((e) =>
      e.set(
        keyEntry(standard.id),
        encodeKeyRecord({ ...decodeKeyRecord(e.get(keyEntry(standard.id))!)!, exhausted_until: until }),
      ),
    );
    const out = await gate('key-required', exhausted).handler(viewerRequest({ authorization: bearer(standard.key) }));
    const body = await refusal(out, 429);
    expect(out.headers['retry-after'].value).toBe(String(until - NOW / 1000));
    expect(body.detail).toContain('until 2026-11-26T00:00:00.000Z');
    const later = await gate('key-required', exhausted, until * 1000 + 1000).handler(
      viewerRequest({ authorization: bearer(standard.key) }),
    );
    expect(later.statusCode).toBeUndefined();
    // Another key is not affected.
    expect(
      (await gate('key-required', exhausted).handler(viewerRequest({ authorization: bearer(plus.key) }))).statusCode,
    ).toBeUndefined();
  });

  it('answers 503 (not 401, not a pass) when the store has no secret yet, and never echoes a key pasted into the path', async () => {
    const out = await gate(
      'key-required',
      store((e) => e.delete(SECRET_ENTRY)),
    ).handler(viewerRequest({ authorization: bearer(standard.key) }));
    await refusal(out, 503);
    expect(out.headers['retry-after'].value).toBe('30');
    const pasted = await gate('key-required').handler(viewerRequest({ uri: `/api/v1/genes/${standard.key}` }));
    expect(JSON.parse(pasted.body.data).instance).toBe('/api/v1/genes/isoatlas_[redacted]');
    const encoded = [...standard.key].map((c) => `%${c.charCodeAt(0).toString(16)}`).join('');
    for (const uri of [`/api/v1/genes/${encoded}`, `/api/v1/genes/${standard.key.replace(/_/g, '%255F')}`]) {
      const out = await gate('key-required').handler(viewerRequest({ uri }));
      expect(JSON.parse(out.body.data).instance).toBe('/api/v1/genes/isoatlas_[redacted]');
    }
  });
});

describe('what the gate echoes', () => {
  it("never a piece of a key pasted into the path, in any shape; the API's lowercase words stay", async () => {
    const refuser = gate('key-required');
    for (const [shape, paste] of Object.entries({ ...PASTE_SHAPES, ...PASTE_SHAPES_BY_CHANCE })) {
      for (let i = 0; i < 50; i++) {
        const { text, secret } = paste(standard.key, pasteChoices);
        // CloudFront gives the function the path apart from the query: the path is what it echoes.
        const uri = text.replace('?', '/');
        const out = await refuser.handler(viewerRequest({ uri }));
        expect(out.statusCode, shape).toBe(401);
        // The shape's name only: a failure must not print the key.
        expect(leaksSecret(JSON.parse(out.body.data).instance, secret), shape).toBe(false);
      }
    }
    const plain = await refuser.handler(viewerRequest({ uri: '/api/v1/isoforms/PB.1234.5/structure' }));
    expect(JSON.parse(plain.body.data).instance).toBe('/api/v1/isoforms/PB.1234.5/structure');
  });
});

describe('preflights (every arrangement)', () => {
  const PREFLIGHT = {
    method: 'OPTIONS',
    uri: '/releases/2026.11-chr22-demo/structures/PB.1.1.cif',
    headers: {
      Origin: 'https://example.org',
      'Access-Control-Request-Method': 'GET',
      'Access-Control-Request-Headers': 'authorization',
    },
  };
  const gates = () =>
    [
      ['none', loadCloudFrontFunction(keyGateCode(keyGateSettings(null)), new Map(), () => NOW)],
      ['open', gate('open')],
      ['key-required', gate('key-required')],
      // An empty store: the answer needs no secret, key or release from it.
      [
        'key-required, empty store',
        loadCloudFrontFunction(
          keyGateCode(keyGateSettings(resolveAccessConfig({}, 'key-required'))),
          new Map(),
          () => NOW,
        ),
      ],
    ] as const;

  it('are answered by the gate itself: 204, no key needed, nothing sent on to an origin, nothing metered', async () => {
    for (const [mode, f] of gates()) {
      for (const uri of [PREFLIGHT.uri, '/api/v1/genes/PRR5', '/current.json']) {
        const out = await f.handler(viewerRequest({ ...PREFLIGHT, uri }));
        expect(out.statusCode, `${mode} ${uri}`).toBe(204);
        expect(out.body, mode).toBeUndefined();
        expect(out.headers['access-control-allow-headers'].value, mode).toMatch(/\bAuthorization\b/);
      }
      // A key sent with an OPTIONS request is neither checked nor refused.
      expect(
        (await f.handler(viewerRequest({ ...PREFLIGHT, authorization: 'Bearer not-a-key' }))).statusCode,
        mode,
      ).toBe(204);
      expect(f.logs, mode).toEqual([]);
    }
  });

  it('get the same answer from the gate as from isoatlas serve (the edge handler) for the same request', async () => {
    const served = await createHandler({ origin: { description: 'none', read: async () => null } })(
      new Request(`https://atlas.test${PREFLIGHT.uri}`, { method: 'OPTIONS', headers: PREFLIGHT.headers }),
    );
    const expected: Record<string, string> = {};
    served.headers.forEach((value, name) => (expected[name] = value));
    expect(Object.keys(expected)).toContain('access-control-max-age');
    for (const [mode, f] of gates()) {
      const out = await f.handler(viewerRequest(PREFLIGHT));
      expect(out.statusCode, mode).toBe(served.status);
      expect(Object.fromEntries(Object.entries<any>(out.headers).map(([name, h]) => [name, h.value])), mode).toEqual(
        expected,
      );
    }
  });
});

describe('open (A)', () => {
  it('admits anonymous requests and valid keys; a tier without a day limit is not metered', async () => {
    const f = gate('open');
    expect((await f.handler(viewerRequest({}))).statusCode).toBeUndefined();
    const out = await f.handler(viewerRequest({ authorization: bearer(plus.key) }));
    expect(out.statusCode).toBeUndefined();
    expect(out.headers.authorization).toBeUndefined();
    expect(f.logs).toEqual([]);
  });

  it('never downgrades a bad key to anonymous: malformed, forged and revoked keys are refused', async () => {
    const f = gate('open');
    await refusal(await f.handler(viewerRequest({ authorization: bearer('isoatlas_abcdefgh_short') })), 401);
    await refusal(
      await f.handler(
        viewerRequest({ authorization: bearer(standard.key.slice(0, -1) + (standard.key.endsWith('A') ? 'B' : 'A')) }),
      ),
      401,
    );
    await refusal(await f.handler(viewerRequest({ authorization: bearer(revoked.key) })), 401);
  });

  it('meters the tiers that have a day limit in the config', async () => {
    const config = resolveAccessConfig(
      {
        open: {
          anonymous_per_ip: { per_minute: 900 },
          tiers: { standard: { per_minute: 3000, per_day: 100000 }, plus: { per_minute: 12000 } },
        },
      },
      'open',
    );
    expect(keyGateSettings(config)).toMatchObject({
      mode: 'open',
      metered: ['standard'],
      letters: { standard: 's', plus: 'p' },
      api: '/api/v1/',
    });
  });
});

describe('the release (every arrangement)', () => {
  const withRelease = () => store((e) => e.set(CURRENT_RELEASE_ENTRY, '2026.12-test'));
  const none = (entries: Map<string, string>) =>
    loadCloudFrontFunction(keyGateCode(keyGateSettings(null)), entries, () => NOW);

  it('names the current release in an API request that names none, as default_release (links do not carry it), so it is part of the cache key', async () => {
    for (const f of [none(withRelease()), gate('open', withRelease())]) {
      const out = await f.handler(viewerRequest({}));
      expect(out.statusCode).toBeUndefined();
      expect(out.querystring).toEqual({ [DEFAULT_RELEASE_PARAM]: { value: '2026.12-test' } });
    }
    const keyed = await gate('key-required', withRelease()).handler(
      viewerRequest({ authorization: bearer(standard.key) }),
    );
    expect(keyed.querystring).toEqual({ [DEFAULT_RELEASE_PARAM]: { value: '2026.12-test' } });
  });

  it('leaves a release the client named (either parameter), and requests outside the API, as they are', async () => {
    const f = none(withRelease());
    for (const param of [RELEASE_PARAM, DEFAULT_RELEASE_PARAM]) {
      const named = await f.handler(viewerRequest({ querystring: { [param]: { value: '2026.11-chr22-demo' } } }));
      expect(named.querystring, param).toEqual({ [param]: { value: '2026.11-chr22-demo' } });
    }
    for (const uri of ['/releases/2026.11-chr22-demo/structures/PB.1.1.cif', '/current.json', '/objects/ab/cdef']) {
      expect((await f.handler(viewerRequest({ uri }))).querystring, uri).toEqual({});
    }
  });

  it('without a current release in the store (nothing published with --kvs yet) the request goes on unpinned', async () => {
    expect((await none(store()).handler(viewerRequest({}))).querystring).toEqual({});
  });

  it('checks no key when the arrangement has none', async () => {
    const out = await none(withRelease()).handler(viewerRequest({ authorization: 'Bearer whatever' }));
    expect(out.statusCode).toBeUndefined();
    expect(runtimeProblems(keyGateCode(keyGateSettings(null)))).toEqual([]);
  });

  it('a refused key is refused before any release is looked up', async () => {
    const out = await gate('key-required', withRelease()).handler(viewerRequest({}));
    await refusal(out, 401);
  });
});
