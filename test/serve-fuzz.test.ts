// No request ends the server: the generated requests of test/fuzz.test.ts (seeded the same way) sent
// to a real `isoatlas serve` with every option on — --metrics, --trust-proxy (the test's own address,
// so the fuzzed X-Forwarded-For names the client and /admission is reachable), keys in A (open) and
// in B (key-required), a mirror holding two releases, pinned requests — and after every case
// /health must answer 200 from a live process. No answer is a 5xx other than the documented
// 502/503/504, none is a 500, and the route labels of /metrics stay within their bounded set. Then
// the targets that used to end the process with --metrics (a refused segment on every route that
// takes one), in A and in B. Last, /health of a mirror whose release fails verification.
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import fc from 'fast-check';
import http from 'node:http';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { writeManifest } from '../build/render/manifest.js';
import { issueKey } from '../build/keys/registry.js';
import { FRONT_MANIFEST_HEADER } from '../edge/server/serve.js';
import { HISTORY_KEY, POINTER_KEY, STORE_FORMAT, objectKey } from '../edge/contract/store-layout.js';
import { routes } from '../edge/contract/routes.js';
import { answerLabels } from '../edge/contract/dispatch.js';
import { treePaths } from '../edge/contract/tree.js';
import { namesOf, requestArbitraries, type TreeNames } from './helpers/fuzz-requests.js';
import { readManifest } from './helpers/tree.js';
import { startServer, type RunningServer } from './helpers/server.js';
import { validate } from './helpers/schemas.js';

const SEED = Number(process.env.ISOATLAS_FUZZ_SEED ?? 20261122);
const SCALE = Number(process.env.ISOATLAS_FUZZ_SCALE ?? 1);
/** Cases per arrangement; each is two requests (the case, then /health). */
const RUNS = Math.max(1, Math.round(1_200 * SCALE));

const sha256 = (bytes: Buffer) => createHash('sha256').update(bytes).digest('hex');

let work: string;
let store: string;
let releaseA: string;
let releaseB: string;
let names: TreeNames;
const keys: string[] = [];

/** A mirror's store of two releases of the demo tree: A as built, B the same files under another
 * name (its own manifest); objects are links into the trees, B is current. */
async function twoReleaseStore(demo: string): Promise<void> {
  const { index, entries } = readManifest(demo);
  releaseA = index.release;
  releaseB = `${index.release}-b`;
  const treeB = join(work, 'tree-b');
  const link = (sha: string, file: string) => {
    const at = join(store, objectKey(sha));
    if (existsSync(at)) return;
    mkdirSync(dirname(at), { recursive: true });
    symlinkSync(file, at);
  };
  for (const e of [...entries, ...index.shards]) link(e.sha256, join(demo, e.path));
  const published = (release: string, root: string) => {
    const manifest = join(root, treePaths.manifest);
    const sha = sha256(readFileSync(manifest));
    link(sha, manifest);
    return { release, manifest_sha256: sha, published_at: '2026-11-25T00:00:00.000Z' };
  };
  const a = published(releaseA, demo);
  const { index: indexB } = await writeManifest(treeB, releaseB, entries);
  for (const shard of indexB.shards) link(shard.sha256, join(treeB, shard.path));
  const b = published(releaseB, treeB);
  writeFileSync(
    join(store, HISTORY_KEY),
    JSON.stringify({ format: STORE_FORMAT, releases: [a, b], pending: [], retired: [] }),
  );
  writeFileSync(join(store, POINTER_KEY), JSON.stringify({ format: STORE_FORMAT, ...b, previous: releaseA }));
}

