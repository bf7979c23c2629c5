// Pinning a release on a server of one tree: GET /api/v1/releases lists the tree's release; every
// answer names its release in X-Isoatlas-Release; `?release=` with that name answers the same, its
// links carrying the release, with another name a 404 that says where releases are listed. (Pinning in a store of several releases is
// tested against S3 in publish.test.ts.)
import { describe, expect, inject, it } from 'vitest';
import { createHandler } from '../edge/handler.js';
import { LocalOrigin } from '../edge/origins/local.js';
import { readManifest } from './helpers/tree.js';
import { validate } from './helpers/schemas.js';
import { withoutRelease } from './helpers/pinned.js';
import { RELEASE_HEADER, routes } from '../edge/contract/routes.js';

const handler = () => createHandler({ origin: new LocalOrigin(inject('fixtureTree')) });
const release = () => readManifest(inject('fixtureTree')).index.release;
const get = (path: string) => handler()(new Request(`http://atlas.test${path}`));

describe('releases of a single tree', () => {
  it('GET /api/v1/releases lists the one release, current, with no publishing facts', async () => {
    const r = await get('/api/v1/releases');
    expect(r.status).toBe(200);
    const body = await r.json();
    expect(validate('ReleaseList', body)).toEqual([]);
    expect(body).toEqual({
      current: release(),
      releases: [{ release: release(), current: true, published_at: null, manifest_sha256: null }],
    });
    expect(r.headers.get(RELEASE_HEADER)).toBe(release());
  });

  it('every route takes ?release=: its own name answers the same body with the release in its links, another name a 404 pointing to /releases', async () => {
    const h = handler();
    const plain = await h(new Request('http://atlas.test/api/v1/genes/PRR5'));
    const pinned = await h(new Request(`http://atlas.test/api/v1/genes/PRR5?release=${release()}`));
    expect(pinned.status).toBe(200);
    const text = await pinned.text();
    expect(text).toContain(`?release=${release()}"`);
    expect(withoutRelease(text, release())).toBe(await plain.text());
    expect(pinned.headers.get(RELEASE_HEADER)).toBe(release());
    const other = await h(new Request('http://atlas.test/api/v1/genes/PRR5?release=1999.01'));
    expect(other.status).toBe(404);
    expect(other.headers.get('content-type')).toMatch(/^application\/problem\+json/);
    expect(((await other.json()) as { detail: string }).detail).toMatch(
      /no release "1999\.01" in this atlas; GET \/api\/v1\/releases lists them/,
    );
    for (const route of routes)
      expect(
        route.stringParams.map((p) => p.name),
        route.id,
      ).toEqual(expect.arrayContaining(['release', 'default_release']));
  });

  it('names the release on every answer from a release, errors of the route included', async () => {
    for (const path of [
      '/api/v1/',
      '/api/v1/search?query=prr',
      '/api/v1/genes/NO-SUCH-GENE',
      '/api/v1/isoforms/ENST00000000000',
    ]) {
      expect((await get(path)).headers.get(RELEASE_HEADER), path).toBe(release());
    }
  });
});
