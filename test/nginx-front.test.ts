// The nginx front (`isoatlas nginx-config`, Debian's nginx, a real `isoatlas serve` behind it): what
// nginx answers from files is what the server would answer, header for header; limits and keys are
// still the server's, counted per client (the client address forwarded and trusted only from the
// front); a stale config or a server that is down never yields a wrong answer. The whole v1 contract
// also runs through the front (contract-nginx.test.ts).
import { beforeAll, describe, expect, inject, it } from 'vitest';
import { spawn } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import type { AddressInfo } from 'node:net';
import http from 'node:http';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { frontRequests, type RunningFront } from './helpers/nginx-front.js';
import { frontsOfSuite } from './helpers/nginx-suite.js';
import { rawRequest as request } from './helpers/raw-request.js';
import { runCli, type RunResult } from './helpers/run.js';
import { issueTestKey } from './helpers/test-key.js';

const ROOT = join(__dirname, '..');
const tree = () => inject('fixtureTree');
const { front, temp } = frontsOfSuite();

/** The CLI while this process keeps answering requests (the mirror's source runs here). */
function cliAsync(args: string[]): Promise<{ status: number | null; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [join(ROOT, 'bin/isoatlas.mjs'), ...args], {
      cwd: ROOT,
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    let stderr = '';
    child.stderr.setEncoding('utf8').on('data', (c: string) => (stderr += c));
    child.once('error', reject);
    child.once('close', (status) => resolve({ status, stderr }));
  });
}

function cli(args: string[]): Promise<RunResult> {
  return runCli(args, { cwd: ROOT });
}

/** Headers that belong to one message, or to who sent it, not to the answer. */
const PER_MESSAGE = ['date', 'connection', 'keep-alive', 'server', 'ratelimit-remaining', 'ratelimit-reset'];
const comparable = (h: http.IncomingHttpHeaders) =>
  Object.fromEntries(Object.entries(h).filter(([k]) => !PER_MESSAGE.includes(k)));

/** Waits, when less than `ms` is left of the current minute, for the next one to begin (limits
 * count in fixed minute windows). */
async function roomInMinute(ms: number) {
  const left = 60_000 - (Date.now() % 60_000);
  if (left < ms) await new Promise((ok) => setTimeout(ok, left + 100));
}

/** The log line of a request, once it has been written (`until`: the front's log or the server's). */
async function logLine(
  until: (test: (text: string) => boolean, what: string) => Promise<string>,
  pattern: RegExp,
): Promise<string | undefined> {
  const has = (text: string) => text.split('\n').find((l) => pattern.test(l));
  return has(await until((text) => has(text) !== undefined, `a log line matching ${pattern}`).catch(() => ''));
}

