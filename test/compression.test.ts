// Compression, from `isoatlas serve` and from its nginx front: each Accept-Encoding gets the coding it
// should, the body decodes to exactly the identity bytes (the manifest's sha256), every representation
// has its own ETag and a 304 for it, Vary names Accept-Encoding, HEAD carries GET's headers, and small
// bodies and problems stay identity. Raw node:http requests: fetch would send its own Accept-Encoding
// and decode behind the test's back.
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { createHash } from 'node:crypto';
import http from 'node:http';
import zlib from 'node:zlib';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { negotiate } from '../edge/compression.js';
import { readManifest } from './helpers/tree.js';
import { startServer, type RunningServer } from './helpers/server.js';
import { startNginxFront, type RunningFront } from './helpers/nginx-front.js';

const tree = () => inject('fixtureTree');
const sha256 = (bytes: Uint8Array) => createHash('sha256').update(bytes).digest('hex');

interface Reply {
  status: number;
  headers: http.IncomingHttpHeaders;
  body: Buffer;
}

function request(base: string, path: string, headers: Record<string, string> = {}, method = 'GET'): Promise<Reply> {
  const { hostname, port } = new URL(base);
  return new Promise((resolve, reject) => {
    const req = http.request(
      { host: hostname, port, path, method, headers: { Connection: 'close', ...headers } },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => resolve({ status: res.statusCode!, headers: res.headers, body: Buffer.concat(chunks) }));
      },
    );
    req.on('error', reject);
    req.end();
  });
}

function decode(reply: Reply): Buffer {
  const coding = reply.headers['content-encoding'];
  if (coding === 'br') return zlib.brotliDecompressSync(reply.body);
  if (coding === 'gzip') return zlib.gunzipSync(reply.body);
  expect(coding).toBeUndefined();
  return reply.body;
}

/** Accept-Encoding (undefined: none sent) → the coding expected (null: identity). */
const CASES: [string | undefined, 'br' | 'gzip' | null][] = [
  ['br', 'br'],
  ['gzip', 'gzip'],
  ['gzip;q=0, br', 'br'],
  ['br;q=0, gzip', 'gzip'],
  ['br;q=0.5, gzip;q=0.8', 'gzip'],
  ['gzip, deflate, br, zstd', 'br'],
  ['identity', null],
  ['gzip;q=0, br;q=0', null],
  [undefined, null],
  ['*', 'br'],
];

/** The ETag each representation must carry, written out rather than derived. */
const tagOf = (sha: string, coding: 'br' | 'gzip' | null) => (coding === null ? `"${sha}"` : `W/"${sha}-${coding}"`);

/** Headers a HEAD must share with its GET. */
const SHARED = [
  'content-type',
  'content-length',
  'content-encoding',
  'etag',
  'vary',
  'cache-control',
  'x-isoatlas-release',
];

describe('negotiate', () => {
  it('picks the accepted coding with the highest q-value, brotli on a tie, identity when none is', () => {
    for (const [accept, coding] of CASES) expect(negotiate(accept ?? null), String(accept)).toBe(coding);
    expect(negotiate('x-gzip')).toBe('gzip');
    expect(negotiate('GZIP')).toBe('gzip');
    expect(negotiate('br;q=0, *')).toBe('gzip');
    expect(negotiate('*;q=0')).toBe(null);
    expect(negotiate('deflate, compress')).toBe(null);
    expect(negotiate('')).toBe(null);
  });
});