beforeAll(async () => {
  work = mkdtempSync(join(tmpdir(), 'isoatlas-serve-fuzz-'));
  store = join(work, 'mirror');
  mkdirSync(store);
  const demo = inject('fixtureTree');
  await twoReleaseStore(demo);
  names = await namesOf(demo);
  for (const tier of ['standard', 'plus'])
    keys.push((await issueKey(join(work, 'keys'), { name: 'Fuzz', affiliation: 'Lab', use: 'fuzzing', tier })).key);
  // Limits high enough that most answers are not 429, low enough for a key to reach its own.
  writeFileSync(
    join(work, 'access.json'),
    JSON.stringify({
      open: { anonymous_per_ip: { per_minute: 5_000 } },
      key_required: {
        per_ip: { per_minute: 5_000 },
        tiers: { standard: { per_minute: 300 }, plus: { per_minute: 100_000 } },
      },
    }),
  );
}, 60_000);

afterAll(() => rmSync(work, { recursive: true, force: true }));

interface Reply {
  status: number;
  headers: http.IncomingHttpHeaders;
  body: Buffer;
}

/** One request with its target sent as it is; null when Node's client refuses to send it. */
function send(
  base: string,
  agent: http.Agent,
  method: string,
  target: string,
  headers: Record<string, string> = {},
): Promise<Reply | null> {
  const { hostname, port } = new URL(base);
  return new Promise((resolve, reject) => {
    let req: http.ClientRequest;
    try {
      req = http.request({ host: hostname, port, method, path: target, headers, agent });
    } catch {
      return resolve(null);
    }
    req.on('response', (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode!, headers: res.headers, body: Buffer.concat(chunks) }));
    });
    req.on('error', reject);
    req.end();
  });
}

/** send() to a server under test; a failure to get any answer says what became of the server. */
function ask(
  server: RunningServer,
  agent: http.Agent,
  method: string,
  target: string,
  headers: Record<string, string> = {},
): Promise<Reply | null> {
  return send(server.base, agent, method, target, headers).catch((err: Error) => {
    throw new Error(
      `${method} ${target.slice(0, 200)}: ${err.message}; the server's exit code: ${server.child.exitCode}\n${server.logs().slice(-3000)}`,
    );
  });
}

const DOCUMENTED_5XX = new Set([502, 503, 504]);
/** Every label /metrics may carry: the dispatch table's entries and `other`. */
const LABELS = new Set<string>(answerLabels);

function checkReply(reply: Reply, method: string, what: string): void {
  expect(reply.status, what).not.toBe(500);
  if (reply.status >= 500) expect(DOCUMENTED_5XX.has(reply.status), what).toBe(true);
  if (reply.status >= 400 && method.toUpperCase() !== 'HEAD' && reply.body.length > 0) {
    expect(reply.headers['content-type'], what).toMatch(/^application\/problem\+json/);
    const body = JSON.parse(reply.body.toString('utf8')) as { status: number };
    expect(validate('Problem', body), what).toEqual([]);
    expect(body.status, what).toBe(reply.status);
  }
}

/** The server is still there: alive, and /health answers 200. */
async function stillServing(server: RunningServer, agent: http.Agent, what: string): Promise<void> {
  const exitCode = server.child.exitCode;
  // The log's tail only when it is shown: taking it flattens the whole log so far, on every case.
  expect(exitCode, exitCode === null ? what : `${what}: the server exited\n${server.logs().slice(-3000)}`).toBeNull();
  const health = await ask(server, agent, 'GET', '/health');
  expect(health?.status, `${what}: /health after it`).toBe(200);
}

/** The targets that ended a server with --metrics: a refused segment in every route's parameter. */
const REFUSED_SEGMENTS = ['%2F', 'a%2Fb', '%5C', '%5c', '%ZZ', '%00', '\\', 'A'.repeat(201)];
const refusedTargets = () =>
  routes
    .filter((r) => r.pathParams.length > 0)
    .flatMap((r) =>
      REFUSED_SEGMENTS.flatMap((segment) => [
        `/api/v1${r.path.replace(/\{[^}]+\}/g, segment)}`,
        `/api/v1${r.path.replace(/\{[^}]+\}/g, segment)}?release=${releaseA}`,
      ]),
    );

