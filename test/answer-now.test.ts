// The handler answers a request at once (no promise) when it can: the target was answered before with
// a file as it is (and the file is still in memory) or with an answer made from files (a sliced page,
// a shortened list: kept by bytes), the release was pinned lately, and the request is
// counted in memory. These tests hold it to the same answers as the path that waits, to counting
// every request exactly once, and to never answering from a release that is no longer current.
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createHandler, directHandlerOf, type DirectHandler } from '../edge/handler.js';
import { LocalOrigin, LocalTreeOrigin } from '../edge/origins/local.js';
import { AccessControl } from '../edge/access/control.js';
import { resolveAccessConfig } from '../edge/access/config.js';
import { MemoryQuotaStore } from '../edge/access/stores/memory.js';
import { EdgeResponse } from '../edge/responses.js';
import type { EdgeRequest } from '../edge/request.js';
import type { PinnedRelease, VersionedOrigin } from '../edge/origin.js';
import { treePaths } from '../edge/contract/tree.js';
import { rewriteTree } from './helpers/tree.js';

const API = 'http://localhost/api/v1';
const NOW = Date.UTC(2026, 10, 22, 12, 0, 30);
const PER_MINUTE = 1_000;

function request(path: string, headers: Record<string, string> = {}, method = 'GET'): EdgeRequest {
  const lower = new Map(Object.entries(headers).map(([k, v]) => [k.toLowerCase(), v]));
  return { method, url: `${API}${path}`, headers: { get: (name) => lower.get(name.toLowerCase()) ?? null } };
}

function direct(opts: { origin?: VersionedOrigin; perMinute?: number; mode?: 'open' | 'key-required'; madeAnswerBytes?: number } = {}): DirectHandler {
  const config =
    opts.mode === 'key-required'
      ? resolveAccessConfig({ key_required: { per_ip: { per_minute: opts.perMinute ?? PER_MINUTE } } }, 'key-required')
      : resolveAccessConfig({ open: { anonymous_per_ip: { per_minute: opts.perMinute ?? PER_MINUTE } } }, 'open');
  const access = new AccessControl({ config, store: new MemoryQuotaStore(() => NOW), keys: null, secret: null, now: () => NOW });
  return directHandlerOf(createHandler({ origin: opts.origin ?? new LocalTreeOrigin(inject('demoTree')), serveStructureFiles: true, access, madeAnswerBytes: opts.madeAnswerBytes }))!;
}

/** Calls the handler, saying whether the answer came at once. */
async function call(handler: DirectHandler, req: EdgeRequest): Promise<{ now: boolean; response: EdgeResponse }> {
  const answered = handler(req, { clientIp: '192.0.2.1' });
  return { now: answered instanceof EdgeResponse, response: await answered };
}

const withoutRemaining = (r: EdgeResponse) => Object.entries(r.headers).filter(([name]) => name !== 'ratelimit-remaining');