for (const via of ['server', 'nginx'] as const) {
  describe(`compression through the ${via}`, () => {
    let target: RunningServer | RunningFront;
    const manifest = new Map<string, { sha256: string; size: number }>();
    /** Resources, with the tree file behind each (null: computed, like search). */
    let resources: { name: string; path: string; file: string | null }[];

    beforeAll(async () => {
      for (const e of readManifest(tree()).entries) manifest.set(e.path, e);
      const entries = [...manifest.keys()];
      const structure = entries.find((p) => p.startsWith('structures/') && manifest.get(p)!.size > 4096)!;
      // A first page with no next page: the front answers it from the file.
      const page = entries.find((p) => {
        if (!/^api\/v1\/genes\/[^/]+\/isoforms\/0\.json$/.test(p) || manifest.get(p)!.size < 1024) return false;
        return JSON.parse(readFileSync(join(tree(), p), 'utf8')).next === null;
      })!;
      resources = [
        { name: 'gene record', path: '/api/v1/genes/ENSG00000186654', file: 'api/v1/genes/ENSG00000186654.json' },
        { name: 'isoform list page', path: `/${page.replace(/\/0\.json$/, '')}`, file: page },
        { name: 'structure file', path: `/${structure}`, file: structure },
        { name: 'search', path: '/api/v1/search?query=PRR5', file: null },
      ];
      target = via === 'nginx' ? await startNginxFront({ dir: tree() }) : await startServer({ dir: tree() });
    });

    afterAll(async () => {
      if (target) expect(await target.stop()).toBe(0);
    });

    it('answers each Accept-Encoding with its coding, decoding to the identity bytes, with an ETag per representation', async () => {
      for (const { name, path, file } of resources) {
        const identity = await request(target.base, path, { 'Accept-Encoding': 'identity' });
        expect(identity.status, name).toBe(200);
        const sha = sha256(identity.body);
        if (file) {
          expect(sha, name).toBe(manifest.get(file)!.sha256);
          expect(identity.body.equals(readFileSync(join(tree(), file))), name).toBe(true);
        }
        for (const [accept, coding] of CASES) {
          const what = `${name} ${path}, Accept-Encoding: ${accept}`;
          const headers: Record<string, string> = accept === undefined ? {} : { 'Accept-Encoding': accept };
          const r = await request(target.base, path, headers);
          expect(r.status, what).toBe(200);
          expect(r.headers['content-encoding'] ?? null, what).toBe(coding);
          expect(decode(r).equals(identity.body), what).toBe(true);
          expect(Number(r.headers['content-length']), what).toBe(r.body.length);
          if (coding !== null) expect(r.body.length, what).toBeLessThan(identity.body.length);
          expect(r.headers.etag, what).toBe(tagOf(sha, coding));
          expect(r.headers.vary, what).toMatch(/(^|, )Accept-Encoding$/);
          expect(r.headers['content-type'], what).toBe(identity.headers['content-type']);

          const head = await request(target.base, path, headers, 'HEAD');
          expect(head.body.length, what).toBe(0);
          for (const h of SHARED) expect(head.headers[h], `HEAD ${what}: ${h}`).toEqual(r.headers[h]);

          // Revalidating this representation: 304, with its ETag and Vary.
          const same = await request(target.base, path, { ...headers, 'If-None-Match': r.headers.etag! });
          expect(same.status, `If-None-Match ${what}`).toBe(304);
          expect(same.body.length).toBe(0);
          expect(same.headers.etag, what).toBe(r.headers.etag);
          expect(same.headers.vary, what).toMatch(/Accept-Encoding/);
          // Another representation's tag is not this one's.
          const other = tagOf(sha, coding === 'br' ? 'gzip' : 'br');
          const changed = await request(target.base, path, { ...headers, 'If-None-Match': other });
          expect(changed.status, `If-None-Match ${other} ${what}`).toBe(200);
          expect(changed.body.equals(r.body), what).toBe(true);
        }
      }
    });

    it('keeps problem answers and small bodies identity', async () => {
      const small = [...manifest.entries()].find(
        ([p, e]) => /^api\/v1\/isoforms\/[^/]+\/(domains|neoantigens|ptm)\.json$/.test(p) && e.size < 256,
      )!;
      expect(small, 'a file under the threshold').toBeDefined();
      const smallPath = `/${small[0].replace(/\.json$/, '')}`;
      for (const accept of ['br', 'gzip', '*']) {
        const problem = await request(target.base, '/api/v1/genes/NO_SUCH_GENE_XYZ', { 'Accept-Encoding': accept });
        expect(problem.status).toBe(404);
        expect(problem.headers['content-type']).toBe('application/problem+json; charset=utf-8');
        expect(problem.headers['content-encoding']).toBeUndefined();
        expect(JSON.parse(problem.body.toString()).status).toBe(404);

        const r = await request(target.base, smallPath, { 'Accept-Encoding': accept });
        expect(r.status, smallPath).toBe(200);
        expect(r.headers['content-encoding'], smallPath).toBeUndefined();
        expect(r.headers.etag).toBe(tagOf(small[1].sha256, null));
        expect(r.body.equals(readFileSync(join(tree(), small[0])))).toBe(true);
      }
    });

    if (via === 'nginx') {
      it('answers compressed requests for files itself, weighed ones too (the server weighs them at admission)', async () => {
        const front = target as RunningFront;
        const gene = resources[0].path;
        const count = (logs: string) =>
          logs.split('\n').filter((l) => l.includes(`"path":"${gene}"`) && l.includes('"method":"GET"')).length;
        for (const [accept, coding] of [
          ['br', 'br'],
          ['gzip', 'gzip'],
          ['gzip;q=0, br', 'br'],
          ['br;q=0.5, gzip', 'gzip'],
        ] as const) {
          const [frontBefore, serverBefore] = [count(front.frontLog()), count(front.server.logs())];
          const r = await request(front.base, gene, { 'Accept-Encoding': accept });
          expect(r.status).toBe(200);
          expect(r.headers['content-encoding'], accept).toBe(coding);
          // Log lines are written once the answer has gone: nginx's, as it answered.
          await front
            .untilFrontLogged((log) => count(log) > frontBefore, `nginx's log line of ${accept}`)
            .catch(() => {});
          expect(count(front.frontLog()) - frontBefore, accept).toBe(1);
          expect(count(front.server.logs()) - serverBefore, accept).toBe(0);
        }
      });
    }
  });
}