describe('nginx front over the fixture tree', () => {
  let f: RunningFront;
  let map: Map<string, { kind: string; sha256: string }>;
  beforeAll(async () => {
    f = await front({ dir: tree() });
    map = await frontRequests(tree());
  });

  it('holds no list of files: its size does not grow with the release', () => {
    // The bound means something: the tree's request paths alone would not fit in it.
    expect([...map.keys()].join('\n').length).toBeGreaterThan(64 * 1024);
    expect(f.config.length).toBeLessThan(64 * 1024);
    const [gene] = [...map.keys()].filter((k) => /^\/api\/v1\/genes\/[^/]+$/.test(k));
    expect(f.config).not.toContain(gene);
  });

  it('answers requests of files by id or name itself, with the body and headers the server gives', async () => {
    const sample = [...map.keys()].filter((_, i) => i % 997 === 0);
    for (const prefix of ['/api/v1/', '/api/v1/release', '/api/v1/openapi.json', '/structures/'])
      sample.push([...map.keys()].find((k) => k.startsWith(prefix))!);
    // Names and the trailing slash the router forgives: the server resolves them to the same files.
    sample.push('/api/v1/genes/PRR5', '/api/v1/isoforms/PRR5-201', '/api/v1/isoforms/PRR5-201/domains/');
    // Each once: the first mapped path is also the first under /api/v1/, and a second round would
    // find two server lines for it.
    for (const uri of new Set(sample)) {
      for (const method of ['GET', 'HEAD']) {
        const viaFront = await request(f.base, uri, { method });
        const direct = await request(f.server.base, uri, { method });
        expect(viaFront.status, uri).toBe(200);
        expect(viaFront.body.equals(direct.body), uri).toBe(true);
        expect(comparable(viaFront.headers), `${method} ${uri}`).toEqual(comparable(direct.headers));
        // Counted by nginx (arrangement A, anonymous: nginx-counted.test.ts), which cannot say how many are left.
        expect(viaFront.headers['ratelimit-remaining']).toBeUndefined();
        expect(viaFront.headers['ratelimit-limit']).toBe('900');
      }
      // nginx logged it, in the server's log shape; the server logged only its direct answers.
      const escaped = uri.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
      const line = await logLine(f.untilFrontLogged, new RegExp(`"method":"GET","path":"${escaped}","status":200,`));
      expect(line, uri).toMatch(
        /^\{"level":"info","time":"[^"]+","client":"127\.0\.0\.1","method":"GET","path":"[^"]+","status":200,"bytes":\d+,"ms":\d+,"release":"[^"]+"\}$/,
      );
      expect(
        await logLine(f.server.untilLogged, new RegExp(`"method":"GET","path":"${escaped}","status":200,`)),
      ).toBeDefined();
      expect(
        f.server
          .logs()
          .split('\n')
          .filter((l) => l.includes(`"path":"${uri}"`) && l.includes('"method":"GET"')),
      ).toHaveLength(1);
      // In each coding the server offers (q-values weighed as it weighs them), as the server sends it.
      for (const coding of ['gzip', 'br', 'br;q=0.5, gzip']) {
        const headers = { 'Accept-Encoding': coding };
        const viaFront = await request(f.base, uri, { headers });
        const direct = await request(f.server.base, uri, { headers });
        expect(viaFront.body.equals(direct.body), `${coding} ${uri}`).toBe(true);
        expect(comparable(viaFront.headers), `${coding} ${uri}`).toEqual(comparable(direct.headers));
      }
    }
  });

  it('passes computed answers, unknown names, queries, conditional requests and other methods to the server', async () => {
    const [gene] = [...map.keys()].filter((k) => /^\/api\/v1\/genes\/[^/]+$/.test(k));
    const etag = `"${map.get(gene)!.sha256}"`;
    const cases: [string, { method?: string; headers?: Record<string, string> }, number][] = [
      ['/api/v1/genes/NO-SUCH-GENE', {}, 404],
      ['/api/v1/isoforms/ENST00000215919.3/structure', {}, 307],
      [`${gene}?release=${JSON.parse((await request(f.base, '/api/v1/release')).body.toString()).release}`, {}, 200],
      [gene, { headers: { 'If-None-Match': etag } }, 304],
      [gene, { headers: { Range: 'bytes=0-9' } }, 200],
      [gene, { method: 'POST' }, 405],
      ['/api/v1/search?query=PRR5', {}, 200],
    ];
    for (const [uri, opts, status] of cases) {
      const viaFront = await request(f.base, uri, opts);
      expect(viaFront.status, uri).toBe(status);
      const escaped = uri.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
      expect(
        await logLine(
          f.server.untilLogged,
          new RegExp(`"method":"${opts.method ?? 'GET'}","path":"${escaped}","status":${status},`),
        ),
        uri,
      ).toBeDefined();
    }
    // A range is not served: the whole file, as the server answers it.
    const ranged = await request(f.base, gene, { headers: { Range: 'bytes=0-9' } });
    expect(ranged.headers.etag).toBe(etag);
  });

  it('trusts the client address only from the front', async () => {
    // Through nginx, whatever the client claims: the address nginx saw.
    await request(f.base, '/api/v1/search?query=forwarded1', {
      from: '127.0.0.2',
      headers: { 'X-Forwarded-For': '203.0.113.9' },
    });
    expect(await logLine(f.server.untilLogged, /query=forwarded1/)).toMatch(/"client":"127\.0\.0\.2"/);
    // Straight to the server from an address it does not trust: the header is ignored.
    await request(f.server.base, '/api/v1/search?query=forwarded2', {
      from: '127.0.0.5',
      headers: { 'X-Forwarded-For': '203.0.113.9' },
    });
    expect(await logLine(f.server.untilLogged, /query=forwarded2/)).toMatch(/"client":"127\.0\.0\.5"/);
    // Nor may anyone else ask for an admission (or a front's path): 404 problems.
    const admission = await request(f.server.base, '/admission', { from: '127.0.0.5' });
    expect(admission.status).toBe(404);
    expect(admission.headers['content-type']).toBe('application/problem+json; charset=utf-8');
    for (const path of ['/.isoatlas/admission', '/admission', '/metrics']) {
      const internal = await request(f.base, path, {
        headers: { 'X-Isoatlas-Front-Manifest': map.get('/api/v1/')!.sha256 },
      });
      expect(internal.status, path).toBe(404);
      expect(internal.headers['content-type']).toBe('application/problem+json; charset=utf-8');
    }
  });

  it('answers what nginx refuses itself as problem+json, and logs it without keys', async () => {
    const key = 'isoatlas_abcd1234_' + 'x'.repeat(43);
    for (const [target, status] of [
      ['/api/v1/../../../etc/passwd', 400],
      [`/api/v1/genes/${'A'.repeat(17_000)}`, 414],
      [`/api/v1/../../../${key}`, 400],
    ] as const) {
      const r = await request(f.base, target);
      expect(r.status, target.slice(0, 40)).toBe(status);
      expect(r.headers['content-type']).toBe('application/problem+json; charset=utf-8');
      expect(r.headers['access-control-allow-origin']).toBe('*');
      const body = JSON.parse(r.body.toString());
      expect(body).toMatchObject({ type: 'about:blank', status });
      expect(body.detail.length).toBeGreaterThan(0);
    }
    const trace = await request(f.base, '/api/v1/release', { method: 'TRACE' });
    expect(trace.status).toBe(405);
    expect(trace.headers.allow).toBe('GET, HEAD, OPTIONS');
    expect(
      await logLine(f.untilFrontLogged, /"path":"\[redacted: shaped like an API key\]","status":400,/),
    ).toBeDefined();
    expect(f.frontLog()).not.toContain(key);
  });
});