for (const mode of ['open', 'key-required'] as const) {
  describe(`a real server, every option on, access ${mode}`, () => {
    let server: RunningServer;
    const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
    const statuses = new Map<number, number>();

    beforeAll(async () => {
      server = await startServer({
        dir: store,
        extraArgs: [
          '--metrics',
          '--trust-proxy',
          '127.0.0.1',
          '--access',
          mode,
          '--access-config',
          join(work, 'access.json'),
          '--keys-dir',
          join(work, 'keys'),
        ],
      });
    }, 60_000);
    afterAll(async () => {
      agent.destroy();
      await server?.stop();
    });

    it('serves both releases of the mirror, pinned or current', async () => {
      for (const [pin, expected] of [
        ['', releaseB],
        [`?release=${releaseA}`, releaseA],
        [`?release=${releaseB}`, releaseB],
      ]) {
        const reply = (await ask(server, agent, 'GET', `/api/v1/genes/PRR5${pin}`, {
          Authorization: `Bearer ${keys[1]}`,
        }))!;
        expect(reply.status, pin).toBe(200);
        expect(reply.headers['x-isoatlas-release'], pin).toBe(expected);
      }
    });

    // Refused as sent, before access control (edge/contract/targets.ts): 400 with or without a key.
    it('answers the refused segments on every route 400, key or none, and keeps serving', async () => {
      const targets = refusedTargets();
      expect(targets.length).toBeGreaterThan(50);
      for (const target of targets) {
        for (const auth of [{}, { Authorization: `Bearer ${keys[1]}` }] as Record<string, string>[]) {
          const reply = (await ask(server, agent, 'GET', target, auth))!;
          const what = `GET ${target.slice(0, 120)} (${Object.keys(auth).length ? 'key' : 'no key'}) → ${reply.status}`;
          checkReply(reply, 'GET', what);
          expect(reply.status, what).toBe(400);
          await stillServing(server, agent, what);
        }
      }
    });

    it(`generated requests, pinned or not: ${RUNS} cases, /health after each`, async () => {
      const a = requestArbitraries(() => names);
      const releasePin = fc.constantFrom(
        '',
        `release=${releaseA}`,
        `release=${releaseB}`,
        'release=2020.01-gone',
        'release=',
        `release=${'x'.repeat(101)}`,
        'release=a&release=b',
      );
      const served = fc.oneof(
        { weight: 6, arbitrary: a.path },
        { weight: 3, arbitrary: fc.tuple(a.queryRoute, a.queryString).map(([r, q]) => `${r}?${q}`) },
        {
          weight: 2,
          arbitrary: fc
            .tuple(fc.constantFrom(releaseA, releaseB, 'gone', '..', '%2e%2e', releaseA.toUpperCase()), a.realIsoform)
            .map(([r, t]) => `/releases/${r}/structures/${encodeURIComponent(t)}.cif`),
        },
        {
          weight: 1,
          arbitrary: fc.constantFrom(
            '/health',
            '/metrics',
            '/admission',
            '/admission?x=1',
            '/current.json',
            '/releases.json',
            '/objects/00/00',
            `/${POINTER_KEY}/..`,
            '/api/v1/releases',
            '/api/v1/docs',
            '/api/v1/docs/swagger-ui.css',
            '/api/v1/openapi.json',
          ),
        },
      );
      const target = fc
        .tuple(served, releasePin)
        .map(([p, pin]) => (pin === '' ? p : `${p}${p.includes('?') ? '&' : '?'}${pin}`));
      const auth = fc.oneof(
        { weight: 3, arbitrary: fc.constantFrom(...keys).map((k) => `Bearer ${k}`) },
        { weight: 2, arbitrary: a.authorization },
        { weight: 2, arbitrary: fc.constant(undefined) },
      );
      const front = fc.option(fc.constantFrom('0'.repeat(64), 'x', ''), { nil: undefined });
      await fc.assert(
        fc.asyncProperty(a.method, target, a.headers, auth, front, async (method, t, h, key, manifest) => {
          const headers: Record<string, string> = { ...h };
          if (key === undefined) delete headers.Authorization;
          else headers.Authorization = key;
          if (manifest !== undefined) headers[FRONT_MANIFEST_HEADER] = manifest;
          const reply = await ask(server, agent, method, t, headers);
          if (!reply) return; // Node's client would not send it
          statuses.set(reply.status, (statuses.get(reply.status) ?? 0) + 1);
          const what = `${method} ${t.slice(0, 200)} → ${reply.status}: ${reply.body.toString('utf8').slice(0, 200)}`;
          checkReply(reply, method, what);
          await stillServing(server, agent, what);
        }),
        { numRuns: RUNS, seed: SEED, endOnFailure: true },
      );
      console.log(
        `serve fuzz (${mode}): ${[...statuses]
          .sort((x, y) => x[0] - y[0])
          .map(([s, n]) => `${s}×${n}`)
          .join(' ')}`,
      );
      // The arrangement was exercised: answers served from both releases' files, and refusals.
      for (const s of [200, 400, 404]) expect(statuses.get(s) ?? 0, `status ${s} reached`).toBeGreaterThan(0);
    });

    it('logged no failure and no stray rejection; /metrics labels stay within their set', async () => {
      const metrics = (await ask(server, agent, 'GET', '/metrics'))!;
      expect(metrics.status).toBe(200);
      const labels = new Set([...metrics.body.toString('utf8').matchAll(/route="([^"]*)"/g)].map((m) => m[1]));
      expect([...labels].filter((l) => !LABELS.has(l))).toEqual([]);
      expect(labels.has('gene')).toBe(true);
      expect(labels.has('health')).toBe(true);
      const logs = server.logs();
      // No line at level error or worse: no failed request, no stray rejection, no unexpected error.
      expect(logs).not.toMatch(/"level":"(error|fatal)"/);
      expect(server.child.exitCode).toBeNull();
    });
  });
}

describe('/health of a mirror whose release cannot be read', () => {
  it('says what is wrong in words, without a path; the log names the cause', async () => {
    // The pointer names a manifest by a sha256 its object does not have (the demo's manifest stored
    // under zeros), as a corrupted or tampered store would.
    const broken = join(work, 'broken');
    const zeros = '0'.repeat(64);
    mkdirSync(dirname(join(broken, objectKey(zeros))), { recursive: true });
    symlinkSync(join(inject('fixtureTree'), treePaths.manifest), join(broken, objectKey(zeros)));
    const release = { release: 'broken', manifest_sha256: zeros, published_at: '2026-11-25T00:00:00.000Z' };
    writeFileSync(
      join(broken, HISTORY_KEY),
      JSON.stringify({ format: STORE_FORMAT, releases: [release], pending: [], retired: [] }),
    );
    writeFileSync(join(broken, POINTER_KEY), JSON.stringify({ format: STORE_FORMAT, ...release, previous: null }));
    const server = await startServer({ dir: broken, extraArgs: ['--metrics', '--keys-dir', join(work, 'keys')] });
    try {
      const agent = new http.Agent({ keepAlive: false });
      for (let i = 0; i < 3; i++) {
        const reply = (await ask(server, agent, 'GET', '/health'))!;
        expect(reply.status).toBe(503);
        const text = reply.body.toString('utf8');
        expect(JSON.parse(text)).toEqual({
          status: 'unavailable',
          detail: "the current release's manifest does not match the sha256 the mirror's pointer names",
        });
        expect(text).not.toContain(work);
      }
      const unhealthy = () =>
        server
          .logs()
          .split('\n')
          .filter((l) => l.includes('"event":"unhealthy"'));
      // The server writes its log asynchronously: wait for the line as it arrives (bounded).
      await server.untilLogged(() => unhealthy().length > 0, 'the unhealthy event').catch(() => {});
      expect(unhealthy()).toHaveLength(1);
      expect(JSON.parse(unhealthy()[0]).cause).toMatch(/manifest\.json does not match/);
    } finally {
      await server.stop();
    }
  });
});
