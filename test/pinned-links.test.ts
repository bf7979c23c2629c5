// Pinned answers stay pinned: every link of an answer to a request that named `release` carries that
// release (bodies, Link headers, problems), while the files stay release-free. A store of two
// releases is served, the newer one current: the demo tree, and a copy of it under another name in
// which one gene's isoform list and record changed. A client pinned to the older release follows
// links and sees only it; the CDN (its gate's source in front of the Lambda@Edge adapter) answers
// every viewer request with what the handler alone answers.
import { beforeAll, describe, expect, inject, it } from 'vitest';
import { createHash } from 'node:crypto';
import { mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { createHandler, type Handler } from '../edge/handler.js';
import { LocalOrigin } from '../edge/origins/local.js';
import type { Origin, PinnedRelease, VersionedOrigin } from '../edge/origin.js';
import { createLambdaEdgeHandler } from '../edge/adapters/lambda-edge.js';
import { withCompression } from '../edge/adapters/compress.js';
import { keyGateCode, keyGateSettings } from '../edge/cloudfront/key-gate.js';
import { CURRENT_RELEASE_ENTRY } from '../edge/cloudfront/kvs-layout.js';
import { DEFAULT_RELEASE_PARAM, RELEASE_HEADER, RELEASE_PARAM } from '../edge/contract/routes.js';
import { contentTypeOf, pinLink, treePaths } from '../edge/contract/tree.js';
import { pinHeaders } from '../edge/pinning.js';
import { writeManifest } from '../build/render/manifest.js';
import { loadCloudFrontFunction } from './helpers/cloudfront-function.js';
import { throughCdn } from './helpers/cdn-request.js';
import { readAliases, readManifest } from './helpers/tree.js';
import { validate } from './helpers/schemas.js';
import { withoutRelease } from './helpers/pinned.js';

const NEWER = '2099.01-newer';
const GENE = 'ENSG00000099917'; // MED15: the demo gene with the most isoforms
let older: string;
let handler: Handler;

const tree = () => inject('fixtureTree');
const read = (root: string, path: string) => readFileSync(join(root, path), 'utf8');

/** The demo tree under another release name, with GENE's isoforms in reverse order and its record
 * changed: the changed files and a manifest in `dir`, everything else read from the demo tree. */
async function newerRelease(dir: string): Promise<Origin> {
  const page = JSON.parse(read(tree(), treePaths.geneIsoforms(GENE, 0)));
  page.items.reverse();
  const gene = JSON.parse(read(tree(), treePaths.gene(GENE)));
  gene.name = `changed in ${NEWER}`;
  const release = JSON.parse(read(tree(), treePaths.release));
  release.release = NEWER;
  const changed: Record<string, string> = {
    [treePaths.geneIsoforms(GENE, 0)]: JSON.stringify(page),
    [treePaths.gene(GENE)]: JSON.stringify(gene),
    [treePaths.release]: JSON.stringify(release),
  };
  const entries = readManifest(tree()).entries.map((e) => {
    const body = changed[e.path];
    return body === undefined
      ? e
      : {
          path: e.path,
          size: Buffer.byteLength(body),
          sha256: createHash('sha256').update(body).digest('hex'),
          content_type: contentTypeOf(e.path),
        };
  });
  for (const [path, body] of Object.entries(changed)) {
    mkdirSync(dirname(join(dir, path)), { recursive: true });
    writeFileSync(join(dir, path), body);
  }
  await writeManifest(dir, NEWER, entries);
  const top = new LocalOrigin(dir);
  const base = new LocalOrigin(tree());
  return { description: `${dir} over the demo tree`, read: async (path) => (await top.read(path)) ?? base.read(path) };
}

/** Two releases, NEWER current, as a published store offers them. */
function store(releases: Record<string, Origin>): VersionedOrigin {
  const pinned = new Map<string, PinnedRelease>(
    Object.entries(releases).map(([release, files]) => [
      release,
      { release, files, publicPath: (p: string) => `releases/${release}/${p}` },
    ]),
  );
  return {
    description: 'two releases',
    pin: async (name = NEWER) => pinned.get(name) ?? null,
    list: async () => ({
      current: NEWER,
      releases: [...pinned.keys()].map((release) => ({
        release,
        published_at: '2026-11-25T00:00:00Z',
        manifest_sha256: '0'.repeat(64),
      })),
    }),
  };
}

beforeAll(async () => {
  older = readManifest(tree()).index.release;
  const newer = await newerRelease(mkdtempSync(join(tmpdir(), 'isoatlas-pinned-')));
  handler = createHandler({ origin: store({ [older]: new LocalOrigin(tree()), [NEWER]: newer }) });
});

const get = (path: string, headers: Record<string, string> = {}, method = 'GET') =>
  handler(new Request(`http://atlas.test${path}`, { method, headers }));
const withParam = (path: string, name: string, value: string) =>
  `${path}${path.includes('?') ? '&' : '?'}${name}=${encodeURIComponent(value)}`;
const pinned = (path: string, release = older) => withParam(path, RELEASE_PARAM, release);

/** Every string of a body under a key that names a link in the contract's bodies (and, in a problem,
 * its `search` and `release` members). */
function linksIn(value: unknown, problem: boolean, key = ''): string[] {
  if (typeof value === 'string')
    return ['next', 'link'].includes(key) ||
      key.startsWith('links.') ||
      (problem && ['search', 'release'].includes(key))
      ? [value]
      : [];
  if (Array.isArray(value)) return value.flatMap((v) => linksIn(v, problem, key));
  if (value && typeof value === 'object')
    return Object.entries(value).flatMap(([k, v]) => linksIn(v, problem, key === 'links' ? `links.${k}` : k));
  return [];
}

describe('a pinned client', () => {
  it("following `next` (body and Link header) through a gene's isoforms sees only its release, while the current one has changed", async () => {
    const walk = async (first: string, release: string | null) => {
      const items: string[] = [];
      let path: string | null = first;
      let pages = 0;
      while (path !== null) {
        const r = await get(path);
        expect(r.status, path).toBe(200);
        if (release !== null) expect(r.headers.get(RELEASE_HEADER), path).toBe(release);
        const body = (await r.json()) as {
          next: string | null;
          items: { transcript_id: string; links: { self: string } }[];
        };
        expect(validate('IsoformPage', body)).toEqual([]);
        expect(r.headers.get('link'), path).toBe(body.next === null ? null : `<${body.next}>; rel="next"`);
        items.push(...body.items.map((i) => i.transcript_id));
        path = body.next;
        pages++;
      }
      return { items, pages };
    };
    const listed = (root: string) =>
      (JSON.parse(read(root, treePaths.geneIsoforms(GENE, 0))) as { items: { transcript_id: string }[] }).items.map(
        (i) => i.transcript_id,
      );
    const first = `/api/v1/genes/${GENE}/isoforms?limit=10`;
    const old = await walk(pinned(first), older);
    expect(old.pages).toBeGreaterThan(2);
    expect(old.items).toEqual(listed(tree()));
    // The current release lists them otherwise: a client whose links dropped the release would mix them.
    const current = await walk(first, null);
    expect(current.items).toEqual([...listed(tree())].reverse());
    expect(current.items).not.toEqual(old.items);
  });

  it('gets every link of every kind of answer carrying its release, each answered from it, and otherwise the bytes the release serves', async () => {
    const shared = Object.entries(readAliases(tree()).genes).find(([, ids]) => Array.isArray(ids))![0];
    const paths = [
      '/api/v1/',
      '/api/v1/release',
      `/api/v1/genes/${GENE}`,
      `/api/v1/genes/${GENE}/isoforms`,
      `/api/v1/genes/${GENE}/isoforms?limit=7&offset=3`,
      '/api/v1/isoforms/MED15-201',
      '/api/v1/search?query=med1&limit=5',
      '/api/v1/genes/NO-SUCH-GENE',
      `/api/v1/genes/${encodeURIComponent(shared)}`,
    ];
    const followed = new Set<string>();
    for (const path of paths) {
      const r = await get(pinned(path));
      const text = await r.text();
      const found = linksIn(JSON.parse(text), r.status >= 400);
      expect(found.length, path).toBeGreaterThan(0);
      for (const link of found) {
        expect(new URL(link, 'http://atlas.test').searchParams.get(RELEASE_PARAM), `${path}: ${link}`).toBe(older);
        // Templates (`{symbol}`) are not followed; everything else answers from the pinned release.
        if (!link.includes('{') && !followed.has(link) && followed.size < 40) {
          followed.add(link);
          const next = await get(link);
          expect(next.status, link).toBeLessThan(500);
          // Search's link asks for a query to be added: a 400, refused before any release is read.
          if (next.status !== 400) expect(next.headers.get(RELEASE_HEADER), link).toBe(older);
          else expect(link, link).toMatch(/\/search\?/);
        }
      }
      // Apart from its links, a pinned answer is what the release serves unpinned.
      const plain = await get(withParam(path, DEFAULT_RELEASE_PARAM, older));
      expect(r.status, path).toBe(plain.status);
      expect(withoutRelease(text, older), path).toBe(await plain.text());
    }
  });

  it("is answered with an ETag of its own bytes: not the unpinned body's, a 304 on its own tag only, HEAD alike", async () => {
    const path = `/api/v1/genes/${GENE}`;
    const plain = await get(withParam(path, DEFAULT_RELEASE_PARAM, older));
    const r = await get(pinned(path));
    const bytes = Buffer.from(await r.arrayBuffer());
    const tag = r.headers.get('etag')!;
    expect(tag).toBe(`"${createHash('sha256').update(bytes).digest('hex')}"`);
    expect(tag).not.toBe(plain.headers.get('etag'));
    expect(plain.headers.get('etag')).toBe(
      `"${readManifest(tree()).entries.find((e) => e.path === treePaths.gene(GENE))!.sha256}"`,
    );
    expect((await get(pinned(path), { 'If-None-Match': tag })).status).toBe(304);
    const stale = await get(pinned(path), { 'If-None-Match': plain.headers.get('etag')! });
    expect(stale.status).toBe(200);
    expect(Buffer.from(await stale.arrayBuffer()).equals(bytes)).toBe(true);
    const head = await get(pinned(path), {}, 'HEAD');
    expect(head.status).toBe(200);
    expect(head.headers.get('etag')).toBe(tag);
    expect(head.headers.get('content-length')).toBe(String(bytes.length));
    expect(await head.text()).toBe('');
    // isoatlas serve's compression names the pinned body's representations, and revalidates them.
    const compressed = withCompression(handler, 1 << 20);
    const br = await compressed(
      new Request(`http://atlas.test${pinned(path)}`, { headers: { 'Accept-Encoding': 'br' } }),
    );
    expect(br.headers.get('etag')).toBe(`W/${tag.slice(0, -1)}-br"`);
    expect(
      (
        await compressed(
          new Request(`http://atlas.test${pinned(path)}`, {
            headers: { 'Accept-Encoding': 'br', 'If-None-Match': br.headers.get('etag')! },
          }),
        )
      ).status,
    ).toBe(304);
  });

  it('naming the release under default_release gets the same release with links as the files have them; naming both is a 400', async () => {
    const r = await get(withParam(`/api/v1/genes/${GENE}`, DEFAULT_RELEASE_PARAM, older));
    expect(r.headers.get(RELEASE_HEADER)).toBe(older);
    expect(await r.text()).toBe(read(tree(), treePaths.gene(GENE)));
    for (const path of [`/api/v1/genes/${GENE}`, '/api/v1/docs/docs.js']) {
      const both = await get(withParam(pinned(path), DEFAULT_RELEASE_PARAM, older));
      expect(both.status, path).toBe(400);
      expect(both.headers.get('content-type')).toMatch(/^application\/problem\+json/);
      const body = (await both.json()) as { parameter: string; detail: string };
      expect(validate('Problem', body)).toEqual([]);
      expect(body.parameter).toBe(DEFAULT_RELEASE_PARAM);
      expect(body.detail).toMatch(/not both/);
    }
    expect((await get(withParam('/api/v1/docs/docs.js', DEFAULT_RELEASE_PARAM, '1999.01-none'))).status).toBe(404);
  });

  it('gets Link and Location headers pinned when they point into the API, and others as they are', () => {
    const headers = new Headers({
      Link: '</api/v1/genes/X/isoforms?limit=2&offset=2>; rel="next", <https://example.org/x>; rel="other"',
      Location: '/api/v1/genes/X',
    });
    pinHeaders(headers, 'r 1');
    expect(headers.get('link')).toBe(
      '</api/v1/genes/X/isoforms?limit=2&offset=2&release=r%201>; rel="next", <https://example.org/x>; rel="other"',
    );
    expect(headers.get('location')).toBe('/api/v1/genes/X?release=r%201');
    for (const outside of [
      '/structures/ENST1.cif',
      '/releases/r/structures/ENST1.cif',
      'https://structures.example.org/structures/ENST1.cif',
      '/api/v10/x',
    ])
      expect(pinLink(outside, 'r')).toBe(outside);
  });
});

describe('the CDN and a server answer a viewer request alike', () => {
  it('for pinned and unpinned requests alike: the gate names the current release without it reaching any link', async () => {
    const gate = loadCloudFrontFunction(keyGateCode(keyGateSettings(null)), new Map([[CURRENT_RELEASE_ENTRY, NEWER]]));
    const edge = createLambdaEdgeHandler(handler);
    const targets = [
      `/api/v1/genes/${GENE}`,
      `/api/v1/genes/${GENE}/isoforms?limit=10&offset=20`,
      '/api/v1/search?query=med1&limit=5',
      '/api/v1/genes/NO-SUCH-GENE',
      '/api/v1/',
    ].flatMap((t) => [t, pinned(t), pinned(t, NEWER)]);
    targets.push(
      withParam(pinned('/api/v1/release'), DEFAULT_RELEASE_PARAM, older),
      withParam('/api/v1/release', DEFAULT_RELEASE_PARAM, older),
    );
    for (const target of targets) {
      const url = new URL(target, 'http://atlas.test');
      const { out, answer: cdn, header } = await throughCdn(gate, edge, target);
      expect(out.statusCode, target).toBeUndefined();
      const server = await get(target);
      expect(
        {
          status: Number(cdn!.status),
          body: cdn!.body ?? '',
          etag: header('etag'),
          link: header('link'),
          release: header(RELEASE_HEADER.toLowerCase()),
        },
        target,
      ).toEqual({
        status: server.status,
        body: await server.text(),
        etag: server.headers.get('etag'),
        link: server.headers.get('link'),
        release: server.headers.get(RELEASE_HEADER),
      });
      // The unpinned request was pinned for the cache key, to the current release, and its links still carry none.
      if (!url.searchParams.has(RELEASE_PARAM) && !url.searchParams.has(DEFAULT_RELEASE_PARAM)) {
        expect(out.querystring[DEFAULT_RELEASE_PARAM], target).toEqual({ value: NEWER });
        expect(cdn!.body, target).not.toContain(`${RELEASE_PARAM}=`);
      }
    }
  });
});