describe('limits through the front', () => {
  it('counts files nginx serves and requests the server answers in one budget per client', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'isoatlas-nginx-limits-'));
    temp.push(dir);
    writeFileSync(join(dir, 'access.json'), JSON.stringify({ open: { anonymous_per_ip: { per_minute: 6 } } }));
    const f = await front({
      dir: tree(),
      serverArgs: ['--access-config', join(dir, 'access.json'), '--keys-dir', join(dir, 'keys')],
    });
    const files = [...(await frontRequests(tree())).keys()]
      .filter((k) => k.startsWith('/api/v1/isoforms/'))
      .slice(0, 5);
    await roomInMinute(20_000);
    const a = '127.0.0.2';
    const answers = [];
    for (const uri of files) answers.push(await request(f.base, uri, { from: a }));
    answers.push(await request(f.base, '/api/v1/search?query=PRR5', { from: a }));
    expect(answers.map((r) => r.status)).toEqual([200, 200, 200, 200, 200, 200]);
    // Counted by nginx: the minute's limit, not what is left of it.
    expect(answers.map((r) => r.headers['ratelimit-limit'])).toEqual(['6', '6', '6', '6', '6', '6']);
    // Both kinds are now refused for this client, with the server's 429…
    for (const uri of [files[0], '/api/v1/genes/PRR5']) {
      const refused = await request(f.base, uri, { from: a });
      expect(refused.status, uri).toBe(429);
      expect(refused.headers['content-type']).toBe('application/problem+json; charset=utf-8');
      expect(Number(refused.headers['retry-after'])).toBeGreaterThan(0);
      expect(JSON.parse(refused.body.toString()).detail).toContain('6 requests per minute from one IP address');
    }
    // …while another client has its own budget.
    const b = await request(f.base, files[0], { from: '127.0.0.3' });
    expect(b.status).toBe(200);
  });

  it('checks keys for files nginx serves (key required), and keeps keyed answers private', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'isoatlas-nginx-keys-'));
    temp.push(dir);
    const keysDir = join(dir, 'keys');
    const { key } = await issueTestKey(keysDir, 'tests of the nginx front');
    const f = await front({ dir: tree(), serverArgs: ['--access', 'key-required', '--keys-dir', keysDir] });
    const [uri] = [...(await frontRequests(tree())).keys()].filter((k) => k.startsWith('/api/v1/genes/'));
    const auth = { Authorization: `Bearer ${key}` };
    const viaFront = await request(f.base, uri, { headers: auth });
    const direct = await request(f.server.base, uri, { headers: auth });
    expect(viaFront.status).toBe(200);
    expect(viaFront.headers['cache-control']).toMatch(/^private/);
    expect(viaFront.headers.vary).toBe('Authorization, Accept-Encoding');
    expect(comparable(viaFront.headers)).toEqual(comparable(direct.headers));
    expect(await logLine(f.untilFrontLogged, new RegExp(`"path":"${uri}","status":200,`))).toBeDefined();
    for (const headers of [
      {} as Record<string, string>,
      { Authorization: `Bearer ${key.slice(0, -1)}${key.endsWith('A') ? 'B' : 'A'}` },
    ]) {
      const refused = await request(f.base, uri, { headers });
      expect(refused.status).toBe(401);
      expect(refused.headers['www-authenticate']).toMatch(/^Bearer realm="isoatlas"/);
      expect(refused.headers['content-type']).toBe('application/problem+json; charset=utf-8');
    }
    expect(f.frontLog()).not.toContain(key);
    expect(f.server.logs()).not.toContain(key);
  });
});