describe('answers at once', () => {
  const fileTargets = [
    '',
    '/release',
    '/openapi.json',
    '/genes/PRR5',
    '/genes/ENSG00000186654',
    '/genes/PRR5/isoforms',
    '/genes/PRR5/isoforms?limit=100&offset=0',
    '/isoforms/PRR5-201',
    '/isoforms/ENST00000006251.11',
    '/isoforms/prr5-201/domains',
    '/isoforms/PRR5-201/neoantigens',
    // Answers made from files: kept as made, not read again.
    '/genes/PRR5/isoforms?limit=10',
    '/genes/PRR5/isoforms?limit=2&offset=3',
    '/genes/PRR5/isoforms?offset=500',
    '/isoforms/PRR5-201/neoantigens?limit=5',
  ];

  it.each(fileTargets)('a file-backed target asked again (%s), with the answer it gave the first time', async (path) => {
    const handler = direct();
    const first = await call(handler, request(path));
    const again = await call(handler, request(path));
    expect(first.now).toBe(false);
    expect(first.response.status).toBe(200);
    expect(again.now).toBe(true);
    expect(again.response.status).toBe(200);
    expect(withoutRemaining(again.response)).toEqual(withoutRemaining(first.response));
    expect(Buffer.from(again.response.body!).equals(Buffer.from(first.response.body!))).toBe(true);
    expect(Number(again.response.get('ratelimit-remaining'))).toBe(Number(first.response.get('ratelimit-remaining')) - 1);

    // A conditional GET and a HEAD of the same target are answered at once too.
    const etag = first.response.get('etag')!;
    const conditional = await call(handler, request(path, { 'If-None-Match': etag }));
    expect(conditional).toMatchObject({ now: true, response: { status: 304, body: null } });
    expect(conditional.response.get('etag')).toBe(etag);
    const head = await call(handler, request(path, {}, 'HEAD'));
    expect(head).toMatchObject({ now: true, response: { status: 200, body: null } });
    expect(head.response.get('content-length')).toBe(String(first.response.body!.length));
  });

  it('keeps made answers only within their budget: an answer larger than it is made anew each time', async () => {
    const handler = direct({ madeAnswerBytes: 200 });
    for (const path of ['/genes/PRR5/isoforms?limit=10', '/isoforms/PRR5-201/neoantigens?limit=5']) {
      for (let i = 0; i < 3; i++) {
        const { now, response } = await call(handler, request(path));
        expect(now).toBe(false);
        expect(response.status).toBe(200);
      }
    }
  });

  it('the bytes of the file in the tree, whichever name asked for it', async () => {
    const handler = direct();
    const file = readFileSync(join(inject('demoTree'), treePaths.isoform('ENST00000006251.11')));
    for (const path of ['/isoforms/PRR5-201', '/isoforms/ENST00000006251.11', '/isoforms/PRR5-201', '/isoforms/ENST00000006251.11']) {
      const { response } = await call(handler, request(path));
      expect(Buffer.from(response.body!).equals(file)).toBe(true);
    }
  });

  it.each([
    ['a search', '/search?query=PRR5', 200],
    ['an unknown gene', '/genes/NO-SUCH-GENE', 404],
    ['an unknown query parameter', '/genes/PRR5?fields=all', 400],
    ['a structure redirect', '/isoforms/ENST00000215919.3/structure', 307],
  ])('but never %s: it is made anew each time', async (_, path, status) => {
    const handler = direct();
    for (let i = 0; i < 3; i++) {
      const { now, response } = await call(handler, request(path));
      expect(now).toBe(false);
      expect(response.status).toBe(status);
    }
  });
});

describe('counting', () => {
  it('counts every request once, whether answered at once or not', async () => {
    const handler = direct({ perMinute: 10 });
    const paths = ['/genes/PRR5', '/genes/PRR5', '/search?query=PRR5', '/isoforms/PRR5-201', '/isoforms/PRR5-201', '/genes/NO-SUCH-GENE', '/genes/PRR5'];
    const remaining: number[] = [];
    for (const path of paths) remaining.push(Number((await call(handler, request(path))).response.get('ratelimit-remaining')));
    expect(remaining).toEqual([9, 8, 7, 6, 5, 4, 3]);
  });

  it('refuses at once once the window is used up, with Retry-After', async () => {
    const handler = direct({ perMinute: 2 });
    await call(handler, request('/genes/PRR5'));
    await call(handler, request('/genes/PRR5'));
    const refused = await call(handler, request('/genes/PRR5'));
    expect(refused.now).toBe(true);
    expect(refused.response.status).toBe(429);
    expect(refused.response.get('retry-after')).toBe('30');
  });

  it('waits for a request that carries a key (the key must be checked), counting it once', async () => {
    const handler = direct({ perMinute: 5 });
    await call(handler, request('/genes/PRR5'));
    const keyed = await call(handler, request('/genes/PRR5', { Authorization: 'Bearer isoatlas_nope_nope' }));
    expect(keyed.now).toBe(false);
    expect(keyed.response.status).toBe(401);
    // The refused key was not charged to the address: 5 − 2 = 3 left after the next request.
    expect((await call(handler, request('/genes/PRR5'))).response.get('ratelimit-remaining')).toBe('3');
  });

  it('asks for a key at once where one is required, counting the address', async () => {
    const handler = direct({ mode: 'key-required', perMinute: 3 });
    const statuses: number[] = [];
    for (let i = 0; i < 4; i++) {
      const { now, response } = await call(handler, request('/genes/PRR5'));
      expect(now).toBe(true);
      statuses.push(response.status);
    }
    expect(statuses).toEqual([401, 401, 401, 429]);
  });
});

