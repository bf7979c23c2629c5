// Property-based fuzzing (fast-check) of the edge function in process, over the demo tree: random
// paths, query strings, headers and methods, and the rules that must hold for every answer — never a
// 5xx, every 4xx a valid problem+json, every 200 body either a file of the tree or a generated body
// valid against its schema, and nothing of the server's internals (stack traces, the tree's path) in
// any body. Runs are seeded: ISOATLAS_FUZZ_SEED=<n> reproduces a run (fast-check prints the seed and
// the shrunk counterexample on failure); ISOATLAS_FUZZ_SCALE=<x> multiplies the number of cases.
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import fc from 'fast-check';
import fg from 'fast-glob';
import { createHash } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { createHandler, type Handler, type RequestContext } from '../edge/handler.js';
import { createNodeServer } from '../edge/adapters/node-http.js';
import { LocalOrigin } from '../edge/origins/local.js';
import { AccessControl } from '../edge/access/control.js';
import { resolveAccessConfig } from '../edge/access/config.js';
import { importServerSecret, keyId } from '../edge/access/key-format.js';
import { MemoryQuotaStore } from '../edge/access/stores/memory.js';
import { FileKeyRegistry } from '../edge/access/stores/key-file.js';
import { issueKey, readSecret, registryPath, revokeKey } from '../build/keys/registry.js';
import type { SchemaName } from '../edge/contract/schemas.js';
import { validate } from './helpers/schemas.js';
import { namesOf, requestArbitraries, type TreeNames } from './helpers/fuzz-requests.js';

const SEED = Number(process.env.ISOATLAS_FUZZ_SEED ?? 20261122);
const SCALE = Number(process.env.ISOATLAS_FUZZ_SCALE ?? 1);
const runs = (n: number) => Math.max(1, Math.round(n * SCALE));
/** Cases per property; together 100,000 (the floor issue #8 sets for CI). */
const RUNS = {
  paths: runs(40_000),
  queries: runs(25_000),
  headers: runs(20_000),
  methods: runs(5_000),
  access: runs(8_000),
  raw: runs(2_000),
};

const BASE = 'http://atlas.test';
const sha256 = (bytes: Uint8Array) => createHash('sha256').update(bytes).digest('hex');

let tree: string;
/** sha256 of every file of the tree, read by walking the files (not from the manifest). */
const treeHashes = new Set<string>();
const structureFiles = new Set<string>();
let names: TreeNames;
let plain: Handler;

beforeAll(async () => {
  tree = inject('fixtureTree');
  for (const path of await fg('**/*', { cwd: tree, onlyFiles: true, dot: true })) {
    treeHashes.add(sha256(readFileSync(join(tree, path))));
    if (path.startsWith('structures/')) structureFiles.add(path);
  }
  names = await namesOf(tree);
  plain = createHandler({ origin: new LocalOrigin(tree), serveStructureFiles: true });
});

// ---------------------------------------------------------------------------------------------------
// Arbitraries (test/helpers/fuzz-requests.ts).

const { path, queryString, queryRoute, authorization, headers, method } = requestArbitraries(() => names);

// ---------------------------------------------------------------------------------------------------
// The rules every answer follows.