describe('when the front cannot answer from files', () => {
  it('passes everything to the server while its config is of another release', async () => {
    const f = await front({
      dir: tree(),
      editConfig: (text) => text.replace(/(X-Isoatlas-Front-Manifest ")[0-9a-f]{64}/g, `$1${'0'.repeat(64)}`),
    });
    const [uri] = [...(await frontRequests(tree())).keys()].filter((k) => k.startsWith('/api/v1/isoforms/'));
    const viaFront = await request(f.base, uri);
    const direct = await request(f.server.base, uri);
    expect(viaFront.status).toBe(200);
    expect(viaFront.body.equals(direct.body)).toBe(true);
    // Counted once, by nginx: the server's own count of this client starts with the direct request.
    expect(viaFront.headers['ratelimit-remaining']).toBeUndefined();
    expect(direct.headers['ratelimit-remaining']).toBe('899');
    expect(
      await logLine(f.server.untilLogged, new RegExp(`"path":"${uri.replace(/\./g, '\\.')}","status":200,`)),
    ).toBeDefined();
    expect(f.frontLog()).not.toContain(uri);
  });

  it('answers 502 problem+json while the server is down', async () => {
    const f = await front({ dir: tree() });
    const [uri] = [...(await frontRequests(tree())).keys()].filter((k) => k.startsWith('/api/v1/genes/'));
    expect(await f.server.stop()).toBe(0);
    for (const path of [uri, '/api/v1/search?query=PRR5']) {
      const r = await request(f.base, path);
      expect(r.status, path).toBe(502);
      expect(r.headers['content-type']).toBe('application/problem+json; charset=utf-8');
      expect(r.headers['retry-after']).toBe('5');
      expect(JSON.parse(r.body.toString()).detail).toContain('did not answer');
    }
  });
});

describe('nginx front over a mirror', () => {
  it('serves a store by sha256 (objects/…), structures at their release path', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'isoatlas-nginx-mirror-'));
    temp.push(dir);
    // The tree as a mirror's source: its files over HTTP.
    const files = http.createServer((req, res) => {
      const path = join(tree(), decodeURIComponent(new URL(req.url!, 'http://x').pathname));
      if (!path.startsWith(tree())) return void res.writeHead(404).end();
      readFile(path).then(
        (body) => res.writeHead(200).end(body),
        () => res.writeHead(404).end(),
      );
    });
    await new Promise<void>((ok) => files.listen(0, '127.0.0.1', ok));
    const synced = await cliAsync([
      'mirror',
      '--from',
      `http://127.0.0.1:${(files.address() as AddressInfo).port}/`,
      '--to',
      join(dir, 'mirror'),
    ]);
    files.close();
    expect(synced.status, synced.stderr).toBe(0);
    // The mirror holds the tree's files: the copies nginx-config wrote for the tree are the mirror's too.
    const f = await front({ dir: join(dir, 'mirror'), compressedDir: `${tree()}.compressed` });
    const map = await frontRequests(join(dir, 'mirror'));
    const structure = [...map.keys()].find((k) => /^\/releases\/[^/]+\/structures\/[^/]+\.cif$/.test(k));
    const gene = [...map.keys()].find((k) => k.startsWith('/api/v1/genes/'));
    for (const uri of [structure!, gene!]) {
      const viaFront = await request(f.base, uri);
      const direct = await request(f.server.base, uri);
      expect(viaFront.status, uri).toBe(200);
      expect(viaFront.body.equals(direct.body)).toBe(true);
      expect(comparable(viaFront.headers)).toEqual(comparable(direct.headers));
      expect(
        await logLine(f.untilFrontLogged, new RegExp(`"path":"${uri.replace(/\./g, '\\.')}","status":200,`)),
        uri,
      ).toBeDefined();
    }
    // The structure redirect points where nginx serves the file.
    const id = /structures\/(.+)\.cif$/.exec(structure!)![1];
    const redirect = await request(f.base, `/api/v1/isoforms/${id}/structure`);
    expect(redirect.status).toBe(307);
    expect(redirect.headers.location).toBe(structure);
  });
});