describe('releases', () => {
  let dir: string;
  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), 'isoatlas-answer-now-'));
    const r = spawnSync('cp', ['-al', inject('demoTree'), join(dir, 'next')]);
    expect(r.status, String(r.stderr)).toBe(0);
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  /** A handler over two releases, the demo tree and its changed copy, pinned to the first until told. */
  function twoReleases(): { handler: DirectHandler; switchToNext: () => void } {
    const releases: PinnedRelease[] = [
      { release: 'a', origin: new LocalOrigin(inject('demoTree')), publicPath: (p) => p },
      { release: 'b', origin: new LocalOrigin(join(dir, 'next')), publicPath: (p) => p },
    ];
    let current = releases[0];
    const origin: VersionedOrigin = { description: 'two releases', pin: async () => current, pinnedNow: () => current };
    return { handler: direct({ origin }), switchToNext: () => (current = releases[1]) };
  }

  it('answers from the release pinned now, never from a file remembered under the one before', async () => {
    const path = treePaths.gene('ENSG00000186654');
    const changed = JSON.stringify({ ...JSON.parse(readFileSync(join(inject('demoTree'), path), 'utf8')), biotype: 'next release' });
    await rewriteTree(join(dir, 'next'), { [path]: changed });
    const { handler, switchToNext } = twoReleases();
    const text = (r: EdgeResponse) => Buffer.from(r.body!).toString('utf8');

    await call(handler, request('/genes/PRR5'));
    const before = await call(handler, request('/genes/PRR5'));
    expect(before.now).toBe(true);
    expect(JSON.parse(text(before.response)).biotype).not.toBe('next release');

    switchToNext();
    const after = await call(handler, request('/genes/PRR5'));
    expect(after.now).toBe(false); // the new release has answered nothing yet
    expect(text(after.response)).toBe(changed);
    const again = await call(handler, request('/genes/PRR5'));
    expect(again.now).toBe(true);
    expect(text(again.response)).toBe(changed);
  });

  it('keeps answers made from files per release too', async () => {
    const path = treePaths.genePage('ENSG00000186654', 0);
    const page = JSON.parse(readFileSync(join(inject('demoTree'), path), 'utf8'));
    await rewriteTree(join(dir, 'next'), { [path]: JSON.stringify({ ...page, symbol: 'NEXT5' }) });
    const { handler, switchToNext } = twoReleases();
    const symbol = (r: EdgeResponse) => JSON.parse(Buffer.from(r.body!).toString('utf8')).symbol;

    await call(handler, request('/genes/PRR5/isoforms?limit=1'));
    const before = await call(handler, request('/genes/PRR5/isoforms?limit=1'));
    expect(before.now).toBe(true);
    expect(symbol(before.response)).toBe('PRR5');

    switchToNext();
    const after = await call(handler, request('/genes/PRR5/isoforms?limit=1'));
    expect(after.now).toBe(false);
    expect(symbol(after.response)).toBe('NEXT5');
    expect(after.response.get('etag')).not.toBe(before.response.get('etag'));
  });
});

describe('EdgeResponse sharing its fields', () => {
  it('copies a shared list before changing one of its fields, and adds its own after it', () => {
    const shared = Object.freeze(['etag', '"x"', 'cache-control', 'public']) as readonly string[];
    const a = EdgeResponse.sharing(200, shared, null);
    a.set('ratelimit-limit', '10');
    expect(a.sharedFields).toBe(shared);
    expect(a.fields).toEqual(['etag', '"x"', 'cache-control', 'public', 'ratelimit-limit', '10']);
    a.set('cache-control', 'no-store');
    expect(shared).toEqual(['etag', '"x"', 'cache-control', 'public']);
    expect(a.get('cache-control')).toBe('no-store');
    expect(a.headers).toEqual({ etag: '"x"', 'cache-control': 'no-store', 'ratelimit-limit': '10' });
  });
});