/** Schemas a 200 body that is not a file of the tree may follow (answers assembled by the edge). */
const GENERATED: SchemaName[] = ['SearchResults', 'IsoformPage', 'NeoantigenList'];
const KNOWN_STATUSES = new Set([200, 204, 304, 307, 400, 401, 404, 405, 409, 429]);
const LEAKS = [
  /\n\s+at\s/,
  /node:internal/,
  /\bat (async )?[\w.<>]+ \(/,
  /(TypeError|ReferenceError|RangeError|SyntaxError):/,
];

interface Case {
  method: string;
  url: string;
  headers?: Record<string, string>;
}

/** A Request from a case, or null when the Fetch API itself refuses to build it (never reaches the edge). */
function requestOf(c: Case): Request | null {
  try {
    return new Request(c.url, { method: c.method, headers: c.headers });
  } catch {
    return null;
  }
}

async function checkAnswer(
  handler: Handler,
  c: Case,
  context: RequestContext = { clientIp: '192.0.2.10' },
  secrets: string[] = [],
): Promise<number> {
  const request = requestOf(c);
  if (!request) return -1;
  const response = await handler(request, context);
  const bytes = new Uint8Array(await response.arrayBuffer());
  const text = Buffer.from(bytes).toString('utf8');
  const what = `${c.method} ${c.url.slice(0, 300)} → ${response.status}: ${text.slice(0, 300)}`;
  const type = response.headers.get('Content-Type') ?? '';
  const isHead = request.method === 'HEAD';

  expect(response.status, what).toBeLessThan(500);
  expect(KNOWN_STATUSES.has(response.status), what).toBe(true);
  expect(text.includes(tree), what).toBe(false);
  // One assertion per answer for each rule below, not one per pattern, key or header: over this many
  // cases an expect call costs more than the check it makes. (A key found is not named: it would be
  // printed.)
  expect(
    LEAKS.filter((leak) => leak.test(text)).map(String),
    `${what} (matches a pattern of the server's internals)`,
  ).toEqual([]);
  if (secrets.length > 0) {
    // Header values hold no line break (nor does a key), so a key is in the joined values only if it
    // is in one of them.
    const headerValues = [...response.headers.values()].join('\n');
    expect(
      secrets.some((secret) => text.includes(secret)),
      `${what} echoes key material`,
    ).toBe(false);
    expect(
      secrets.some((secret) => headerValues.includes(secret)),
      `${what} has key material in a header`,
    ).toBe(false);
  }

  if (response.status >= 400) {
    expect(type, what).toMatch(/^application\/problem\+json/);
    if (!isHead) {
      const body = JSON.parse(text) as { status: number };
      expect(validate('Problem', body), what).toEqual([]);
      expect(body.status, what).toBe(response.status);
    }
  }
  if (response.status === 200 && !isHead) {
    const hash = sha256(bytes);
    expect(response.headers.get('ETag'), what).toBe(`"${hash}"`);
    if (!treeHashes.has(hash)) {
      // Not a file of the tree: then an answer the edge assembled, valid against its schema.
      expect(type, what).toMatch(/^application\/json/);
      const body = JSON.parse(text);
      expect(
        GENERATED.some((schema) => validate(schema, body).length === 0),
        `${what}: neither a tree file nor a valid generated body`,
      ).toBe(true);
    }
  }
  if (response.status === 304) {
    expect(bytes.length, what).toBe(0);
    expect(request.headers.get('If-None-Match'), what).not.toBeNull();
  }
  if (response.status === 307) {
    const location = response.headers.get('Location') ?? '';
    // Root-relative: the redirect never names a host a client chose.
    expect(location.startsWith('/structures/'), what).toBe(true);
    expect(structureFiles.has(location.slice(1)), `${what}: redirect to ${location}`).toBe(true);
  }
  return response.status;
}

const params = (numRuns: number) => ({ numRuns, seed: SEED, endOnFailure: false });

/** Tallies statuses per property, so a property that never reaches its interesting answers is noticed. */
function tally() {
  const counts = new Map<number, number>();
  return {
    add: (status: number) => counts.set(status, (counts.get(status) ?? 0) + 1),
    counts,
    report: (name: string) =>
      console.log(
        `fuzz ${name}: ${[...counts]
          .sort((a, b) => a[0] - b[0])
          .map(([s, n]) => `${s}×${n}`)
          .join(' ')}`,
      ),
  };
}

// ---------------------------------------------------------------------------------------------------

describe('fuzzing the edge function (no access control)', () => {
  it(`paths: ${RUNS.paths} cases`, async () => {
    const t = tally();
    await fc.assert(
      fc.asyncProperty(path, async (p) => {
        t.add(await checkAnswer(plain, { method: 'GET', url: BASE + p }));
      }),
      params(RUNS.paths),
    );
    t.report('paths');
    for (const s of [200, 307, 400, 404, 409]) expect(t.counts.get(s) ?? 0, `status ${s} reached`).toBeGreaterThan(0);
  });

  it(`query strings: ${RUNS.queries} cases`, async () => {
    const t = tally();
    await fc.assert(
      fc.asyncProperty(queryRoute, queryString, async (route, query) => {
        t.add(await checkAnswer(plain, { method: 'GET', url: `${BASE}${route}?${query}` }));
      }),
      params(RUNS.queries),
    );
    t.report('queries');
    for (const s of [200, 400]) expect(t.counts.get(s) ?? 0, `status ${s} reached`).toBeGreaterThan(0);
  });

  it(`headers: ${RUNS.headers} cases`, async () => {
    const t = tally();
    await fc.assert(
      fc.asyncProperty(fc.oneof(path, queryRoute), headers, async (p, h) => {
        t.add(await checkAnswer(plain, { method: 'GET', url: BASE + p, headers: h }));
      }),
      params(RUNS.headers),
    );
    t.report('headers');
    for (const s of [200, 404]) expect(t.counts.get(s) ?? 0, `status ${s} reached`).toBeGreaterThan(0);
  });

  it(`methods: ${RUNS.methods} cases`, async () => {
    const t = tally();
    await fc.assert(
      fc.asyncProperty(method, fc.oneof(path, queryRoute), async (m, p) => {
        t.add(await checkAnswer(plain, { method: m, url: BASE + p }));
      }),
      params(RUNS.methods),
    );
    t.report('methods');
    for (const s of [200, 204, 405]) expect(t.counts.get(s) ?? 0, `status ${s} reached`).toBeGreaterThan(0);
  });
});

describe('fuzzing the edge function with keys required', () => {
  let keysDir: string;
  let access: Handler;
  let clock: { now: number };
  const live: string[] = [];
  let revoked: string;

  beforeAll(async () => {
    keysDir = mkdtempSync(join(tmpdir(), 'isoatlas-fuzz-keys-'));
    for (const tier of ['standard', 'plus'])
      live.push((await issueKey(keysDir, { name: 'Fuzz', affiliation: 'Lab', use: 'fuzzing', tier })).key);
    revoked = (await issueKey(keysDir, { name: 'Fuzz', affiliation: 'Lab', use: 'fuzzing', tier: 'standard' })).key;
    await revokeKey(keysDir, keyId(revoked)!);
    const secret = await importServerSecret(readSecret(keysDir, { create: false })!);
    clock = { now: Date.UTC(2026, 10, 22, 12, 0, 0) };
    // Small limits, so 429s (per key, and per IP before any key is looked at) are fuzzed as well.
    const config = resolveAccessConfig(
      {
        key_required: {
          per_ip: { per_minute: 400 },
          tiers: { standard: { per_minute: 5, per_day: 200 }, plus: { per_minute: 20 } },
        },
      },
      'key-required',
    );
    const handler = new AccessControl({
      config,
      store: new MemoryQuotaStore(() => clock.now),
      keys: new FileKeyRegistry(registryPath(keysDir)),
      secret,
      now: () => clock.now,
    });
    access = createHandler({ origin: new LocalOrigin(tree), serveStructureFiles: true, access: handler });
  });
  afterAll(() => rmSync(keysDir, { recursive: true, force: true }));

  it(`keys, near-keys and garbage: ${RUNS.access} cases`, async () => {
    const t = tally();
    /** A real key, or one damaged: a character changed, dropped or added, another case, padding. */
    const keyLike = fc
      .tuple(fc.nat(), fc.nat(), fc.integer({ min: 0, max: 7 }), fc.constantFrom('a', 'Z', '_', '-', '0', '=', ' '))
      .map(([pick, at, how, ch]) => {
        const all = [...live, revoked];
        const key = all[pick % all.length];
        const i = at % key.length;
        switch (how) {
          case 0:
            return key.slice(0, i) + (key[i] === ch ? 'b' : ch) + key.slice(i + 1);
          case 1:
            return key.slice(0, i) + key.slice(i + 1);
          case 2:
            return key + ch;
          case 3:
            return key.toUpperCase();
          case 4:
            return `${key}=`;
          default:
            return key;
        }
      });
    const auth = fc.oneof(
      { weight: 3, arbitrary: fc.constantFrom(...live).map((k) => `Bearer ${k}`) },
      { weight: 3, arbitrary: keyLike.map((k) => `Bearer ${k}`) },
      { weight: 1, arbitrary: keyLike.map((k) => `bearer  ${k} `) },
      { weight: 2, arbitrary: authorization },
      { weight: 1, arbitrary: fc.constant(undefined) },
    );
    const ip = fc.constantFrom('192.0.2.1', '192.0.2.2', '2001:db8::1', undefined);
    const secrets = [...live, revoked].flatMap((k) => [k, k.slice(k.indexOf('_', 9) + 1)]);
    await fc.assert(
      fc.asyncProperty(
        fc.oneof(path, queryRoute),
        auth,
        headers,
        ip,
        fc.integer({ min: 0, max: 99 }),
        async (p, a, h, clientIp, tick) => {
          clock.now += tick === 0 ? 60_000 : 10; // a minute passes now and then, so both 200s and 429s occur
          const all = { ...h, ...(a === undefined ? {} : { Authorization: a }) };
          if (a === undefined) delete all.Authorization;
          t.add(await checkAnswer(access, { method: 'GET', url: BASE + p, headers: all }, { clientIp }, secrets));
        },
      ),
      params(RUNS.access),
    );
    t.report('access');
    for (const s of [200, 401, 404, 429]) expect(t.counts.get(s) ?? 0, `status ${s} reached`).toBeGreaterThan(0);
  });
});

describe('fuzzing raw request targets through the Node adapter', () => {
  // The URL parser normalizes what the properties above send (dot segments, backslashes); a socket
  // client does not, so here the adapter sees the raw request target and Host header.
  let server: http.Server;
  let port: number;
  const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
  beforeAll(async () => {
    server = createNodeServer(plain);
    await new Promise<void>((ok) => server.listen(0, '127.0.0.1', ok));
    port = (server.address() as AddressInfo).port;
  });
  afterAll(async () => {
    agent.destroy();
    await new Promise((ok) => server.close(ok));
  });

  function send(
    method: string,
    target: string,
    headers: Record<string, string>,
  ): Promise<{ status: number; headers: http.IncomingHttpHeaders; body: Buffer } | null> {
    return new Promise((resolve, reject) => {
      let req: http.ClientRequest;
      try {
        req = http.request({
          host: '127.0.0.1',
          port,
          method,
          path: target,
          headers,
          agent,
          setHost: !('Host' in headers),
        });
      } catch {
        return resolve(null); // Node's client refuses the target or a header: it never reaches a server
      }
      req.on('response', (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => resolve({ status: res.statusCode!, headers: res.headers, body: Buffer.concat(chunks) }));
      });
      // A CONNECT answer comes as 'connect' (the socket is handed over): read the body from it.
      req.on('connect', (res: http.IncomingMessage, socket: import('node:net').Socket, head: Buffer) => {
        const chunks: Buffer[] = [head];
        socket.on('data', (c: Buffer) => chunks.push(c));
        socket.on('end', () => resolve({ status: res.statusCode!, headers: res.headers, body: Buffer.concat(chunks) }));
      });
      req.on('error', reject);
      req.end();
    });
  }

  const rawTarget = fc.oneof(
    path,
    fc.constantFrom(
      '*',
      'http://evil.example/api/v1/release',
      '//evil.example/api/v1/release',
      '/api/v1/genes/../../../manifest.json',
      '/api/v1/./release',
      '/api/v1/release/..',
      '/structures/../manifest.json',
      '/structures/..\\manifest.json',
      '/api/v1/isoforms/PRR5-201/../../genes/PRR5',
      'api/v1/release',
      '',
      '?',
      '/?limit=1',
      '/api/v1\\release',
      '/%2e%2e/%2e%2e/etc/passwd',
    ),
    fc
      .tuple(
        fc.constantFrom('/api/v1/', '/structures/', '/'),
        fc.array(
          fc.constantFrom(
            '..',
            '.',
            'genes',
            'PRR5',
            'edge',
            'aliases.json',
            'manifest.json',
            '%2e%2e',
            '',
            'isoforms',
            'PRR5-201',
          ),
          { maxLength: 6 },
        ),
      )
      .map(([prefix, parts]) => prefix + parts.join('/')),
  );
  it('answers CONNECT 405 with a problem, not a dropped connection (found by fuzzing)', async () => {
    const reply = await send('CONNECT', 'evil.example:443', {});
    expect(reply!.status).toBe(405);
    expect(reply!.headers.allow).toBe('GET, HEAD, OPTIONS');
    expect(reply!.headers['content-type']).toMatch(/^application\/problem\+json/);
    const body = JSON.parse(reply!.body.toString('utf8')) as { status: number };
    expect(validate('Problem', body)).toEqual([]);
    expect(body.status).toBe(405);
  });

  const host = fc.constantFrom(
    undefined,
    'atlas.test',
    'evil.example:8080',
    '[::1]:1',
    'bad host',
    '',
    'x'.repeat(300),
    'a/b',
    'user@evil.example',
  );

  it(`raw targets and Host headers: ${RUNS.raw} cases`, async () => {
    const t = tally();
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom('GET', 'GET', 'GET', 'HEAD', 'OPTIONS', 'DELETE', 'TRACE', 'CONNECT'),
        rawTarget,
        host,
        async (m, target, h) => {
          const reply = await send(m, target, h === undefined ? {} : { Host: h });
          if (!reply) return;
          t.add(reply.status);
          const what = `${m} ${target} (Host ${h}) → ${reply.status}: ${reply.body.toString('utf8').slice(0, 300)}`;
          expect(reply.status, what).toBeLessThan(500);
          expect(reply.body.toString('utf8').includes(tree), what).toBe(false);
          if (reply.status >= 400 && m !== 'HEAD') {
            expect(reply.headers['content-type'], what).toMatch(/^application\/problem\+json/);
            const body = JSON.parse(reply.body.toString('utf8')) as { status: number };
            expect(validate('Problem', body), what).toEqual([]);
            expect(body.status, what).toBe(reply.status);
          }
          if (reply.status === 200 && m === 'GET') {
            const body = reply.body;
            if (!treeHashes.has(sha256(body)))
              expect(
                GENERATED.some((schema) => validate(schema, JSON.parse(body.toString('utf8'))).length === 0),
                what,
              ).toBe(true);
          }
          if (reply.status === 307) {
            // The redirect is root-relative, into /structures/: whatever Host was sent, it names no host.
            const location = reply.headers.location!;
            expect(location.startsWith('/structures/'), what).toBe(true);
            expect(structureFiles.has(location.slice(1)), what).toBe(true);
          }
        },
      ),
      params(RUNS.raw),
    );
    t.report('raw');
    for (const s of [200, 400, 404, 405]) expect(t.counts.get(s) ?? 0, `status ${s} reached`).toBeGreaterThan(0);
  });
});