describe('isoatlas nginx-config', () => {
  it('refuses what is not a tree, values that would break the config, and files it did not write', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'isoatlas-nginx-cli-'));
    temp.push(dir);
    const notTree = await cli(['nginx-config', '--dir', dir]);
    expect(notTree.status).toBe(3);
    expect(notTree.stderr).toContain('neither a rendered isoatlas tree');
    const dollar = join(dir, 'a$b');
    mkdirSync(dollar);
    const unnameable = await cli(['nginx-config', '--dir', dollar]);
    expect(unnameable.status).toBe(3);
    expect(unnameable.stderr).toContain('nginx cannot name a directory whose path holds $');
    const injected = await cli(['nginx-config', '--dir', tree(), '--listen', '80; include /etc/passwd']);
    expect(injected.status).toBe(2);
    expect(injected.stderr).toContain('--listen');
    const foreign = join(dir, 'other.conf');
    writeFileSync(foreign, 'server { listen 80; }\n');
    const refused = await cli(['nginx-config', '--dir', tree(), '--out', foreign]);
    expect(refused.status).toBe(3);
    expect(refused.stderr).toContain('was not written by `isoatlas nginx-config`');
    const nowhere = await cli(['nginx-config', '--dir', tree(), '--out', join(dir, 'no', 'such', 'front.conf')]);
    expect([nowhere.status, nowhere.stderr]).toEqual([2, expect.stringContaining('does not exist: create it first')]);
    // A --compressed-dir it did not make (here shaped like a mirror's objects/) is neither written nor pruned.
    const objects = join(dir, 'objects');
    mkdirSync(join(objects, 'ab'), { recursive: true });
    const object = join(objects, 'ab', `${'c'.repeat(62)}`);
    writeFileSync(object, 'held by a mirror');
    const notOurs = await cli(['nginx-config', '--dir', tree(), '--compressed-dir', objects]);
    expect(notOurs.status).toBe(3);
    expect(notOurs.stderr).toContain('did not write');
    expect(readdirSync(objects).sort()).toEqual(['ab']);
    expect(readFileSync(object, 'utf8')).toBe('held by a mirror');
    const ours = join(dir, 'isoatlas.conf');
    for (let i = 0; i < 2; i++) {
      const written = await cli(['nginx-config', '--dir', tree(), '--out', ours]);
      expect(written.status, written.stderr).toBe(0);
      expect(written.stderr).toMatch(/^nginx front for release \S+: \d+ files nginx may answer from/m);
    }
  });
});
